//! The chaos suite: one kill plan per database per run of the scenario in
//! `jobwheel_tests::chaos` (admins and executors SIGKILLed every few seconds for 45 s while 50
//! every-second jobs and a workflow run; then the books must balance). The soak
//! (`scripts/soak.sh`) runs the same scenario over hundreds of plans.
//!
//! It runs three times, one after the other (they would starve each other of the two cores):
//! two admins on PostgreSQL, which is also stopped for 10 s; two admins on MariaDB; one admin on
//! SQLite. Admin kills are mostly fault points (`jobwheel_tests::chaos::plan`).
//! `JOBWHEEL_CHAOS_SEED=<seed>` replays a reported run's kill plan. The counts are
//! written to `chaos-report.txt` in the target directory, which `scripts/test.sh` prints.

use std::io::Write as _;

use anyhow::Context as _;
use jobwheel_tests::chaos::plan::KillPlan;
use jobwheel_tests::chaos::{Setup, ensure_postgres_up};
use jobwheel_tests::databases::{FreshDatabase, Server};

/// One run at a time: each takes both cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_admins_under_sigkills_and_a_database_outage() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let setup = Setup { name: "PostgreSQL, two admins".into(), admins: 2, outage: true };
    let outcome = run(&db.url, &setup).await;
    ensure_postgres_up().await?;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_two_admins_under_sigkills() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let setup = Setup { name: "MariaDB, two admins".into(), admins: 2, outage: false };
    let outcome = run(&db.url, &setup).await;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_one_admin_under_sigkills() -> anyhow::Result<()> {
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("chaos.db").display());
    run(&url, &Setup { name: "SQLite, one admin".into(), admins: 1, outage: false }).await
}

async fn run(url: &str, setup: &Setup) -> anyhow::Result<()> {
    let report = jobwheel_tests::chaos::run(url, setup, &KillPlan::from_env()).await?;
    write_report(&report.summary)?;
    report.outcome
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
