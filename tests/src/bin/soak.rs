//! `soak`: the chaos scenario (`jobwheel_tests::chaos`) over many kill plans on one database,
//! each plan on a fresh database, each ledger checked (0 lost, 0 doubled, 0 runs left open, every
//! workflow node once). Not part of CI: `scripts/soak.sh` runs it over 100 plans on MariaDB and
//! 50 each on PostgreSQL and SQLite (docs/benchmarks.md, "The soak").
//!
//! Plans are seeds `--first-seed`, `--first-seed + 1`, … (or the list given to `--seeds`), so a
//! soak runs in parts: each plan's report and one closing tally are appended to `--report`.
//! Plans are *phased* unless `--outside-only`: most admin kills are fault points the admin
//! reaches by itself (pre-read, claim, dispatch, outcome; `jobwheel_admin::fault`), which needs
//! the debug build of `jobwheel-admin` beside this binary.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Parser, ValueEnum};
use jobwheel_tests::chaos::plan::KillPlan;
use jobwheel_tests::chaos::{Setup, ensure_postgres_up};
use jobwheel_tests::databases::{FreshDatabase, Server};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Database {
    /// One admin, killed and restarted.
    Sqlite,
    /// Two admins (`JOBWHEEL_TEST_POSTGRES_URL`).
    Postgres,
    /// Two admins (`JOBWHEEL_TEST_MYSQL_URL`).
    Mariadb,
}

#[derive(Debug, Parser)]
struct Args {
    #[arg(long, value_enum)]
    database: Database,
    /// How many plans, from `--first-seed` on.
    #[arg(long, default_value_t = 10)]
    plans: u64,
    /// The first plan's seed (default: random, printed).
    #[arg(long)]
    first_seed: Option<u64>,
    /// These seeds instead of a count from a first seed (e.g. a reported run's).
    #[arg(long, value_delimiter = ',')]
    seeds: Vec<u64>,
    /// How long each plan's kills go on.
    #[arg(long, default_value_t = 20)]
    chaos_secs: u64,
    /// Only outside SIGKILLs, as the chaos suite's plans (no fault points).
    #[arg(long)]
    outside_only: bool,
    /// Stop PostgreSQL for 10 s, 15 s into each plan (needs `--chaos-secs` over 15).
    #[arg(long)]
    outage: bool,
    /// Stop at the first plan whose books do not balance.
    #[arg(long)]
    stop_on_failure: bool,
    /// Where each plan's report and the tally are appended.
    #[arg(long, default_value = "target/soak-report.txt")]
    report: PathBuf,
}

#[expect(clippy::print_stdout, reason = "the soak's progress and tally are its output")]
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let seeds: Vec<u64> = if args.seeds.is_empty() {
        let first = args.first_seed.unwrap_or_else(rand::random);
        (0..args.plans).map(|n| first.wrapping_add(n)).collect()
    } else {
        args.seeds.clone()
    };
    let setup = match args.database {
        Database::Sqlite => Setup { name: "SQLite, one admin".into(), admins: 1, outage: false },
        Database::Postgres => Setup { name: "PostgreSQL, two admins".into(), admins: 2, outage: args.outage },
        Database::Mariadb => Setup { name: "MariaDB, two admins".into(), admins: 2, outage: false },
    };
    if args.outage && !matches!(args.database, Database::Postgres) {
        bail!("--outage stops PostgreSQL: only with --database postgres");
    }
    let started = Instant::now();
    let mut failed = Vec::new();
    for (n, seed) in seeds.iter().enumerate() {
        let plan =
            KillPlan { seed: *seed, chaos: Duration::from_secs(args.chaos_secs), phased: !args.outside_only };
        let plan_started = Instant::now();
        let (summary, ok) = one_plan(args.database, &setup, &plan).await?;
        let took = plan_started.elapsed().as_secs();
        append(&args.report, &format!("{summary}\nplan took {took} s\n"))?;
        let verdict = if ok { "balanced" } else { "FAILED" };
        println!("plan {}/{} seed {seed}: {verdict} ({took} s)", n + 1, seeds.len());
        if !ok {
            println!("{summary}");
            failed.push(*seed);
            if args.stop_on_failure {
                break;
            }
        }
    }
    let wall = started.elapsed();
    let tally = format!(
        "soak: {}: {} plans ({}, {} s of kills each; seeds {}), {} balanced, {} failed {failed:?}; wall time {} min {} s\n",
        setup.name,
        seeds.len(),
        if args.outside_only { "outside kills only" } else { "phased" },
        args.chaos_secs,
        describe_seeds(&seeds),
        seeds.len() - failed.len(),
        failed.len(),
        wall.as_secs() / 60,
        wall.as_secs() % 60,
    );
    append(&args.report, &tally)?;
    print!("{tally}");
    if failed.is_empty() { Ok(()) } else { bail!("{} plans failed: {failed:?}", failed.len()) }
}

/// Runs one plan on a fresh database; its report and whether the books balanced.
async fn one_plan(database: Database, setup: &Setup, plan: &KillPlan) -> anyhow::Result<(String, bool)> {
    let server = match database {
        Database::Sqlite => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("soak.db").display());
            let report = jobwheel_tests::chaos::run(&url, setup, plan).await?;
            let ok = report.outcome.is_ok();
            if !ok {
                // The database goes with the process logs, for tracing.
                let kept = dir.keep();
                return Ok((format!("{}\ndatabase kept in {}", report.summary, kept.display()), false));
            }
            return Ok((report.summary, ok));
        }
        Database::Postgres => Server::Postgres,
        Database::Mariadb => Server::MySql,
    };
    let db = FreshDatabase::create(server)
        .await?
        .context("set JOBWHEEL_TEST_POSTGRES_URL / JOBWHEEL_TEST_MYSQL_URL (scripts/soak.sh does)")?;
    let report = jobwheel_tests::chaos::run(&db.url, setup, plan).await;
    if setup.outage {
        ensure_postgres_up().await?;
    }
    let report = report?;
    let ok = report.outcome.is_ok();
    if ok {
        db.drop_it().await?;
        Ok((report.summary, true))
    } else {
        // Kept for tracing: its claims, leases and log rows are the evidence.
        Ok((format!("{}\ndatabase kept: {}", report.summary, db.url), false))
    }
}

/// `a..=b` for consecutive seeds, else the list.
fn describe_seeds(seeds: &[u64]) -> String {
    match (seeds.first(), seeds.last()) {
        (Some(first), Some(last))
            if seeds.len() > 2 && seeds.windows(2).all(|w| w[1] == w[0].wrapping_add(1)) =>
        {
            format!("{first}..={last}")
        }
        _ => format!("{seeds:?}"),
    }
}

fn append(path: &PathBuf, text: &str) -> anyhow::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    writeln!(file, "{text}").with_context(|| format!("writing {}", path.display()))
}
