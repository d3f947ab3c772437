//! No result is lost while the admin is down: 1 000 runs are dispatched, the admin is stopped,
//! the runs finish (their callbacks fail and are spooled to disk), the executor is restarted
//! while its spool is full, and 60 s later the admin comes back — every result must then be
//! recorded.

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::outcomes::log_totals;
use jobwheel_tests::wait_until_async;
use tokio::sync::Semaphore;

use crate::support::{gated_executor, group, stopped_jobs, trigger_and_dispatch};

const RUNS: usize = 1000;
const JOBS: usize = 100;
const ADMIN_DOWN: Duration = Duration::from_secs(60);
const API_TOKEN: &str = "durability-api-token-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_finished_while_the_admin_is_down_are_all_recorded() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("jobwheel.db").display());
    let store = jobwheel_admin::store::connect(&url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let mut admin = Daemon::start_admin(&url, &dir.path().join("admin"), &[], &[]).await?;
    let gate = Arc::new(Semaphore::new(0));
    let log_dir = dir.path().join("executor");
    let executor = gated_executor(&log_dir, &admin.base, &gate).await;
    let g = group(&*store, &format!("http://{}/", executor.addr)).await?;
    let jobs = stopped_jobs(&*store, g, JOBS).await?;
    trigger_and_dispatch(&admin.base, API_TOKEN, &jobs, RUNS, &url).await?;

    // The admin goes away; the runs finish and their callbacks are spooled.
    admin.stop().await?;
    let stopped_at = tokio::time::Instant::now();
    gate.add_permits(RUNS);
    let spool = log_dir.join("callbacklogs");
    wait_until_async(Duration::from_secs(60), "results spooled to disk", || async {
        let files = std::fs::read_dir(&spool).ok()?.count();
        (files > 0 && gate.available_permits() == 0).then_some(())
    })
    .await;
    // The executor restarts with a full spool (graceful stop spools what is still queued).
    executor.stop().await?;
    let restarted = gated_executor(&log_dir, &admin.base, &gate).await;
    let (_, _, recorded) = log_totals(&url).await?;
    ensure!(recorded == 0, "nothing can be recorded while the admin is down ({recorded})");

    tokio::time::sleep_until(stopped_at + ADMIN_DOWN).await;
    admin.restart().await?;
    let recorded = wait_until_async(Duration::from_secs(90), "every result recorded", || async {
        let (_, _, succeeded) = log_totals(&url).await.ok()?;
        (succeeded == RUNS as i64).then_some(succeeded)
    })
    .await;
    ensure!(recorded == RUNS as i64);
    restarted.stop().await?;
    admin.stop().await
}
