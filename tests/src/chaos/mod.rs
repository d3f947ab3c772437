//! The chaos scenario, shared by the chaos suite (`tests/tests/chaos`, one kill plan per
//! database per run) and the soak (`soak` binary, `scripts/soak.sh`: hundreds of plans).
//!
//! `jobwheel-admin` processes on one database and two `jobwheel-executor` processes run 50
//! every-second jobs (one of them a sharding broadcast, three of them scripts that take most of
//! their second, so runs are in flight when a kill lands) while a kill plan (`plan.rs`) hits
//! the processes every few seconds. Then every scheduled second of every job must be accounted
//! for (`ledger.rs`): fired exactly once (per shard for the broadcast), or skipped by the
//! misfire rule while the database was down; every result an executor finished recorded
//! exactly once; every run that was in flight at an executor's death closed — none left open.
//! A workflow runs beside the jobs (`workflows.rs`): every node of every instance fired at most
//! once and no instance left running.
//!
//! A killed admin comes back on its address. A killed executor comes back alternately on its
//! own address (the shipped systemd unit's fixed port: its registration never lapses, and the
//! admin must close the runs it took down from the new process's incarnation,
//! `engine/restarts.rs`) and on a new port (a restarted container: its old address goes stale
//! and the lost-job monitor closes its runs). Timeouts are short so each run settles in about
//! two minutes.

mod ledger;
pub mod plan;
mod postgres;
mod processes;
mod workflows;

use std::time::Duration;

use anyhow::Context as _;
use jobwheel_admin::store::{JobId, Store};

use self::ledger::Window;
use self::plan::KillPlan;
use self::processes::Cluster;
use crate::cluster::Daemon;
use crate::now_ms;

pub use self::postgres::ensure_up as ensure_postgres_up;

const JOBS: usize = 50;
/// Of the [`JOBS`], how many are scripts that run for most of their second.
const SLOW_JOBS: usize = 3;
const APP: &str = "chaos-app";
/// When, into the chaos, the database goes away (PostgreSQL only), and for how long.
const OUTAGE_AT: Duration = Duration::from_secs(15);
const OUTAGE: Duration = Duration::from_secs(10);
/// `--lost-job-timeout`: longer than the outage, so a result journaled by an executor that
/// then died is re-sent by its successor before its run counts as lost.
const LOST_TIMEOUT_SECS: &str = "20";

/// How one run is set up.
#[derive(Debug, Clone)]
pub struct Setup {
    /// Names the run in its report ("MariaDB, two admins").
    pub name: String,
    pub admins: usize,
    /// Stop PostgreSQL for 10 s, 15 s in (the only server the suite may stop under the others).
    pub outage: bool,
}

/// What one run found: its report (the plan, then the counts or the failure) and whether the
/// books balanced.
pub struct RunReport {
    pub summary: String,
    pub outcome: anyhow::Result<()>,
}

/// Runs the scenario on the database at `url` under `plan`.
pub async fn run(url: &str, setup: &Setup, plan: &KillPlan) -> anyhow::Result<RunReport> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(url).await?;
    let flags = ["--lost-job-timeout", LOST_TIMEOUT_SECS, "--executor-dead-timeout", "3"];
    let mut admins = Vec::new();
    for n in 0..setup.admins {
        let data = dir.path().join(format!("admin{n}"));
        let fault_file = data.join("fault").display().to_string();
        let env = [("RUST_LOG", "warn"), (jobwheel_admin::fault::FAULT_FILE_VAR, fault_file.as_str())];
        admins.push(Daemon::start_admin(url, &data, &flags, &env).await?);
    }
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let mut executors = Vec::new();
    for n in 0..2 {
        let data = dir.path().join(format!("executor{n}"));
        executors.push(Daemon::start_executor(APP, &bases, &data, &["--enable-script-glue"]).await?);
    }
    let mut cluster = Cluster::new(admins, executors, dir.path());
    let group = crate::fixtures::auto_group(&*store, APP).await?;
    // An idle scheduler looks for new jobs only every 5 s: the first fire lies beyond that.
    let first_fire = (now_ms() / 1000 + 7) * 1000;
    let jobs = add_jobs(&*store, group, first_fire).await?;
    let workflow = workflows::add(&*store, group, first_fire).await?;

    let mut kills = Vec::new();
    let started = tokio::time::Instant::now();
    let mut outage = None;
    let mut draws = plan.draws(cluster.size(), setup.admins);
    while started.elapsed() < plan.chaos {
        tokio::time::sleep(draws.pause()).await;
        if setup.outage && outage.is_none() && started.elapsed() >= OUTAGE_AT {
            let from = now_ms();
            postgres::stop().await?;
            tokio::time::sleep(OUTAGE).await;
            postgres::start().await?;
            outage = Some((from, now_ms()));
            kills.push(format!("database down at second {}", (from - first_fire) / 1000));
            continue;
        }
        let kill = draws.kill();
        let at = (now_ms() - first_fire) / 1000;
        kills.push(format!("{} at second {at}", cluster.kill_and_restart(&kill).await?));
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
        "{}: chaos seed {}{}: {} kills and {outages} database outage(s) of {:?} ({})\n{}",
        setup.name,
        plan.seed,
        plan.describe(),
        kills.len() - outages,
        OUTAGE,
        kills.join(", "),
        match (&report, &workflow_report) {
            (Ok(counts), Ok(workflow)) => format!("{counts}\n{workflow}"),
            (Err(e), _) => format!("FAILED: {e:#}"),
            (_, Err(e)) => format!("FAILED (workflow): {e:#}"),
        }
    );
    cluster.stop_all().await?;
    let outcome = report.and(workflow_report).map(|_| ());
    // A failure keeps the processes' logs and job logs for tracing the first lost second.
    let summary = if outcome.is_err() {
        format!("{summary}\nprocess logs kept in {}", dir.keep().display())
    } else {
        summary
    };
    let outcome = outcome.with_context(|| summary.clone());
    Ok(RunReport { summary, outcome })
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
        let mut job = crate::fixtures::bean_job(group, &format!("chaos {n}"), handler);
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
