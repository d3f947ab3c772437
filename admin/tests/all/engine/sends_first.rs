//! Sends first (`engine/sending.rs`) through the engine and a real SQLite store: while one
//! trigger is still on its way to `/run`, another trigger's outcome and its callback wait; once
//! the send is out they are written at once (long before the longest wait, set to a minute
//! here, so a trigger that never left the gauge would fail the test), and the gauge is empty.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::protocol::HandleCallbackParam;

use crate::engine::support::{Db, FakeExecutor, T0, engine_configured, group, job, logs, wait_for};

const A: &str = "http://a:9999/";
const HELD: &str = "http://held:9999/";

#[tokio::test]
async fn an_outcome_and_a_callback_wait_for_a_trigger_still_sending() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine = engine_configured(
        store.clone(),
        fake.clone(),
        Arc::new(ManualClock::new(T0)),
        UpstreamAlarms::default(),
        |config| config.max_defer = Duration::from_secs(60),
    );
    let g = group(&*store, "app", &[A, HELD]).await?;
    let mut stopped = job(g, 0);
    stopped.trigger_status = 0;
    let slow = store.add_job(&stopped).await?;
    let quick = store.add_job(&stopped).await?;
    let release = fake.hold_runs_at(HELD);

    // `slow`'s /run goes to an executor that does not answer until released.
    engine.trigger_manual(slow, None, Some(vec![HELD.to_owned()])).await?;
    let sent_to = |address: &'static str| {
        let fake = Arc::clone(&fake);
        move || {
            let seen = fake.runs().iter().any(|(a, _)| a == address);
            async move { Ok(seen.then_some(())) }
        }
    };
    wait_for(Duration::from_secs(10), "the held /run", sent_to(HELD)).await?;
    engine.trigger_manual(quick, None, None).await?;
    wait_for(Duration::from_secs(10), "the quick /run", sent_to(A)).await?;
    assert_eq!(engine.triggers().sending(), 1, "only the held trigger is still being sent");

    // `quick`'s executor answered and ran it; its outcome and result wait for `slow`'s send.
    let quick_log = logs(&*store, quick).await?[0].id;
    let callback = {
        let engine = Arc::clone(&engine);
        let result = HandleCallbackParam {
            log_id: quick_log.0,
            log_date_tim: T0,
            handle_code: 200,
            handle_msg: "ok".into(),
            output: None,
            flight: None,
        };
        tokio::spawn(async move { engine.completion().on_callbacks(vec![result]).await })
    };
    let quick_row = &logs(&*store, quick).await?[0];
    assert_eq!((quick_row.trigger_code, quick_row.handle_code), (0, 0), "nothing written yet");
    assert!(!callback.is_finished(), "the callback is not answered before it is stored");

    release.notify_one();
    wait_for(Duration::from_secs(10), "both outcomes and the result", || {
        let store = store.clone();
        async move {
            let (slow_row, quick_row) = (logs(&*store, slow).await?, logs(&*store, quick).await?);
            let done = slow_row[0].trigger_code == 200
                && quick_row[0].trigger_code == 200
                && quick_row[0].handle_code == 200;
            Ok(done.then_some(()))
        }
    })
    .await?;
    tokio::time::timeout(Duration::from_secs(10), callback).await???;
    engine.triggers().wait_idle().await;
    assert_eq!(engine.triggers().sending(), 0);
    Ok(())
}
