//! Shared scheduling through two engines on one PostgreSQL / MariaDB database, with controlled
//! time: the first admin takes every partition, the second joins and gets half of them, then
//! dies, and the first takes its partitions back once their leases run out. Throughout, every
//! job fires exactly once for every second — the pre-reads never overlap and the hand-overs
//! leave no gap — and each admin fires only what its own pre-reads claimed.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::ensure;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, LEASE_MS, ring_second};
use jobwheel_admin::store::{JobId, SCHEDULE_PARTITIONS, Store};

use crate::engine::support::{Db, FakeExecutor, T0, engine_configured, group, job};

const JOBS: i32 = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_admins_share_the_jobs_and_take_over_a_dead_ones() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, share).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_admins_share_the_jobs_and_take_over_a_dead_ones() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, share).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dead_admins_partitions_are_taken_while_a_second_dead_one_is_counted() -> anyhow::Result<()>
{
    Db::run(Db::postgres().await?, cascade).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_dead_admins_partitions_are_taken_while_a_second_dead_one_is_counted() -> anyhow::Result<()>
{
    Db::run(Db::mysql().await?, cascade).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_recovery_leaves_a_slow_admins_claims_to_it_while_it_is_live() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, slow_not_dead).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_recovery_leaves_a_slow_admins_claims_to_it_while_it_is_live() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, slow_not_dead).await
}

/// The chaos suite's case (seeds 4882118154816893734 and 800588104144297613 on MariaDB): "b"
/// dies, and "c" (it restarted under a new name) joins and dies before it takes anything. While
/// both dead ones are still counted, "a"'s share is too small for all of "b"'s expired
/// partitions; those must not wait for the count to drop, or their jobs are found a second
/// late and the seconds in between never fire.
async fn cascade(db: &Db) -> anyhow::Result<()> {
    let Cluster { clock, admins, store, jobs, .. } =
        Cluster::new(db, &["a", "b", "c"], JOBS, T0 + 1000).await?;
    let [a, b, c] = &admins[..] else { unreachable!("three admins") };
    let mut claimed = Claimed::new();
    for s in 0..8 {
        second(&[("a", a), ("b", b)], &clock, s, &mut claimed).await?;
    }
    let b_held = store.schedule_leases().await?.iter().filter(|l| l.owner.as_deref() == Some("b")).count();
    ensure!(b_held == 16, "a and b share the partitions: b holds {b_held}");
    // "b" dies at 8 (its leases run out at 10.5, when it leaves the count); "c" joins at 10,
    // finds nothing free and dies, counted until 13.5: "a"'s share stays 16 meanwhile.
    for s in 8..10 {
        second(&[("a", a)], &clock, s, &mut claimed).await?;
    }
    second(&[("a", a), ("c", c)], &clock, 10, &mut claimed).await?;
    ensure!(!claimed.values().any(|who| who.contains(&"c")), "c held nothing");
    for s in 11..20 {
        second(&[("a", a)], &clock, s, &mut claimed).await?;
    }
    each_second_claimed_once(&jobs, &claimed, T0 + 20 * 1000)
}

/// "a" claims but its ring falls behind (it never drains); while it keeps pre-reading (live),
/// "b"'s recovery leaves its overdue claims alone; once "a" falls silent, "b" recovers them.
async fn slow_not_dead(db: &Db) -> anyhow::Result<()> {
    let Cluster { clock, fake, admins, store, .. } = Cluster::new(db, &["a", "b"], 4, T0 + 2000).await?;
    let [a, b] = &admins[..] else { unreachable!("two admins") };
    clock.set(T0 + 500);
    let claimed = a.scheduler().schedule_cycle(T0 + 500).await?.fires.len();
    ensure!(claimed >= 4, "a claims its jobs' window: {claimed}");
    ensure!(b.scheduler().schedule_cycle(T0 + 500).await?.fires.is_empty(), "b joins with nothing free");
    let pending = store.pending_claims(i64::MAX).await?;
    ensure!(pending.iter().all(|c| c.node.as_deref() == Some("a")), "each claim names its admin");

    // 4.5 s after the first fire time, "a" is behind but alive.
    for s in 1..=6 {
        clock.set(T0 + s * 1000 + 500);
        a.scheduler().schedule_cycle(T0 + s * 1000 + 500).await?;
    }
    let done = b.scheduler().recovery().recover_claims(T0 + 6500).await?;
    ensure!(done.is_empty(), "a live admin's claims were recovered: {done:?}");
    ensure!(fake.runs().is_empty());

    // "a" falls silent: after the lease time "b" takes over its claims.
    let later = T0 + 6500 + LEASE_MS + 1000;
    clock.set(later);
    b.scheduler().schedule_cycle(later).await?;
    let done = b.scheduler().recovery().recover_claims(later).await?;
    ensure!(done.len() >= claimed, "a's claims recovered once it left: {} of {claimed}", done.len());
    b.triggers().wait_idle().await;
    Ok(())
}

/// Who claimed which job's fire second.
type Claimed = BTreeMap<(JobId, i64), Vec<&'static str>>;

