//! Pre-staged firing through the engine: the pre-read inserts each trigger's log row, the ring
//! fires that row at its second (trigger time = the scheduled second), a broadcast is staged
//! only as a claim, and a staged job that became a broadcast keeps its row as shard 0.

use std::sync::Arc;

use jobwheel_admin::alarm::Alarmer;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Placement, ring_second};

use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_with, group, job, load, logs};

#[tokio::test]
async fn the_pre_read_stages_the_log_row_and_the_second_fires_it() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let (fake, clock) = (Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0)));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), Alarmer::default());
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
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), Alarmer::default());
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
