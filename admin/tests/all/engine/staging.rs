//! Pre-staged firing through the engine: the pre-read inserts each trigger's log row, the ring
//! fires that row at its second (trigger time = the scheduled second), a broadcast is staged
//! only as a claim, and a staged job that became a broadcast keeps its row as shard 0; a row
//! fired long after its second is not closed as "stalled" while its `/run` is on its way.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Placement, ring_second};
use jobwheel_admin::protocol::HandleCallbackParam;

use crate::engine::support::{
    Db, FakeExecutor, T0, at_ms, engine_configured, engine_with, group, job, load, logs, wait_for,
};

#[tokio::test]
async fn the_pre_read_stages_the_log_row_and_the_second_fires_it() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, T0 + 3000);
    j.schedule_conf = Some("0/10 * * * * ?".to_owned());
    let id = store.add_job(&j).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(report.fires[0].placement, Placement::Ring(ring_second(T0 + 3000)));
    // Before its second: the row is there, scheduled, with no outcome; nothing was sent.
    let staged = logs(&*store, id).await?;
    assert_eq!(staged.len(), 1);
    assert_eq!((staged[0].trigger_code, staged[0].handle_code), (0, 0));
    assert_eq!(staged[0].trigger_time, Some(at_ms(T0 + 3000)));
    let claims = store.pending_claims(i64::MAX).await?;
    assert_eq!(claims[0].log_id, Some(staged[0].id), "the claim points at its staged row");
    assert!(fake.runs().is_empty());

    // The ring wakes 1.4 s late: the same row fires, still stamped with its second.
    clock.set(T0 + 4400);
    engine.scheduler().drain_ring(ring_second(T0 + 4400));
    engine.triggers().wait_idle().await;
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 1, "no second row");
    assert_eq!((rows[0].id, rows[0].trigger_code), (staged[0].id, 200));
    assert_eq!(rows[0].trigger_time, Some(at_ms(T0 + 3000)));
    let runs = fake.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!((runs[0].1.log_id, runs[0].1.log_date_time), (staged[0].id.0, T0 + 3000));
    assert!(store.pending_claims(i64::MAX).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn broadcasts_are_claimed_bare_and_a_new_broadcast_keeps_its_staged_row() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/", "http://b:9999/"]).await?;
    let mut broadcast = job(g, T0 + 2000);
    broadcast.schedule_conf = Some("0/10 * * * * ?".to_owned());
    broadcast.executor_route_strategy = Some("SHARDING_BROADCAST".into());
    let broadcast = store.add_job(&broadcast).await?;
    let mut becomes = job(g, T0 + 2000);
    becomes.schedule_conf = Some("0/10 * * * * ?".to_owned());
    let becomes = store.add_job(&becomes).await?;

    assert_eq!(engine.scheduler().schedule_cycle(T0).await?.fires.len(), 2);
    // Shards depend on the registry at fire time: a broadcast has no row before its second.
    assert!(logs(&*store, broadcast).await?.is_empty());
    assert_eq!(logs(&*store, becomes).await?.len(), 1);
    // Edited into a broadcast within the 5 s: it fires as one when its second comes.
    let mut edited = load(&*store, becomes).await?;
    edited.executor_route_strategy = Some("SHARDING_BROADCAST".into());
    store.update_job(becomes, &edited).await?;
    let staged = logs(&*store, becomes).await?[0].id;

    clock.set(T0 + 2000);
    engine.scheduler().drain_ring(ring_second(T0 + 2000));
    engine.triggers().wait_idle().await;
    for id in [broadcast, becomes] {
        let rows = logs(&*store, id).await?;
        let shards: Vec<_> = rows.iter().map(|r| r.executor_sharding_param.as_deref()).collect();
        assert_eq!(shards, vec![Some("0/2"), Some("1/2")], "job {id:?}");
        assert!(rows.iter().all(|r| r.trigger_code == 200));
    }
    assert_eq!(logs(&*store, becomes).await?[0].id, staged, "shard 0 fired the staged row");
    assert_eq!(fake.runs().len(), 4);
    assert!(store.pending_claims(i64::MAX).await?.is_empty());
    Ok(())
}

/// Found by the chaos suite (PostgreSQL, a database outage and admin kills): a claim fired 30 s
/// after its second — recovered, or after the outage — keeps its second as trigger time. The
/// lost-job monitor ran while its `/run` was out, took the row with no outcome and a trigger
/// time older than the lost-job timeout for a stalled trigger and failed it, and the executor's
/// real result was then refused as a repeat. The take's own time now counts.
#[tokio::test]
async fn a_late_fire_is_not_closed_as_stalled_while_its_run_is_on_its_way() -> anyhow::Result<()> {
    const A: &str = "http://a:9999/";
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine =
        engine_configured(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default(), |config| {
            config.lost_after = Duration::from_secs(20);
        });
    let g = group(&*store, "app", &[A]).await?;
    let mut j = job(g, T0 + 3000);
    j.schedule_conf = Some("0/10 * * * * ?".to_owned());
    let id = store.add_job(&j).await?;
    engine.scheduler().schedule_cycle(T0).await?;
    let release = fake.hold_runs_at(A);

    // Fired 30 s after its second; the executor has the run and has not answered yet.
    let late = T0 + 33_000;
    clock.set(late);
    engine.scheduler().drain_ring(ring_second(T0 + 3000));
    let held = Arc::clone(&fake);
    wait_for(Duration::from_secs(10), "the late /run", move || {
        let sent = !held.runs().is_empty();
        async move { Ok(sent.then_some(())) }
    })
    .await?;
    assert!(engine.completion().mark_lost_jobs(late + 1000).await?.is_empty(), "its /run is on its way");

    release.notify_one();
    engine.triggers().wait_idle().await;
    let log = logs(&*store, id).await?[0].id;
    let result = HandleCallbackParam {
        log_id: log.0,
        log_date_tim: T0 + 3000,
        handle_code: 200,
        handle_msg: "ok".into(),
        output: None,
        flight: None,
    };
    engine.completion().on_callbacks(vec![result]).await?;
    let row = &logs(&*store, id).await?[0];
    assert_eq!((row.trigger_code, row.handle_code), (200, 200), "the executor's own result stands");
    // Had it really stalled, it would be closed once its take is older than the timeout.
    assert!(engine.completion().mark_lost_jobs(late + 21_000).await?.is_empty(), "it finished");
    Ok(())
}
