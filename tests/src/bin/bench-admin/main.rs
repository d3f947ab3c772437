//! `bench-admin`: trigger throughput, lateness and cost of a real `jobwheel-admin` process.
//!
//! Fills an empty database with `--jobs` jobs (FIX_RATE every second, CRON every
//! `--cron-period` seconds, or stopped jobs for a manual-trigger flood through the management
//! API), starts `--executors` executors in this process (a no-op BEAN handler that records when
//! each run arrived) and the `jobwheel-admin` binary beside this one, lets it warm up, measures
//! `--duration` seconds, stops the jobs and waits for the last callbacks. With
//! `--executor-process` the executors are real `jobwheel-executor` processes instead and a run
//! counts when it starts on one (`end_to_end.rs`). Every scheduled
//! trigger of the window is then checked in the database (durable-ring claim → log row →
//! trigger code → handle code), so lost and doubled triggers are counted, not guessed.
//! Lateness is (run arrival on the executor − scheduled fire time). `--ratchjob` runs the same
//! load against ratchjob instead (`ratchjob.rs`). See docs/benchmarks.md.

mod counters;
mod end_to_end;
mod measure;
mod ratchjob;
mod report;
mod scale;
mod setup;
mod statements;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use jobwheel_admin::store::JobId;
use measure::{ProcSample, TICKS_PER_SECOND, sample};
use report::{cron_fires_in, print_lateness_and_cost, report_manual, report_scheduled};
use setup::{API_TOKEN, Mode, now_ms};

#[derive(Debug, Parser)]
struct Args {
    /// Database of the run; must be empty. Default: a new SQLite file under $TMPDIR.
    #[arg(long)]
    database_url: Option<String>,
    #[arg(long, value_enum, default_value = "fix-rate")]
    mode: Mode,
    #[arg(long, default_value_t = 1000)]
    jobs: usize,
    /// Seconds between fires of each CRON job: a divisor of 60, or whole minutes dividing an
    /// hour (3600: hourly jobs spread over the hour).
    #[arg(long, default_value_t = 10)]
    cron_period: u32,
    #[arg(long, default_value_t = 1)]
    executors: usize,
    /// Admin processes on the database (more than one: they share the scheduling; PostgreSQL or
    /// MySQL only). Their CPU is reported each and in total.
    #[arg(long, default_value_t = 1)]
    admins: usize,
    /// Seconds of scheduling before the measured window.
    #[arg(long, default_value_t = 10)]
    warmup: u64,
    /// Seconds measured.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Requests in flight during a manual-trigger flood.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Scrape the admin's `/metrics` every this many seconds during the window, as Prometheus
    /// would (0: never). For the metrics overhead row of docs/benchmarks.md.
    #[arg(long, default_value_t = 0)]
    scrape_every: u64,
    /// Run the same load against this ratchjob binary (crates.io `ratchjob`) instead of
    /// `jobwheel-admin`, with in-process executors or (`--executor-process`) end to end; see
    /// `ratchjob.rs`.
    #[arg(long)]
    ratchjob: Option<std::path::PathBuf>,
    /// End to end: `--executors` real `jobwheel-executor` processes running `demoJobHandler`,
    /// a run counted when its job-log file is created (`end_to_end.rs`).
    #[arg(long)]
    executor_process: bool,
    /// In-process executors in dial-out mode: the admin sends each `/run` down the executor's
    /// WebSocket instead of POSTing it (docs/executor.md, "Dial-out executors").
    #[arg(long)]
    dial_out: bool,
    /// After the window: the pre-read's time, the job list's query times, and the time from
    /// a SIGKILLed admin's restart to its first fresh fire (`scale.rs`; in-process executors).
    #[arg(long)]
    scale_checks: bool,
    /// Start with this many fired claims in `jobwheel_ring_claim`, their fire times spread over
    /// the hour before the run: the table of an admin that has fired this many claims an hour
    /// and keeps them for the hourly purge (`CLAIM_KEEP_MS`), so the window sees that table's
    /// size and its purges (SQLite, PostgreSQL). 0: an empty table.
    #[arg(long, default_value_t = 0)]
    prefill_fired_claims: u64,
    /// Start with this many finished log rows, spread over the time they take at this run's
    /// rate before it: the log table the report monitor's minute pass counts (SQLite,
    /// PostgreSQL; docs/benchmarks.md, "The report's minute pass"). 0: an empty table.
    #[arg(long, default_value_t = 0)]
    prefill_logs: u64,
}

