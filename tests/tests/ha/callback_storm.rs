//! An admin SIGKILLed between receiving callbacks and storing them loses none: 300 runs
//! finish at once (a callback storm) while the test holds a lock on `xxl_job_log`, so the admin
//! has the results in hand and cannot commit them; it is killed right there, and after its
//! restart every result is recorded — the executor never heard 200, so it sends them again.
//! Upstream answers before storing and would lose the whole storm.

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use jobwheel_tests::outcomes::log_totals;
use jobwheel_tests::wait_until_async;
use sqlx::Connection as _;
use tokio::sync::Semaphore;

use crate::support::{gated_executor, group, stopped_jobs, trigger_and_dispatch};

const RUNS: usize = 300;
const JOBS: usize = 30;
const API_TOKEN: &str = "storm-api-token-0123456789abcdef";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_killed_before_storing_a_callback_storm_loses_none_of_it() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = storm(&db.url).await;
    db.drop_it().await?;
    outcome
}

async fn storm(url: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let store = jobwheel_admin::store::connect(url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let mut admin = Daemon::start_admin(url, &dir.path().join("admin"), &[], &[]).await?;
    let gate = Arc::new(Semaphore::new(0));
    let executor = gated_executor(&dir.path().join("executor"), &admin.base, &gate).await;
    let g = group(&*store, &format!("http://{}/", executor.addr)).await?;
    let jobs = stopped_jobs(&*store, g, JOBS).await?;
    trigger_and_dispatch(&admin.base, API_TOKEN, &jobs, RUNS, url).await?;

    // Writes to the log table wait for the test; reads do not.
    let mut lock = sqlx::PgConnection::connect(url).await?;
    sqlx::query("BEGIN").execute(&mut lock).await?;
    sqlx::query("LOCK TABLE xxl_job_log IN EXCLUSIVE MODE").execute(&mut lock).await?;
    let probe = sqlx::PgPool::connect(url).await?;
    gate.add_permits(RUNS);
    // The admin has received results and is waiting to store them: a backend waits on the
    // table with the callback store's statement (it reads `handle_code` under a row lock; the
    // monitors' statements do not mention it). A batch's text is matched by its start:
    // `pg_stat_activity` keeps only the first 1 024 bytes of a statement, and the `FOR UPDATE` of
    // a batch of a few hundred ids lies beyond them (what made this wait time out in CI).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: Result<i64, sqlx::Error> = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE NOT l.granted AND l.relation = 'xxl_job_log'::regclass \
             AND (a.query LIKE 'SELECT id, job_id, handle_code, handle_msg FROM xxl_job_log WHERE id IN (%' \
             OR (a.query LIKE '%handle_code%' AND a.query LIKE '%FOR UPDATE%'))",
        )
        .fetch_one(&probe)
        .await;
        if matches!(waiting, Ok(n) if n > 0) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            // What the database and the admin were doing instead, for the failure report.
            let activity: Vec<(String, Option<String>)> = sqlx::query_as(
                "SELECT COALESCE(a.state, ''), a.query FROM pg_stat_activity a \
                 WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()",
            )
            .fetch_all(&probe)
            .await
            .unwrap_or_default();
            anyhow::bail!(
                "the admin never waited on the lock to store callbacks within 60 s (last probe: {waiting:?});\n\
                 backends: {activity:?}\nadmin log:\n{}",
                admin.log_tail(30)
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    admin.kill9().await?;
    sqlx::query("ROLLBACK").execute(&mut lock).await?;
    let (_, _, recorded) = log_totals(url).await?;
    ensure!(recorded == 0, "nothing was stored before the kill ({recorded})");

    admin.restart().await?;
    let recorded = wait_until_async(Duration::from_secs(60), "every result recorded", || async {
        let (_, _, succeeded) = log_totals(url).await.ok()?;
        (succeeded == RUNS as i64).then_some(succeeded)
    })
    .await;
    ensure!(recorded == RUNS as i64);
    executor.stop().await?;
    admin.stop().await
}
