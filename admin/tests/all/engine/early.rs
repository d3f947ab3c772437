//! Early hand-over (`engine/ring.rs`): the ring hands a second's triggers to the pools
//! `fire_lead` before it. Every one of them — more than the pool has slots — takes its claim
//! at once, none is sent while the clock is short of the second, and all are sent once it is
//! reached, each with its scheduled second and the staged log row.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::FAST_POOL_FLOOR;

use crate::engine::support::{Db, FakeExecutor, T0, engine_configured, group, job, wait_for};

/// More triggers in one second than the fast pool has slots.
const JOBS: usize = FAST_POOL_FLOOR + 50;

#[tokio::test]
async fn a_second_handed_over_early_takes_its_claims_first_and_sends_at_the_second() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine =
        engine_configured(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default(), |config| {
            config.fast_pool_max = FAST_POOL_FLOOR;
        });
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let second = T0 + 2000;
    for _ in 0..JOBS {
        store.add_job(&job(g, second)).await?;
    }
    let staged = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(staged.fires.len(), JOBS);

    clock.set(second - 100);
    assert_eq!(engine.scheduler().hand_over_ring(second - 100).len(), JOBS, "the next second's slot");
    wait_for(Duration::from_secs(30), "every claim taken ahead of the second", || {
        let store = store.clone();
        async move { Ok(store.pending_claims(i64::MAX).await?.is_empty().then_some(())) }
    })
    .await?;
    assert!(fake.runs().is_empty(), "nothing is sent before the second");
    assert_eq!(engine.triggers().sending(), JOBS, "all wait for the second");

    clock.set(second);
    wait_for(Duration::from_secs(30), "every trigger sent at the second", || {
        let sent = fake.runs().len();
        async move { Ok((sent == JOBS).then_some(())) }
    })
    .await?;
    engine.triggers().wait_idle().await;
    let runs = fake.runs();
    assert!(runs.iter().all(|(_, param)| param.log_date_time == second), "stamped with their second");
    let mut log_ids: Vec<i64> = runs.iter().map(|(_, param)| param.log_id).collect();
    log_ids.sort_unstable();
    log_ids.dedup();
    let staged_logs = staged.fires.len();
    assert_eq!(log_ids.len(), staged_logs, "one staged row per trigger");
    assert_eq!(engine.triggers().sending(), 0);
    Ok(())
}