#[tokio::main]
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    anyhow::ensure!(
        setup::valid_period(args.cron_period),
        "--cron-period must divide 60, or be whole minutes dividing 3600"
    );
    if let Some(binary) = &args.ratchjob {
        return ratchjob::run(&args, binary).await;
    }
    let dir = tempfile::tempdir()?;
    let url = args
        .database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()));
    anyhow::ensure!(args.admins >= 1, "--admins must be at least 1");
    let mut ports = Vec::new();
    for _ in 0..args.admins {
        ports.push(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port());
    }
    let admin_urls: Vec<String> = ports.iter().map(|p| format!("http://127.0.0.1:{p}")).collect();
    let admin_url = admin_urls[0].clone();

    let (executors, arrivals, processes) = if args.executor_process {
        let processes = end_to_end::ExecutorProcesses::start(args.executors, dir.path(), &admin_urls).await?;
        (Vec::new(), setup::Arrivals::default(), Some(processes))
    } else {
        let (executors, arrivals) =
            setup::executors(args.executors, dir.path(), &admin_urls, args.dial_out).await;
        (executors, arrivals, None)
    };
    let addresses: Vec<String> = match &processes {
        Some(processes) => processes.addresses.clone(),
        None if args.dial_out => (0..args.executors).map(setup::dial_address).collect(),
        None => executors.iter().map(|e| format!("http://{}/", e.addr)).collect(),
    };
    let handler = if processes.is_some() { end_to_end::HANDLER } else { setup::HANDLER };
    let executor_pids =
        processes.as_ref().map(end_to_end::ExecutorProcesses::pids).transpose()?.unwrap_or_default();
    let store = jobwheel_admin::store::connect(&setup::writing_url(&url))
        .await
        .context("connecting to the database")?;
    let started = std::time::Instant::now();
    let jobs = setup::database(&*store, &addresses, handler, args.jobs, args.mode, args.cron_period).await?;
    let written = started.elapsed();
    if args.prefill_logs > 0 {
        // Before the jobs' first fire is set: a large prefill takes minutes.
        let per_second = args.jobs / usize::try_from(args.cron_period)?.max(1);
        setup::prefill_logs(&url, &jobs, args.prefill_logs, per_second, now_ms()).await?;
    }
    let first_fire_ms = (now_ms() / 1000 + 8) * 1000;
    setup::start_jobs(&url, &jobs, args.mode, args.cron_period, first_fire_ms).await?;
    if args.prefill_fired_claims > 0 {
        setup::prefill_fired_claims(&url, &jobs, args.prefill_fired_claims, now_ms()).await?;
    }
    let per_second = match args.mode {
        Mode::Cron => args.jobs / usize::try_from(args.cron_period)?,
        _ => args.jobs,
    };

    let mut admins = Vec::new();
    for (n, port) in ports.iter().enumerate() {
        admins.push(setup::admin(&url, *port, &dir.path().join(format!("admin-{n}")), per_second).await?);
    }
    let pids: Vec<u32> = admins.iter().map(|a| a.id().context("admin pid")).collect::<Result<_, _>>()?;

    let window_start = first_fire_ms.max(now_ms()) + i64::try_from(args.warmup * 1000)?;
    let window_end = window_start + i64::try_from(args.duration * 1000)?;
    let flood = Arc::new(AtomicU64::new(0));
    let flooding = (args.mode == Mode::Manual).then(|| {
        tokio::spawn(manual_flood(
            admin_url.clone(),
            jobs.clone(),
            args.concurrency,
            window_end,
            Arc::clone(&flood),
        ))
    });
    let scraping = (args.scrape_every > 0).then(|| {
        tokio::spawn(scrape_metrics(admin_url.clone(), Duration::from_secs(args.scrape_every), window_end))
    });
    sleep_until(window_start).await;
    let db_before = counters::read(&url, &admin_urls).await?;
    let profiled = !url.starts_with("sqlite") && statements::reset(&url).await;
    let before: Vec<ProcSample> = pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    let own_before = sample(std::process::id())?;
    let executors_before: Vec<ProcSample> =
        executor_pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    let flood_before = flood.load(Ordering::Relaxed);
    sleep_until(window_end).await;
    let after: Vec<ProcSample> = pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    let own_after = sample(std::process::id())?;
    let executors_after: Vec<ProcSample> =
        executor_pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    let flood_during = flood.load(Ordering::Relaxed) - flood_before;
    let db_after = counters::read(&url, &admin_urls).await?;
    let shapes = if profiled { statements::read(&url).await? } else { Vec::new() };
    if let Some(flooding) = flooding {
        flooding.await??;
    }
    if let Some(scraping) = scraping {
        let (scrapes, bytes) = scraping.await??;
        println!("metrics: scraped {scrapes} times during the window, last page {bytes} bytes");
    }
    if args.scale_checks {
        anyhow::ensure!(!args.executor_process, "--scale-checks counts fires at in-process executors");
        let (mean, p99, count) = scale::pre_read_time(&admin_url).await?;
        println!("pre-read (lock to commit): mean {mean:.1} ms, p99 ≤ {p99:.0} ms over {count} pre-reads");
        let group = store.list_groups().await?.iter().find(|g| g.group.app_name == "bench").map(|g| g.id.0);
        for (name, ms) in scale::list_queries(&admin_url, i64::from(group.unwrap_or(1)), jobs.len()).await? {
            println!("job list, {name}: {ms:.0} ms");
        }
        // Killing the admin before the window's last runs are out would leave their claims to
        // the restarted one and count its recovery as the window's lateness.
        scale::wait_for_fire_after(&arrivals, window_end, Duration::from_secs(10)).await?;
        let rss_before = sample(pids[0])?.rss_kib / 1024;
        let place = (url.as_str(), ports[0], dir.path().join("admin-0"));
        let (child, answered, fired) =
            scale::restart(&mut admins[0], (place.0, place.1, &place.2), per_second, &arrivals).await?;
        admins[0] = child;
        println!(
            "restart after SIGKILL (RSS before {rss_before} MiB): answering HTTP after {:.1} s, first fresh fire after {:.1} s",
            answered.as_secs_f64(),
            fired.as_secs_f64()
        );
    }
    if jobs.len() > 10_000 {
        scale::stop_all(&url).await?;
    } else {
        for id in &jobs {
            store.stop_job(*id, chrono::Utc::now()).await?;
        }
    }

    let costs: Vec<Cost> =
        before.iter().zip(&after).map(|(b, a)| Cost::between(*b, *a, args.duration)).collect();
    let cost = Cost::total(&costs);
    if costs.len() > 1 {
        for (n, c) in costs.iter().enumerate() {
            println!("admin {n}: CPU {:.2} cores, RSS {:.0} MiB", c.cores, c.rss_mib);
        }
    }
    let own = Cost::between(own_before, own_after, args.duration);
    println!("{} jobs written in {:.1} s", jobs.len(), written.as_secs_f64());
    if executor_pids.is_empty() {
        println!(
            "executors + load generator (this process): CPU {:.2} cores, RSS {:.0} MiB",
            own.cores, own.rss_mib
        );
    } else {
        let costs: Vec<Cost> = executors_before
            .iter()
            .zip(&executors_after)
            .map(|(b, a)| Cost::between(*b, *a, args.duration))
            .collect();
        let executors = Cost::total(&costs);
        println!(
            "jobwheel-executor process(es): CPU {:.2} cores, RSS {:.0} MiB; this process {:.2} cores",
            executors.cores, executors.rss_mib, own.cores
        );
    }
    match args.mode {
        Mode::Manual => report_manual(&url, &args, flood_during, cost).await?,
        Mode::FixRate | Mode::Cron => {
            let window = (window_start, window_end);
            report_scheduled(&url, &args, window, &arrivals, processes.as_ref(), cost).await?;
        }
    }
    let triggers = counters::triggers_in(&url, window_start, window_end).await?;
    counters::print_per_trigger(&db_before, &db_after, triggers);
    if profiled {
        statements::print(&shapes, triggers);
    }
    if admin_urls.len() > 1 {
        let shares = counters::fired_by(&url, &admin_urls, window_start, window_end).await?;
        println!("triggers fired by each admin: {shares:?} of {triggers}");
    }
    drop(admins);
    for executor in executors {
        executor.stop().await?;
    }
    Ok(())
}

