//! The same load against **ratchjob** (crates.io `ratchjob`, a Rust xxl-job-compatible admin
//! with its own Raft store), for issue 14's "admin CPU per trigger below ratchjob's in the same
//! run": `bench-admin --ratchjob <binary>` starts that binary instead of `jobwheel-admin`, with
//! the same in-process executors and no-op handler.
//!
//! The jobs are created through ratchjob's open API (`POST /ratch/v1/job/create`): FIX_RATE
//! becomes its `INTERVAL` of one second, CRON the same expression in its six-field form. Its
//! store cannot be read from here, so runs are counted where they arrive: one expected per job
//! and scheduled second of the window, identified by `(jobId, logDateTime)` of the `/run`
//! request (ratchjob sends the scheduled second there, as upstream does). Callbacks are not
//! checked; lateness, lost and doubled are.
//!
//! With `--executor-process` the executors are real `jobwheel-executor` processes, as in
//! `end_to_end.rs`, and a run counts when its job-log file is born. Nothing on the executor
//! records the scheduled second there, so a run is given the second its start falls in: exact
//! while runs start within a second of it. A run later than that shows as an early run of the
//! next second, and a job then has two runs in one second; the report counts such seconds
//! ("ambiguous") rather than calling them doubled or lost.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use jobwheel_tests::TOKEN;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::end_to_end::{self, ExecutorProcesses};
use super::measure::sample;
use super::setup::{self, HANDLER, Mode, now_ms};
use super::{Args, Cost, cron_fires_in, print_lateness_and_cost, sleep_until};

/// The in-process executors' app name (`jobwheel_tests::test_config`), which they register
/// under; the executor processes register as `bench` (`end_to_end.rs`).
const APP: &str = "test-app";
const PROCESS_APP: &str = "bench";
/// ratchjob's namespace for executors that register without one.
const NAMESPACE: &str = "xxl";

