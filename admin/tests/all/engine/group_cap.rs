//! The per-group cap on runs in flight through the trigger path, with a fake executor that
//! accepts every run and sends no callback (so accepted runs stay in flight until the test
//! stores their results).

use std::sync::Arc;

use chrono::Utc;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{TriggerOutcome, TriggerRequest, TriggerType};
use jobwheel_admin::store::{HandleResult, LogId};

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, logs};

const A: &str = "http://a:9999/";
const B: &str = "http://b:9999/";

/// The log id and trigger code of a one-shard trigger.
fn fired(outcome: &TriggerOutcome) -> (LogId, i32) {
    match outcome {
        TriggerOutcome::Fired(shards) => shards[0],
        other => panic!("not fired: {other:?}"),
    }
}

#[tokio::test]
async fn a_capped_group_starts_no_more_runs_than_its_cap() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let capped = group(&*store, "capped-app", &[A, B]).await?;
    let free = group(&*store, "free-app", &[A]).await?;
    store.set_group_cap(capped, Some(2)).await?;
    let mut j = job(capped, 0);
    j.executor_route_strategy = Some("ROUND".into());
    j.trigger_status = 0;
    let (first, second) = (store.add_job(&j).await?, store.add_job(&j).await?);
    let trigger = |id| engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual));

    // Two runs of the group go out (from two jobs, on two executors); the third is refused.
    let (run_one, code) = fired(&trigger(first).await?);
    assert_eq!(code, 200);
    assert_eq!(fired(&trigger(second).await?).1, 200);
    let (refused, code) = fired(&trigger(first).await?);
    assert_eq!(code, 500, "the group has 2 of 2 runs in flight");
    assert_eq!(fake.runs().len(), 2, "the executor never saw the third");
    let row = logs(&*store, first).await?.into_iter().find(|r| r.id == refused).expect("refused log");
    let msg = row.trigger_msg.unwrap_or_default();
    assert!(msg.contains("2 of its 2 runs in flight"), "{msg}");
    assert_eq!(row.executor_address, None);

    // A run that ends frees its place.
    let done = HandleResult { log_id: run_one, handle_time: Utc::now(), handle_code: 200, handle_msg: None };
    store.apply_handle_result(&done).await?;
    assert_eq!(fired(&trigger(first).await?).1, 200);

    // Another group's runs are not counted, and an uncapped group has no limit.
    let mut other = job(free, 0);
    other.trigger_status = 0;
    let other = store.add_job(&other).await?;
    for _ in 0..3 {
        assert_eq!(fired(&trigger(other).await?).1, 200);
    }
    // Removing the cap lets the capped group start more again.
    store.set_group_cap(capped, None).await?;
    assert_eq!(fired(&trigger(second).await?).1, 200);
    Ok(())
}
