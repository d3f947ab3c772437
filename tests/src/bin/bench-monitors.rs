//! `bench-monitors`: what the fail monitor's scan costs as the log table grows, in upstream's
//! form and in jobwheel's (docs/benchmarks.md, "Monitor scans").
//!
//! Fills an empty database's `xxl_job_log` with `--logs` successful runs and `--failed` failed
//! ones (one set-based `INSERT … SELECT` per database), then times `--repeat` scans of each:
//! the admin's own `failed_log_ids` through the store, and upstream's statement
//! (`UPSTREAM_SCAN`) run as text; it prints the medians.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use jobwheel_admin::store::Backend;

#[derive(Debug, Parser)]
struct Args {
    /// Database; must be empty. Default: a new SQLite file under $TMPDIR.
    #[arg(long)]
    database_url: Option<String>,
    /// Successful log rows.
    #[arg(long, default_value_t = 1_000_000)]
    logs: u64,
    /// Failed, not yet alarmed log rows.
    #[arg(long, default_value_t = 100)]
    failed: u64,
    /// Timed scans per variant.
    #[arg(long, default_value_t = 11)]
    repeat: usize,
}

#[tokio::main]
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = tempfile::tempdir()?;
    let url = args
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    let store = jobwheel_admin::store::connect(&url).await.context("connecting to the database")?;
    let raw = Raw::connect(&url, store.backend()).await?;
    let started = Instant::now();
    fill(&raw, store.backend(), args.logs, 200).await?;
    fill(&raw, store.backend(), args.failed, 500).await?;
    // Fresh statistics, as autovacuum / InnoDB's sampling would give a long-lived table.
    let analyze = match store.backend() {
        Backend::MySql => "ANALYZE TABLE xxl_job_log",
        _ => "ANALYZE xxl_job_log",
    };
    raw.execute(analyze).await?;
    println!(
        "{:?}: {} successful + {} failed log rows written in {:.1} s",
        store.backend(),
        args.logs,
        args.failed,
        started.elapsed().as_secs_f64()
    );
    let ours = median(args.repeat, || async {
        let found = store.failed_log_ids(1000).await?;
        anyhow::ensure!(found.len() as u64 == args.failed.min(1000), "found {} failed logs", found.len());
        Ok(())
    })
    .await?;
    let upstream = median(args.repeat, || raw.execute(UPSTREAM_SCAN)).await?;
    println!(
        "  fail monitor scan (limit 1000), median of {}: {:.2} ms as jobwheel writes it, {:.2} ms as upstream does",
        args.repeat,
        ms(ours),
        ms(upstream)
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Upstream `XxlJobLogMapper.findFailJobLogIds` (its `NOT (…)` condition), for comparison.
const UPSTREAM_SCAN: &str = "SELECT id FROM xxl_job_log \
    WHERE NOT ((trigger_code IN (0, 200) AND handle_code = 0) OR handle_code = 200) \
    AND alarm_status = 0 ORDER BY id ASC LIMIT 1000";

/// The median time of `repeat` runs of `scan`.
async fn median<F, Fut>(repeat: usize, mut scan: F) -> anyhow::Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let started = Instant::now();
        scan().await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Inserts `rows` log rows triggered 200 and handled `handle_code`, in one statement.
async fn fill(raw: &Raw, backend: Backend, rows: u64, handle_code: i32) -> anyhow::Result<()> {
    let columns = "INSERT INTO xxl_job_log (job_group, job_id, trigger_code, handle_code, alarm_status)";
    let sql = match backend {
        Backend::Sqlite => format!(
            "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq WHERE x < {rows}) \
             {columns} SELECT 1, 1, 200, {handle_code}, 0 FROM seq"
        ),
        Backend::Postgres => {
            format!("{columns} SELECT 1, 1, 200, {handle_code}, 0 FROM generate_series(1, {rows})")
        }
        // MariaDB's sequence engine; MySQL has none, and this benchmark runs on MariaDB.
        Backend::MySql => format!("{columns} SELECT 1, 1, 200, {handle_code}, 0 FROM seq_1_to_{rows}"),
    };
    if rows > 0 {
        raw.execute(&sql).await?;
    }
    Ok(())
}

/// One open connection pool of the database, for statements the store has no method for.
enum Raw {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
}

impl Raw {
    async fn connect(url: &str, backend: Backend) -> anyhow::Result<Raw> {
        Ok(match backend {
            Backend::Sqlite => Raw::Sqlite(sqlx::SqlitePool::connect(url).await?),
            Backend::Postgres => Raw::Postgres(sqlx::PgPool::connect(url).await?),
            Backend::MySql => Raw::MySql(sqlx::MySqlPool::connect(url).await?),
        })
    }

    async fn execute(&self, sql: &str) -> anyhow::Result<()> {
        match self {
            Raw::Sqlite(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(pool).await.map(|_| ())?,
            Raw::Postgres(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(pool).await.map(|_| ())?,
            Raw::MySql(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql)).execute(pool).await.map(|_| ())?,
        }
        Ok(())
    }
}