/// Runs the benchmark of `args` against the ratchjob binary `binary` and prints its report.
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) async fn run(args: &Args, binary: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(args.mode != Mode::Manual, "--ratchjob runs fix-rate or cron, not manual");
    anyhow::ensure!(args.admins == 1, "--ratchjob runs one admin");
    let dir = tempfile::tempdir()?;
    let port = free_port()?;
    let api = format!("http://127.0.0.1:{port}");
    let admin = start(binary, port, dir.path()).await?;
    let pid = admin.id().context("ratchjob pid")?;
    let admin_urls = [format!("{api}/xxl-job-admin")];
    let (executors, arrivals, processes) = if args.executor_process {
        let processes = ExecutorProcesses::start(args.executors, dir.path(), &admin_urls).await?;
        (Vec::new(), setup::Arrivals::default(), Some(processes))
    } else {
        let (executors, arrivals) = setup::executors(args.executors, dir.path(), &admin_urls, false).await;
        (executors, arrivals, None)
    };
    let (app, handler) =
        if processes.is_some() { (PROCESS_APP, end_to_end::HANDLER) } else { (APP, HANDLER) };
    let executor_pids = processes.as_ref().map(ExecutorProcesses::pids).transpose()?.unwrap_or_default();
    let http = reqwest::Client::new();
    wait_for_instances(&http, &api, app, args.executors).await?;

    let started = std::time::Instant::now();
    create_jobs(&http, &api, (app, handler), args.jobs, args.mode, args.cron_period).await?;
    let written = started.elapsed();
    // An INTERVAL job's first fire is a second after its creation; let every job start.
    let window_start = now_ms() + 2_000 + i64::try_from(args.warmup * 1000)?;
    let window_start = window_start - window_start.rem_euclid(1000);
    let window_end = window_start + i64::try_from(args.duration * 1000)?;
    sleep_until(window_start).await;
    let (before, own_before) = (sample(pid)?, sample(std::process::id())?);
    let executors_before: Vec<_> = executor_pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    sleep_until(window_end).await;
    let (after, own_after) = (sample(pid)?, sample(std::process::id())?);
    let executors_after: Vec<_> = executor_pids.iter().map(|p| sample(*p)).collect::<Result<_, _>>()?;
    // Runs of the window's last second still on their way (bounded).
    sleep_until(window_end + 3_000).await;
    if let Some(processes) = &processes {
        processes.collect(&arrivals, true)?;
        for a in arrivals.lock().expect("arrivals").iter_mut() {
            a.scheduled_ms = a.at_ms - a.at_ms.rem_euclid(1000);
        }
    }

    let cost = Cost::between(before, after, args.duration);
    let own = Cost::between(own_before, own_after, args.duration);
    let executors_cost = Cost::total(
        &executors_before
            .iter()
            .zip(&executors_after)
            .map(|(b, a)| Cost::between(*b, *a, args.duration))
            .collect::<Vec<_>>(),
    );
    let expected = match args.mode {
        Mode::FixRate => args.jobs as u64 * args.duration,
        _ => cron_fires_in(args.jobs as u64, u64::from(args.cron_period), window_start, window_end),
    };
    let mut runs: HashMap<(i32, i64), Vec<i64>> = HashMap::new();
    for a in arrivals.lock().expect("arrivals").iter() {
        if (window_start..window_end).contains(&a.scheduled_ms) {
            runs.entry((a.job_id, a.scheduled_ms)).or_default().push(a.at_ms);
        }
    }
    let doubled = runs.values().filter(|v| v.len() > 1).count();
    let (doubled, ambiguous) = if processes.is_some() { (0, doubled) } else { (doubled, 0) };
    let mut lateness: Vec<i64> =
        runs.iter().flat_map(|((_, scheduled), at)| at.iter().map(move |t| t - scheduled)).collect();
    let mut per_second: HashMap<i64, u64> = HashMap::new();
    for (_, scheduled) in runs.keys() {
        *per_second.entry(*scheduled / 1000).or_default() += 1;
    }
    let slowest = per_second.values().min().copied().unwrap_or(0);

    println!("{} jobs created in {:.1} s", args.jobs, written.as_secs_f64());
    if executor_pids.is_empty() {
        println!(
            "executors + load generator (this process): CPU {:.2} cores, RSS {:.0} MiB",
            own.cores, own.rss_mib
        );
    } else {
        println!(
            "jobwheel-executor process(es): CPU {:.2} cores, RSS {:.0} MiB; this process {:.2} cores",
            executors_cost.cores, executors_cost.rss_mib, own.cores
        );
    }
    println!(
        "mode {:?}, {} jobs, {} executor(s), ratchjob {}, {} s window",
        args.mode,
        args.jobs,
        args.executors,
        binary.display(),
        args.duration
    );
    println!(
        "  scheduled runs expected {expected}; arrived {} ({:.0}/s; slowest second {slowest}); doubled {doubled}; lost {}",
        runs.len(),
        runs.len() as f64 / args.duration as f64,
        expected.saturating_sub(runs.len() as u64)
    );
    if processes.is_some() {
        println!(
            "  ambiguous (a job with two runs starting in one second: a run over 1 s late, or doubled) {ambiguous}"
        );
    }
    print_lateness_and_cost(&mut lateness, cost);
    drop(admin);
    for executor in executors {
        executor.stop().await?;
    }
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts ratchjob with its API on `port`, its console and Raft ports free ones, its data under
/// `dir` and the executors' access token; waits (bounded) until its API answers.
async fn start(binary: &Path, port: u16, dir: &Path) -> anyhow::Result<Child> {
    let log = std::fs::File::create(dir.join("ratchjob.log"))?;
    let child = Command::new(binary)
        .env("RATCH_HTTP_API_PORT", port.to_string())
        .env("RATCH_HTTP_CONSOLE_PORT", free_port()?.to_string())
        .env("RATCH_GRPC_CLUSTER_PORT", free_port()?.to_string())
        .env("RATCH_DATA_DIR", dir.join("ratch_db"))
        .env("RATCH_XXL_DEFAULT_ACCESS_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let url = format!("http://127.0.0.1:{port}/ratch/v1/namespace/list");
    let deadline = now_ms() + 30_000;
    while reqwest::get(&url).await.is_err() {
        if now_ms() > deadline {
            bail!("ratchjob did not answer within 30 s; see {}", dir.join("ratchjob.log").display());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(child)
}

/// Waits (bounded) until ratchjob lists `count` instances of the executors' app.
async fn wait_for_instances(
    http: &reqwest::Client,
    api: &str,
    app: &str,
    count: usize,
) -> anyhow::Result<()> {
    let url = format!("{api}/ratch/v1/app/instance/addrs?namespace={NAMESPACE}&appName={app}");
    let deadline = now_ms() + 30_000;
    loop {
        let reply: Value = http.get(&url).send().await?.json().await?;
        let listed = reply["data"].as_array().map_or(0, Vec::len);
        if listed >= count {
            return Ok(());
        }
        if now_ms() > deadline {
            bail!("ratchjob lists {listed} of {count} executors after 30 s: {reply}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates the `jobs` jobs of `(app, handler)` through the open API, 16 requests in flight.
async fn create_jobs(
    http: &reqwest::Client,
    api: &str,
    (app, handler): (&str, &str),
    jobs: usize,
    mode: Mode,
    period: u32,
) -> anyhow::Result<()> {
    let url = format!("{api}/ratch/v1/job/create");
    let mut pending = tokio::task::JoinSet::new();
    for i in 0..jobs {
        let mut body = json!({
            "appName": app, "namespace": NAMESPACE, "key": format!("bench-{i}"),
            "description": format!("bench job {i}"), "handleName": handler, "runMode": "BEAN",
            "routerStrategy": "ROUND_ROBIN", "blockingStrategy": "SERIAL_EXECUTION",
            "pastDueStrategy": "DEFAULT", "enable": true,
        });
        if mode == Mode::FixRate {
            body["scheduleType"] = json!("INTERVAL");
            body["intervalSecond"] = json!(1);
        } else {
            // The same seconds as setup.rs's Quartz expressions, in the `cron` crate's fields.
            let second = i % period as usize;
            body["scheduleType"] = json!("CRON");
            // Quartz's trailing `?` (day of week) is `*` there.
            let quartz = crate::setup::cron_conf(i64::try_from(second)?, period);
            body["cronValue"] = json!(quartz.replace('?', "*"));
        }
        let (http, url) = (http.clone(), url.clone());
        pending.spawn(async move {
            let reply: Value = http.post(&url).json(&body).send().await?.json().await?;
            anyhow::ensure!(
                reply["success"] != json!(false) && reply["code"] != json!(500),
                "job {i}: {reply}"
            );
            anyhow::Ok(())
        });
        if pending.len() >= 16 {
            pending.join_next().await.context("a creation task")???;
        }
    }
    while let Some(done) = pending.join_next().await {
        done??;
    }
    Ok(())
}
