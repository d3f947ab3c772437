//! The chaos suite: `jobwheel-admin` processes on one database and two `jobwheel-executor`
//! processes run 50 every-second jobs (one of them a sharding broadcast, three of them scripts
//! that take most of their second, so runs are in flight when a kill lands) while random
//! SIGKILLs hit any of the processes every few seconds. Then every scheduled second of every
//! job must be accounted for (`ledger.rs`): fired exactly once (per shard for the broadcast), or
//! skipped by the misfire rule while the database was down; every result an executor finished
//! recorded exactly once; every run that was in flight at an executor's death closed — none left
//! open. A workflow runs beside the jobs (`workflows.rs`): every node of every instance fired
//! at most once and no instance left running. The counts are written to `chaos-report.txt` in
//! the target directory, which `scripts/test.sh` prints.
//!
//! It runs three times, one after the other (they would starve each other of the two cores):
//! two admins on PostgreSQL, which is also stopped for 10 s; two admins on MariaDB; one admin on
//! SQLite. A killed admin comes back on its address. A killed executor comes back alternately
//! on its own address (the shipped systemd unit's fixed port: its registration never lapses, and
//! the admin must close the runs it took down from the new process's incarnation,
//! `engine/restarts.rs`) and on a new port (a restarted container: its old address goes stale
//! and the lost-job monitor closes its runs). Timeouts are short so each run settles in about
//! two minutes.

mod ledger;
mod postgres;
mod workflows;

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use jobwheel_admin::store::{JobId, Store};
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use jobwheel_tests::now_ms;
use rand::{Rng as _, SeedableRng as _};

use crate::ledger::Window;

const JOBS: usize = 50;
/// Of the [`JOBS`], how many are scripts that run for most of their second.
const SLOW_JOBS: usize = 3;
const APP: &str = "chaos-app";
/// How long the kills go on.
const CHAOS: Duration = Duration::from_secs(45);
/// When, into the chaos, the database goes away (PostgreSQL only), and for how long.
const OUTAGE_AT: Duration = Duration::from_secs(15);
const OUTAGE: Duration = Duration::from_secs(10);
/// `--lost-job-timeout`: longer than the outage, so a result journaled by an executor that
/// then died is re-sent by its successor before its run counts as lost.
const LOST_TIMEOUT_SECS: &str = "20";

/// One run at a time: each takes both cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How one run is set up.
struct Setup {
    name: &'static str,
    admins: usize,
    /// Stop PostgreSQL for [`OUTAGE`] (the only server the suite may stop under the others).
    outage: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_admins_under_sigkills_and_a_database_outage() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = run(&db.url, &Setup { name: "PostgreSQL, two admins", admins: 2, outage: true }).await;
    postgres::ensure_up().await?;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_two_admins_under_sigkills() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = run(&db.url, &Setup { name: "MariaDB, two admins", admins: 2, outage: false }).await;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_one_admin_under_sigkills() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("chaos.db").display());
    run(&url, &Setup { name: "SQLite, one admin", admins: 1, outage: false }).await
}

/// The processes, and which one a kill hits.
struct Cluster {
    admins: Vec<Daemon>,
    executors: Vec<Daemon>,
    /// Executor kills so far: even ones come back on their address, odd ones elsewhere.
    executor_kills: usize,
    /// With one admin: when it was down (killed, until ready again), epoch ms.
    scheduler_gaps: Vec<(i64, i64)>,
}

impl Cluster {
    fn size(&self) -> usize {
        self.admins.len() + self.executors.len()
    }

    async fn kill_and_restart(&mut self, victim: usize, down: Duration) -> anyhow::Result<String> {
        let admins = self.admins.len();
        let (daemon, name, elsewhere) = if victim < admins {
            (&mut self.admins[victim], format!("admin {victim}"), false)
        } else {
            let n = victim - admins;
            let elsewhere = self.executor_kills % 2 == 1;
            self.executor_kills += 1;
            let how = if elsewhere { "on a new port" } else { "on its address" };
            (&mut self.executors[n], format!("executor {n} (back {how})"), elsewhere)
        };
        let killed_at = now_ms();
        daemon.kill9().await?;
        tokio::time::sleep(down).await;
        let restarted = if elsewhere { daemon.restart_elsewhere().await } else { daemon.restart().await };
        restarted.with_context(|| format!("restarting {name}"))?;
        if victim < admins && admins == 1 {
            self.scheduler_gaps.push((killed_at, now_ms()));
        }
        Ok(name)
    }
}

