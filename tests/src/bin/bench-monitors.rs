//! `bench-monitors`: what the fail monitor's scan and the report monitor's minute pass cost as
//! the log table grows, in upstream's form and in jobwheel's (docs/benchmarks.md, "Monitor
//! scans", "The report's minute pass").
//!
//! Fills an empty database's `xxl_job_log` with `--logs` successful runs and `--failed` failed
//! ones, triggered over the `--hours` before now (one set-based `INSERT … SELECT` per
//! database), then times `--repeat` scans of each: the admin's own `failed_log_ids` through the
//! store, and upstream's statement (`UPSTREAM_SCAN`) run as text; then the report: upstream's
//! pass (three days recounted), jobwheel's first pass after a start, and its minute passes with
//! `--per-minute` new runs inserted before each. It prints the medians.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser;
use jobwheel_admin::engine::ReportMonitor;
use jobwheel_admin::store::{Backend, Store};

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
    /// The rows' trigger times are spread over this many hours before now (at most 72: the
    /// report's three days).
    #[arg(long, default_value_t = 24)]
    hours: u64,
    /// New runs inserted before each of the report's minute passes (a minute at this rate).
    #[arg(long, default_value_t = 60_000)]
    per_minute: u64,
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
    let now_s = chrono::Utc::now().timestamp();
    let span = Span { end_s: now_s, secs: i64::try_from(args.hours.min(72) * 3600)? };
    fill(&raw, store.backend(), args.logs, 200, span).await?;
    fill(&raw, store.backend(), args.failed, 500, span).await?;
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
    report(&args, &store, &raw, now_s).await
}

/// The report monitor's pass: upstream's three recounted days, jobwheel's first pass and its
/// minute passes (each after `--per-minute` new runs, inserted untimed).
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn report(args: &Args, store: &Arc<dyn Store>, raw: &Raw, now_s: i64) -> anyhow::Result<()> {
    let day = 86_400;
    let today = now_s - now_s.rem_euclid(day);
    let at = |s: i64| chrono::DateTime::from_timestamp(s, 0).unwrap_or_default();
    let upstream = median(args.repeat.min(3), || async {
        for back in 0..3 {
            let from = today - back * day;
            store.log_counts(at(from), at(from + day - 1)).await?;
        }
        Ok(())
    })
    .await?;
    let monitor = ReportMonitor::new(Arc::clone(store), chrono_tz::UTC, 30);
    let mut now_ms = now_s * 1000;
    let started = Instant::now();
    monitor.report_and_clean(now_ms).await?;
    let first = started.elapsed();
    let mut passes = Vec::with_capacity(args.repeat);
    for _ in 0..args.repeat {
        now_ms += 60_000;
        let minute = Span { end_s: now_ms / 1000, secs: 60 };
        fill(raw, store.backend(), args.per_minute, 200, minute).await?;
        let started = Instant::now();
        monitor.report_and_clean(now_ms).await?;
        passes.push(started.elapsed());
    }
    passes.sort();
    println!(
        "  report pass over three days: {:.0} ms as upstream recounts (median of {}); jobwheel's first pass {:.0} ms, \
         its minute pass after {} new runs {:.1} ms (median of {})",
        ms(upstream),
        args.repeat.min(3),
        ms(first),
        args.per_minute,
        ms(passes[passes.len() / 2]),
        args.repeat
    );
    Ok(())
}

/// Trigger times spread over the `secs` seconds before `end_s`.
#[derive(Debug, Clone, Copy)]
struct Span {
    end_s: i64,
    secs: i64,
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

/// Inserts `rows` log rows triggered 200 and handled `handle_code`, their trigger times spread
/// over `span`, with an upstream-sized trigger message, in one statement.
async fn fill(raw: &Raw, backend: Backend, rows: u64, handle_code: i32, span: Span) -> anyhow::Result<()> {
    let columns = "INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, trigger_msg, \
        handle_code, alarm_status)";
    let msg = "'Trigger type: Cron trigger<br>Admin address: 127.0.0.1:8080<br>Executor registry: \
        automatic<br>Address list: [http://127.0.0.1:9999/]<br>Route: First<br>Block: Serial'";
    let (start, n) = (span.end_s - span.secs, rows.max(1));
    let time = |x: &str| format!("{start} + {x} * {} / {n}", span.secs);
    let sql = match backend {
        Backend::Sqlite => format!(
            "WITH RECURSIVE seq(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM seq WHERE x < {rows}) \
             {columns} SELECT 1, 1, datetime({}, 'unixepoch'), 200, {msg}, {handle_code}, 0 FROM seq",
            time("x")
        ),
        Backend::Postgres => format!(
            "{columns} SELECT 1, 1, to_timestamp({}), 200, {msg}, {handle_code}, 0 \
             FROM generate_series(1::bigint, {rows}) AS x",
            time("x")
        ),
        // MariaDB's sequence engine; MySQL has none, and this benchmark runs on MariaDB.
        Backend::MySql => format!(
            "{columns} SELECT 1, 1, FROM_UNIXTIME({}), 200, {msg}, {handle_code}, 0 FROM seq_1_to_{rows}",
            time("seq")
        ),
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
