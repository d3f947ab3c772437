//! `bench-flight-storage`: what recording Wasm runs for replay costs the admin's database
//! (docs/benchmarks.md, "The flight recorder"; issue 62's target: ≤ 10 % per run for a job that
//! makes no HTTP calls).
//!
//! Starts `jobwheel-admin` (a new SQLite file, or a fresh PostgreSQL schema with `--postgres`)
//! and one `jobwheel-executor` from the directory of this binary, creates a GLUE_WASM job
//! running `--module`, and runs it `--runs` times with recording switched off, then `--runs`
//! times with it on (one run at a time, each waited for). The database's size is read before
//! and after each phase — SQLite: pages in use × page size after a WAL checkpoint; PostgreSQL:
//! the schema's tables with their indexes and TOAST after `VACUUM FULL` — so a phase's growth
//! over its runs is what a run costs. Printed: bytes per run off and on, the difference in percent, and what the flight
//! records themselves hold (their JSON and their sealed bodies).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use serde_json::json;

const API_TOKEN: &str = "bench-flight-storage-token-0123456789";

#[derive(Debug, Parser)]
struct Args {
    /// The module or component the job runs (e.g. the `hello` sample).
    #[arg(long)]
    module: PathBuf,
    /// Runs per phase.
    #[arg(long, default_value_t = 300)]
    runs: usize,
    /// On a fresh schema of `JOBWHEEL_TEST_POSTGRES_URL` instead of SQLite.
    #[arg(long)]
    postgres: bool,
}

#[tokio::main]
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = std::fs::read(&args.module).with_context(|| args.module.display().to_string())?;
    let dir = tempfile::tempdir()?;
    let fresh = match args.postgres {
        true => Some(FreshDatabase::create(Server::Postgres).await?.context("JOBWHEEL_TEST_POSTGRES_URL")?),
        false => None,
    };
    let url = fresh
        .as_ref()
        .map_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()), |f| f.url.clone());
    let store = jobwheel_admin::store::connect(&url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
    let admin = Daemon::start_admin(&url, &dir.path().join("admin"), &["--i18n", "en"], &[]).await?;
    let executor = Daemon::start_executor(
        "bench-app",
        std::slice::from_ref(&admin.base),
        &dir.path().join("executor"),
        &[],
    )
    .await?;
    let api = Api::new(&admin.base, API_TOKEN);
    let group = api
        .post("/groups", json!({"appname": "bench-app", "title": "Bench", "addressType": 1, "addressList": executor.address()}))
        .await?["id"]
        .as_i64()
        .context("group id")?;
    let job =
        api.job(group, "flight storage", json!({"glueType": "GLUE_WASM", "executorHandler": ""})).await?;
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/jobs/{job}/wasm?remark=bench", admin.base))
        .bearer_auth(API_TOKEN)
        .header("content-type", "application/wasm")
        .body(bytes)
        .send()
        .await?;
    ensure!(response.status().is_success(), "upload: {}", response.text().await?);

    let size = Size::open(&url).await?;
    println!(
        "module: {}, {} runs per phase, {}",
        args.module.display(),
        args.runs,
        if args.postgres { "PostgreSQL" } else { "SQLite" }
    );
    let mut per_run = Vec::new();
    for record in [false, true] {
        api.put(&format!("/jobs/{job}/grant"), json!({"recordRuns": record})).await?;
        let before = size.bytes().await?;
        let started = Instant::now();
        let done = runs(&api, job).await?.0;
        for n in 1..=args.runs {
            api.trigger(job, None).await?;
            let deadline = Instant::now() + Duration::from_secs(120);
            while runs(&api, job).await? != (done + n, true) {
                ensure!(Instant::now() < deadline, "run {n} of the phase did not end in 120 s");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        let grown = size.bytes().await?.saturating_sub(before);
        let bytes = grown as f64 / args.runs as f64;
        println!(
            "recording {}: {bytes:.0} bytes per run ({grown} bytes over {} runs, {:.1} s)",
            if record { "on" } else { "off" },
            args.runs,
            started.elapsed().as_secs_f64()
        );
        per_run.push(bytes);
    }
    let failed = api.get(&format!("/logs?jobId={job}&status=fail&limit=1")).await?;
    ensure!(failed["total"] == 0, "every run succeeded: {failed}");
    println!("recording adds {:.1} % per run", (per_run[1] - per_run[0]) / per_run[0] * 100.0);
    let (count, json, sealed) = size.records().await?;
    ensure!(count == args.runs as i64, "every recorded run has a record: {count}");
    println!(
        "records: {count}, JSON {:.0} bytes on average, stored (deflated and sealed) {:.0} bytes",
        json, sealed
    );
    drop(store);
    if let Some(fresh) = fresh {
        fresh.drop_it().await?;
    }
    Ok(())
}

/// How many runs `job` has, and whether the newest has ended (its result stored).
async fn runs(api: &Api, job: i64) -> anyhow::Result<(usize, bool)> {
    let page = api.get(&format!("/logs?jobId={job}&limit=1")).await?;
    let total = usize::try_from(page["total"].as_u64().context("total")?)?;
    let newest = &page["items"][0];
    Ok((total, newest["handleCode"].as_i64().unwrap_or(0) > 0 && newest["triggerCode"] == 200))
}

/// Reads the database's size and the records' sizes.
enum Size {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Size {
    async fn open(url: &str) -> anyhow::Result<Size> {
        Ok(match url.starts_with("sqlite") {
            true => Size::Sqlite(sqlx::SqlitePool::connect(url).await?),
            false => Size::Postgres(sqlx::PgPool::connect(url).await?),
        })
    }

    /// The database's bytes now.
    async fn bytes(&self) -> anyhow::Result<u64> {
        Ok(match self {
            Size::Sqlite(pool) => {
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await?;
                let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(pool).await?;
                let free: i64 = sqlx::query_scalar("PRAGMA freelist_count").fetch_one(pool).await?;
                let size: i64 = sqlx::query_scalar("PRAGMA page_size").fetch_one(pool).await?;
                u64::try_from((pages - free) * size)?
            }
            Size::Postgres(pool) => {
                // Compacted first: updated log rows leave dead versions that autovacuum frees
                // at its own pace, which would otherwise decide what a phase appears to cost.
                let tables: Vec<String> = sqlx::query_scalar(
                    "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()",
                )
                .fetch_all(pool)
                .await?;
                for table in tables {
                    sqlx::query(sqlx::AssertSqlSafe(format!("VACUUM FULL \"{table}\"")))
                        .execute(pool)
                        .await?;
                }
                let bytes: i64 = sqlx::query_scalar(
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                     JOIN pg_namespace n ON n.oid = c.relnamespace \
                     WHERE n.nspname = current_schema() AND c.relkind = 'r'",
                )
                .fetch_one(pool)
                .await?;
                u64::try_from(bytes)?
            }
        })
    }

    /// How many records, their JSON's and their stored bodies' average bytes.
    async fn records(&self) -> anyhow::Result<(i64, f64, f64)> {
        const SQL: &str = "SELECT COUNT(*), CAST(COALESCE(AVG(record_bytes), 0) AS DOUBLE PRECISION), \
             CAST(COALESCE(AVG(LENGTH(body)), 0) AS DOUBLE PRECISION) FROM jobwheel_log_flight";
        Ok(match self {
            Size::Sqlite(pool) => sqlx::query_as(SQL).fetch_one(pool).await?,
            Size::Postgres(pool) => sqlx::query_as(SQL).fetch_one(pool).await?,
        })
    }
}