async fn sleep_until(epoch_ms: i64) {
    let wait = u64::try_from(epoch_ms - now_ms()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(wait)).await;
}

/// The admin's CPU use (cores) and memory over the window.
#[derive(Debug, Clone, Copy)]
struct Cost {
    cores: f64,
    rss_mib: f64,
    peak_rss_mib: f64,
}

impl Cost {
    /// Several admins together: CPU and memory added up.
    fn total(costs: &[Cost]) -> Cost {
        Cost {
            cores: costs.iter().map(|c| c.cores).sum(),
            rss_mib: costs.iter().map(|c| c.rss_mib).sum(),
            peak_rss_mib: costs.iter().map(|c| c.peak_rss_mib).sum(),
        }
    }

    fn between(before: ProcSample, after: ProcSample, seconds: u64) -> Cost {
        let cpu_s = (after.cpu_ticks - before.cpu_ticks) as f64 / TICKS_PER_SECOND as f64;
        Cost {
            cores: cpu_s / seconds as f64,
            rss_mib: after.rss_kib as f64 / 1024.0,
            peak_rss_mib: after.peak_rss_kib as f64 / 1024.0,
        }
    }
}

/// GETs `/metrics` with the API token every `every` until `until_ms`; how many pages were
/// served and the size of the last one.
async fn scrape_metrics(admin_url: String, every: Duration, until_ms: i64) -> anyhow::Result<(u64, usize)> {
    let http = reqwest::Client::new();
    let (mut scrapes, mut bytes) = (0, 0);
    while now_ms() < until_ms {
        let page = http.get(format!("{admin_url}/metrics")).bearer_auth(API_TOKEN).send().await?;
        anyhow::ensure!(page.status().is_success(), "/metrics answered {}", page.status());
        bytes = page.text().await?.len();
        scrapes += 1;
        tokio::time::sleep(every).await;
    }
    Ok((scrapes, bytes))
}

/// Triggers `jobs` round-robin through the management API until `until_ms`; counts 200s.
async fn manual_flood(
    admin_url: String,
    jobs: Vec<JobId>,
    concurrency: usize,
    until_ms: i64,
    accepted: Arc<AtomicU64>,
) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (http, admin_url, jobs, next, accepted) =
            (http.clone(), admin_url.clone(), jobs.clone(), Arc::clone(&next), Arc::clone(&accepted));
        workers.spawn(async move {
            while now_ms() < until_ms {
                let n = usize::try_from(next.fetch_add(1, Ordering::Relaxed))? % jobs.len();
                let url = format!("{admin_url}/api/v1/jobs/{}/trigger", jobs[n].0);
                let response =
                    http.post(url).bearer_auth(API_TOKEN).json(&serde_json::json!({})).send().await?;
                if response.status().is_success() {
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = workers.join_next().await {
        done??;
    }
    Ok(())
}
