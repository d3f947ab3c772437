//! A broadcast trigger's shards are claimed one by one: when the admin firing them stops
//! between shards (here: stuck forever on shard 0's `/run`, which looks the same from the
//! database), another admin's recovery fires exactly the shards that had not gone out, each
//! once, and the first admin finds them taken when it comes back. On every backend, since the
//! split is one transaction of store SQL.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, Recovery, ring_second};
use jobwheel_admin::store::{JobId, Store};
use tokio::sync::Notify;

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, logs, wait_for};

const A: &str = "http://a:9999/";
const B: &str = "http://b:9999/";
const C: &str = "http://c:9999/";

/// Two admins on `db`, a broadcast job over three executors due at T0 + 2 s, and admin A stuck
/// on shard 0's `/run` after claiming and splitting the trigger.
struct Stuck {
    store_a: Arc<dyn Store>,
    store_b: Arc<dyn Store>,
    fake: Arc<FakeExecutor>,
    a: Arc<Engine>,
    b: Arc<Engine>,
    id: JobId,
    /// Lets A's shard 0 return.
    release: Arc<Notify>,
}

async fn stuck_on_shard_zero(db: &Db, misfire_strategy: &str) -> anyhow::Result<Stuck> {
    let store_a = db.connect().await?;
    let store_b = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let a =
        engine_with(store_a.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let b =
        engine_with(store_b.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let g = group(&*store_a, "app", &[A, B, C]).await?;
    let mut broadcast = job(g, T0 + 2000);
    broadcast.schedule_conf = Some("0 0 * * * ?".to_owned());
    broadcast.executor_route_strategy = Some("SHARDING_BROADCAST".into());
    broadcast.misfire_strategy = misfire_strategy.into();
    let id = store_a.add_job(&broadcast).await?;

    let release = fake.hold_runs_at(A);
    assert_eq!(a.scheduler().schedule_cycle(T0).await?.fires.len(), 1);
    a.scheduler().drain_ring(ring_second(T0 + 2000));
    wait_for(Duration::from_secs(10), "shard 0 at its executor", || async {
        Ok((fake.runs().len() == 1).then_some(()))
    })
    .await?;
    Ok(Stuck { store_a, store_b, fake, a, b, id, release })
}

async fn unfired_shards_are_recovered(db: &Db) -> anyhow::Result<()> {
    // A claims the trigger and fires it; shard 0's /run never returns.
    let Stuck { store_a, store_b, fake, a, b, id, release } = stuck_on_shard_zero(db, "DO_NOTHING").await?;
    let pending = store_b.pending_claims(i64::MAX).await?;
    let mut shards: Vec<Option<&str>> = pending.iter().map(|c| c.shard.as_deref()).collect();
    shards.sort_unstable();
    assert_eq!(shards, [Some("1/3"), Some("2/3")], "the unfired shards are claims of their own");

    // B recovers A's unfired shards: exactly shards 1 and 2, each on its own executor.
    let done = b.scheduler().recovery().recover_claims(T0 + 5500).await?;
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|(_, r)| *r == Recovery::FiredLate));
    b.triggers().wait_idle().await;
    let mut runs: Vec<(String, i32, i32)> =
        fake.runs().into_iter().map(|(a, p)| (a, p.broadcast_index, p.broadcast_total)).collect();
    runs.sort();
    assert_eq!(runs, [(A.to_owned(), 0, 3), (B.to_owned(), 1, 3), (C.to_owned(), 2, 3)]);

    // A comes back: its remaining shards are taken, nothing runs twice.
    release.notify_one();
    a.triggers().wait_idle().await;
    assert_eq!(fake.runs().len(), 3);
    let rows = logs(&*store_a, id).await?;
    let mut params: Vec<Option<&str>> = rows.iter().map(|r| r.executor_sharding_param.as_deref()).collect();
    params.sort_unstable();
    assert_eq!(params, [Some("0/3"), Some("1/3"), Some("2/3")]);
    assert!(store_a.pending_claims(i64::MAX).await?.is_empty());
    assert!(b.scheduler().recovery().recover_claims(T0 + 6000).await?.is_empty());
    Ok(())
}

/// A broadcast whose admin dies between shards and is recovered more than 5 s late follows
/// misfire FIRE_ONCE_NOW: every unfired shard of that fire time fires, as one trigger would.
async fn late_shards_misfire_together(db: &Db) -> anyhow::Result<()> {
    let Stuck { store_a, fake, b, id, .. } = stuck_on_shard_zero(db, "FIRE_ONCE_NOW").await?;
    let done = b.scheduler().recovery().recover_claims(T0 + 20_000).await?;
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|(_, r)| *r == Recovery::FiredMisfire));
    b.triggers().wait_idle().await;
    let mut indexes: Vec<i32> = fake.runs().iter().map(|(_, p)| p.broadcast_index).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1, 2]);
    assert_eq!(logs(&*store_a, id).await?.len(), 3);
    Ok(())
}

async fn contract(db: &Db) -> anyhow::Result<()> {
    unfired_shards_are_recovered(db).await?;
    late_shards_misfire_together(db).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_shards_sqlite() -> anyhow::Result<()> {
    contract(&Db::sqlite().await?).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_shards_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, contract).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_shards_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, contract).await
}