/// One second of both admins' lives: pre-read at .500 (the live ones), fire at the next whole
/// second.
async fn second(
    admins: &[(&'static str, &Arc<Engine>)],
    clock: &ManualClock,
    s: i64,
    claimed: &mut Claimed,
) -> anyhow::Result<()> {
    let pre_read = T0 + s * 1000 + 500;
    clock.set(pre_read);
    for (name, engine) in admins {
        for fire in engine.scheduler().schedule_cycle(pre_read).await?.fires {
            claimed.entry((fire.job_id, fire.fire_time_ms)).or_default().push(name);
        }
    }
    let fire = T0 + (s + 1) * 1000;
    clock.set(fire);
    for (_, engine) in admins {
        engine.scheduler().drain_ring(ring_second(fire));
        engine.triggers().wait_idle().await;
    }
    Ok(())
}

async fn share(db: &Db) -> anyhow::Result<()> {
    let Cluster { clock, fake, admins, jobs, .. } = Cluster::new(db, &["a", "b"], JOBS, T0 + 1000).await?;
    let [a, b] = &admins[..] else { unreachable!("two admins") };
    let upper = |j: &JobId| j.0 % SCHEDULE_PARTITIONS >= SCHEDULE_PARTITIONS / 2;

    let mut claimed = Claimed::new();
    // "a" alone for two seconds: every partition.
    for s in 0..2 {
        second(&[("a", a)], &clock, s, &mut claimed).await?;
    }
    // "b" joins: within a few seconds it holds half the partitions and claims their jobs.
    for s in 2..12 {
        second(&[("a", a), ("b", b)], &clock, s, &mut claimed).await?;
    }
    let late_ms = T0 + 10_000;
    for (&(job, fire_ms), who) in claimed.range((JobId(0), late_ms)..) {
        if fire_ms >= late_ms {
            let expected = if upper(&job) { "b" } else { "a" };
            ensure!(who == &[expected], "job {job} second {fire_ms}: claimed by {who:?}, not {expected}");
        }
    }
    // "b" dies (it neither pre-reads nor fires): "a" takes its partitions when the leases run
    // out, still before the seconds "b" had claimed are over.
    let died = 12;
    for s in died..died + 10 {
        second(&[("a", a)], &clock, s, &mut claimed).await?;
    }
    let last_claim = claimed.keys().filter(|(j, _)| upper(j)).map(|(_, f)| *f).max().unwrap_or(0);
    ensure!(last_claim > T0 + (died + 5) * 1000 + LEASE_MS, "a took over b's partitions");

    // Every job's every second from the first up to what "a" has pre-read: exactly one claim.
    each_second_claimed_once(&jobs, &claimed, T0 + (died + 10) * 1000)?;
    // Each claimed second fired exactly once, by the admin that claimed it, up to the last
    // second that admin drained; "b"'s later claims, in a dead admin's ring, are left to
    // recovery (not run here).
    let mut runs: BTreeMap<(i32, i64), usize> = BTreeMap::new();
    for (_, run) in fake.runs() {
        *runs.entry((run.job_id, run.log_date_time)).or_default() += 1;
    }
    ensure!(runs.values().all(|n| *n == 1), "a second fired twice");
    let drained = |who: &str| if who == "a" { T0 + (died + 10) * 1000 } else { T0 + died * 1000 };
    let expected: Vec<(i32, i64)> = claimed
        .iter()
        .filter(|((_, fire_ms), who)| *fire_ms <= drained(who[0]))
        .map(|((job, fire_ms), _)| (job.0, *fire_ms))
        .collect();
    ensure!(
        runs.keys().copied().eq(expected.iter().copied()),
        "{} runs for {} claims",
        runs.len(),
        expected.len()
    );
    Ok(())
}

/// Admins sharing one database under one controlled clock, with one fake executor, and `jobs`
/// every-second jobs from `first_fire_ms`.
struct Cluster {
    clock: Arc<ManualClock>,
    fake: Arc<FakeExecutor>,
    /// One engine per node name, each scheduling as that node on its own connection pool.
    admins: Vec<Arc<Engine>>,
    store: Arc<dyn Store>,
    jobs: Vec<JobId>,
}

impl Cluster {
    async fn new(db: &Db, nodes: &[&str], jobs: i32, first_fire_ms: i64) -> anyhow::Result<Self> {
        let clock = Arc::new(ManualClock::new(T0));
        let fake = Arc::new(FakeExecutor::default());
        let mut admins = Vec::new();
        for node in nodes {
            let store = db.connect().await?;
            admins.push(engine_configured(
                store,
                fake.clone(),
                clock.clone(),
                UpstreamAlarms::default(),
                |c| {
                    c.schedule_node = Some((*node).to_owned());
                },
            ));
        }
        let store = db.connect().await?;
        let g = group(&*store, "app", &["http://a:9999/"]).await?;
        let mut ids = Vec::new();
        for _ in 0..jobs {
            ids.push(store.add_job(&job(g, first_fire_ms)).await?);
        }
        Ok(Self { clock, fake, admins, store, jobs: ids })
    }
}

/// Every job's every second from `T0 + 1000` up to `horizon`: exactly one admin claimed it.
fn each_second_claimed_once(jobs: &[JobId], claimed: &Claimed, horizon: i64) -> anyhow::Result<()> {
    for job in jobs {
        for fire_ms in (1..(horizon - T0) / 1000).map(|s| T0 + s * 1000) {
            let who = claimed.get(&(*job, fire_ms)).map_or(&[][..], Vec::as_slice);
            ensure!(who.len() == 1, "job {job} second {}: claimed by {who:?}", (fire_ms - T0) / 1000);
        }
    }
    Ok(())
}