async fn run(url: &str, setup: &Setup) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(url).await?;
    let flags = ["--lost-job-timeout", LOST_TIMEOUT_SECS, "--executor-dead-timeout", "3"];
    let env = [("RUST_LOG", "warn")];
    let mut admins = Vec::new();
    for n in 0..setup.admins {
        admins.push(Daemon::start_admin(url, &dir.path().join(format!("admin{n}")), &flags, &env).await?);
    }
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let mut executors = Vec::new();
    for n in 0..2 {
        let data = dir.path().join(format!("executor{n}"));
        executors.push(Daemon::start_executor(APP, &bases, &data, &["--enable-script-glue"]).await?);
    }
    let mut cluster = Cluster { admins, executors, executor_kills: 0, scheduler_gaps: Vec::new() };
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    // An idle scheduler looks for new jobs only every 5 s: the first fire lies beyond that.
    let first_fire = (now_ms() / 1000 + 7) * 1000;
    let jobs = add_jobs(&*store, group, first_fire).await?;
    let workflow = workflows::add(&*store, group, first_fire).await?;

    // `JOBWHEEL_CHAOS_SEED` replays a reported run's kill plan (the timing around it still varies).
    let seed: u64 =
        std::env::var("JOBWHEEL_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut kills = Vec::new();
    let started = tokio::time::Instant::now();
    let mut outage = None;
    while started.elapsed() < CHAOS {
        tokio::time::sleep(Duration::from_millis(rng.random_range(2_000..4_000))).await;
        if setup.outage && outage.is_none() && started.elapsed() >= OUTAGE_AT {
            let from = now_ms();
            postgres::stop().await?;
            tokio::time::sleep(OUTAGE).await;
            postgres::start().await?;
            outage = Some((from, now_ms()));
            kills.push(format!("database down at second {}", (from - first_fire) / 1000));
            continue;
        }
        let victim = rng.random_range(0..cluster.size());
        let down = Duration::from_millis(rng.random_range(300..1_500));
        let at = (now_ms() - first_fire) / 1000;
        kills.push(format!("{} at second {at}", cluster.kill_and_restart(victim, down).await?));
    }
    let window = Window {
        from_ms: first_fire,
        to_ms: (now_ms() / 1000) * 1000,
        outage,
        scheduler_gaps: cluster.scheduler_gaps.clone(),
    };
    for job in &jobs {
        store.stop_job(*job, chrono::Utc::now()).await?;
    }
    workflows::stop(&*store, workflow).await?;

    let executor_dirs: Vec<_> =
        (0..2).map(|n| dir.path().join(format!("executor{n}")).join("logs")).collect();
    let settled = ledger::settle(url, &window).await;
    let report = match settled {
        Ok(()) => ledger::account(url, &jobs, &window, &executor_dirs).await,
        Err(e) => Err(e),
    };
    let workflow_report = async {
        workflows::settle(&*store, workflow).await?;
        workflows::account(&*store, workflow, &ledger::starts(&executor_dirs)?).await
    }
    .await;
    let outages = usize::from(outage.is_some());
    let summary = format!(
        "{}: chaos seed {seed}: {} kills and {outages} database outage(s) of {:?} ({})\n{}",
        setup.name,
        kills.len() - outages,
        OUTAGE,
        kills.join(", "),
        match (&report, &workflow_report) {
            (Ok(counts), Ok(workflow)) => format!("{counts}\n{workflow}"),
            (Err(e), _) => format!("FAILED: {e:#}"),
            (_, Err(e)) => format!("FAILED (workflow): {e:#}"),
        }
    );
    write_report(&summary)?;
    for daemon in cluster.admins.iter_mut().chain(cluster.executors.iter_mut()) {
        daemon.stop().await?;
    }
    report.and(workflow_report).map(|_| ()).with_context(|| summary.clone())
}

/// One SHARDING_BROADCAST job on `shardingJobHandler`, [`SLOW_JOBS`] FAILOVER shell scripts
/// that sleep 0.7 s, and FAILOVER jobs on `demoJobHandler`, every second from `first_fire_ms`.
async fn add_jobs(
    store: &dyn Store,
    group: jobwheel_admin::store::GroupId,
    first_fire_ms: i64,
) -> anyhow::Result<Vec<JobId>> {
    let mut jobs = Vec::new();
    for n in 0..JOBS {
        let broadcast = n == 0;
        let handler = if broadcast { "shardingJobHandler" } else { "demoJobHandler" };
        let mut job = jobwheel_tests::fixtures::bean_job(group, &format!("chaos {n}"), handler);
        job.executor_route_strategy = Some(if broadcast { "SHARDING_BROADCAST" } else { "FAILOVER" }.into());
        job.schedule_type = "CRON".into();
        job.schedule_conf = Some("* * * * * ?".to_owned());
        if (1..=SLOW_JOBS).contains(&n) {
            job.glue_type = "GLUE_SHELL".into();
            job.glue_source = Some("sleep 0.7".to_owned());
            job.executor_handler = Some(String::new());
        }
        job.executor_fail_retry_count = 0;
        job.trigger_status = 1;
        job.trigger_next_time = first_fire_ms;
        jobs.push(store.add_job(&job).await?);
    }
    Ok(jobs)
}

/// Writes the counts beside the build, where `scripts/test.sh` prints them: the target directory
/// is found from this test binary (`<target>/<profile>/deps/chaos-…`), not from the working
/// directory (cargo runs tests in `tests/`) nor from `CARGO_TARGET_DIR` (unset on a fresh clone).
fn write_report(summary: &str) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let target =
        exe.ancestors().nth(3).with_context(|| format!("no target directory above {}", exe.display()))?;
    let path = target.join("chaos-report.txt");
    // Each database's run adds its section (scripts/test.sh removes the file before the tests).
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(file, "{summary}\n").with_context(|| format!("writing {}", path.display()))
}
