//! `bench-executor`: measures `/run` → callback throughput and latency of one executor.
//!
//! Starts a callback sink (a minimal admin) and an executor in this process, fires `--triggers`
//! triggers spread over `--jobs` job ids with at most `--concurrency` requests in flight, and
//! reports sustained runs per second plus p50/p99/max latency from sending `/run` to receiving
//! the run's callback. `--kind bean` runs a no-op BEAN handler; `--kind shell` a shell GLUE
//! script printing a greeting (one process per run); `--kind wasm` the `hello` sample job as
//! GLUE_WASM (compiled once, then a fresh sandbox per run). `--lines N` makes the BEAN handler
//! log N lines; `--job-logs both|admin` ships them to the sink (which counts them) instead of or
//! beside the files; `--rate R` paces the triggers at R a second; the process's CPU is printed.
//! See docs/benchmarks.md.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use clap::Parser;
use jobwheel_executor::{Handlers, JobContext};
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, CallbackBody};
use jobwheel_tests::{TOKEN, test_config, trigger, wasm_trigger};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

#[derive(Debug, Parser)]
struct Args {
    /// `bean` (no-op native handler), `shell` (hello script) or `wasm` (hello sample job).
    #[arg(long, default_value = "bean")]
    kind: String,
    #[arg(long, default_value_t = 20_000)]
    triggers: usize,
    /// Distinct job ids (each has its own serial queue).
    #[arg(long, default_value_t = 200)]
    jobs: i32,
    /// Most `/run` requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// `executorTimeout` of every trigger, in seconds (0 = none). With `--kind burner` (the
    /// `cpu-burner` sample job, an infinite loop) every run lasts exactly this long, so
    /// `--jobs` runs are alive at once and the printed peak RSS measures their footprint.
    #[arg(long, default_value_t = 0)]
    timeout: i32,
    /// Lines the BEAN handler logs per run.
    #[arg(long, default_value_t = 0)]
    lines: usize,
    /// Where the executor's job log lines go (`--job-logs`).
    #[arg(long, value_enum, default_value_t = jobwheel_executor::JobLogs::Files)]
    job_logs: jobwheel_executor::JobLogs,
    /// Triggers a second (0: as fast as `--concurrency` allows).
    #[arg(long, default_value_t = 0)]
    rate: u32,
}

/// Shipped log lines the sink received, and the microseconds it spent decoding them.
#[derive(Default)]
struct Shipped {
    lines: std::sync::atomic::AtomicU64,
    busy_us: std::sync::atomic::AtomicU64,
}

/// When each log id's callback arrived, and with which handle code.
type Arrivals = Arc<Mutex<HashMap<i64, (Instant, i32)>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let arrivals: Arrivals = Arc::default();
    let shipped: Arc<Shipped> = Arc::default();
    let sink = TcpListener::bind("127.0.0.1:0").await?;
    let sink_url = format!("http://{}", sink.local_addr()?);
    let module = match args.kind.as_str() {
        "wasm" => jobwheel_tests::sample_jobs::sample_job("hello"),
        "burner" => jobwheel_tests::sample_jobs::sample_job("cpu-burner"),
        _ => Vec::new(),
    };
    let digest = hex::encode(Sha256::digest(&module));
    let module = bytes::Bytes::from(module);
    let app = Router::new()
        .route("/api/callback", post(callback))
        .route("/api/registry", post(|| async { axum::Json(json!({"code": 200})) }))
        .route("/api/registryRemove", post(|| async { axum::Json(json!({"code": 200})) }))
        .with_state(Arc::clone(&arrivals))
        .route("/api/wasm/{digest}", get(move || async move { module.clone() }))
        .merge(Router::new().route("/api/logShip", post(ship)).with_state(Arc::clone(&shipped)));
    tokio::spawn(async move { axum::serve(sink, app).await });

    let dir = tempfile::tempdir()?;
    let mut config = test_config(dir.path());
    config.admin_addresses = vec![sink_url];
    config.script_glue = true;
    config.max_queue = args.triggers;
    config.job_logs = args.job_logs;
    let mut handlers = Handlers::new();
    let lines = args.lines;
    handlers.register("noop", move |ctx: JobContext| async move {
        for n in 0..lines {
            ctx.log(format!("step {n}: processed 250 records from batch 8f3a2c in 12 ms"));
        }
        Ok(())
    });
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let executor_url = format!("http://{}", listener.local_addr()?);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stop_rx.await;
    }));

    let body_for = |i: usize| -> Value {
        let job_id = i32::try_from(i).unwrap_or(0) % args.jobs + 1;
        let log_id = i64::try_from(i).unwrap_or(0) + 1;
        let mut body = match args.kind.as_str() {
            "shell" => {
                let mut body = trigger(job_id, log_id, "GLUE_SHELL", "", "bench");
                body["glueSource"] = json!("echo \"hello, $1!\"\n");
                body["glueUpdatetime"] = json!(1);
                body
            }
            "wasm" | "burner" => wasm_trigger(job_id, log_id, &digest, "bench"),
            _ => trigger(job_id, log_id, "BEAN", "noop", ""),
        };
        body["executorTimeout"] = json!(args.timeout);
        body
    };
    if !matches!(args.kind.as_str(), "bean" | "shell" | "wasm" | "burner") {
        bail!("--kind must be bean, shell, wasm or burner");
    }

    let http = reqwest::Client::builder().pool_max_idle_per_host(args.concurrency).build()?;
    let permits = Arc::new(Semaphore::new(args.concurrency));
    let sent: Arc<Mutex<HashMap<i64, Instant>>> = Arc::default();
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..args.triggers {
        if args.rate > 0 {
            let at = started + Duration::from_secs_f64(i as f64 / f64::from(args.rate));
            tokio::time::sleep_until(at.into()).await;
        }
        let permit = Arc::clone(&permits).acquire_owned().await?;
        let (http, url, body, sent) =
            (http.clone(), format!("{executor_url}/run"), body_for(i), Arc::clone(&sent));
        requests.spawn(async move {
            let log_id = body["logId"].as_i64().unwrap_or_default();
            sent.lock().expect("sent").insert(log_id, Instant::now());
            let reply: Value =
                http.post(url).header(ACCESS_TOKEN_HEADER, TOKEN).json(&body).send().await?.json().await?;
            drop(permit);
            anyhow::ensure!(reply["code"] == 200, "trigger {log_id} rejected: {reply}");
            Ok::<(), anyhow::Error>(())
        });
    }
    while let Some(result) = requests.join_next().await {
        result??;
    }
    let dispatched = started.elapsed();

    let deadline = Instant::now() + Duration::from_secs(300);
    while arrivals.lock().expect("arrivals").len() < args.triggers {
        if Instant::now() > deadline {
            bail!("only {} of {} callbacks arrived", arrivals.lock().expect("arrivals").len(), args.triggers);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Shipped lines settle: nothing new for a second.
    let mut seen = u64::MAX;
    while args.job_logs.ships() && shipped.lines.load(std::sync::atomic::Ordering::Relaxed) != seen {
        seen = shipped.lines.load(std::sync::atomic::Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let cpu = cpu_seconds() - cpu_before;
    let elapsed = started.elapsed().as_secs_f64() - if args.job_logs.ships() { 1.0 } else { 0.0 };
    let sink_cpu = shipped.busy_us.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e6;
    let arrivals = arrivals.lock().expect("arrivals").clone();
    let sent = sent.lock().expect("sent").clone();
    let last = arrivals.values().map(|(at, _)| *at).max().context("no callbacks")?;
    let mut codes: Vec<(i32, usize)> = Vec::new();
    for (_, code) in arrivals.values() {
        match codes.iter_mut().find(|(c, _)| c == code) {
            Some((_, n)) => *n += 1,
            None => codes.push((*code, 1)),
        }
    }
    codes.sort_unstable();
    let codes: Vec<String> = codes.iter().map(|(c, n)| format!("{c}:{n}")).collect();
    let total = last.duration_since(started);
    let mut latencies: Vec<Duration> =
        sent.iter().map(|(id, at)| arrivals[id].0.saturating_duration_since(*at)).collect();
    latencies.sort_unstable();
    let pct = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    let line = format!(
        "kind={} triggers={} jobs={} concurrency={} dispatch={:.2}s total={:.2}s throughput={:.0} runs/s \
         latency p50={:.2}ms p99={:.2}ms max={:.2}ms handle_codes={} peak_rss={} job_logs={:?} lines={} \
         shipped_lines={} cpu={:.2}s ({:.3} cores, of which the sink decoding shipments {:.2}s)",
        args.kind,
        args.triggers,
        args.jobs,
        args.concurrency,
        dispatched.as_secs_f64(),
        total.as_secs_f64(),
        args.triggers as f64 / total.as_secs_f64(),
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        codes.join(","),
        peak_rss(),
        args.job_logs,
        args.lines,
        shipped.lines.load(std::sync::atomic::Ordering::Relaxed),
        cpu,
        cpu / elapsed,
        sink_cpu,
    );
    #[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
    {
        println!("{line}");
    }
    let _ = stop_tx.send(());
    executor.await??;
    Ok(())
}

async fn callback(
    State(arrivals): State<Arrivals>,
    axum::Json(body): axum::Json<CallbackBody>,
) -> axum::Json<Value> {
    let now = Instant::now();
    let mut arrivals = arrivals.lock().expect("arrivals");
    for item in body.into_items() {
        if item.handle_code != 200 && arrivals.is_empty() {
            tracing::warn!(log_id = item.log_id, code = item.handle_code, msg = %item.handle_msg, "first callback failed");
        }
        arrivals.entry(item.log_id).or_insert((now, item.handle_code));
    }
    axum::Json(json!({"code": 200}))
}

/// This process's peak resident set (`VmHWM`), executor and load generator together.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find(|l| l.starts_with("VmHWM:")).map(|l| l[6..].trim().to_owned()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A shipped batch: decoded and its lines counted, as an admin would before storing them.
async fn ship(State(shipped): State<Arc<Shipped>>, body: bytes::Bytes) -> axum::Json<Value> {
    let started = Instant::now();
    let batch = jobwheel_protocol::log_ship::decode(&body).expect("a log batch");
    let lines: usize = batch.pieces.iter().map(|p| p.text.matches('\n').count()).sum();
    shipped.lines.fetch_add(lines as u64, std::sync::atomic::Ordering::Relaxed);
    let busy = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    shipped.busy_us.fetch_add(busy, std::sync::atomic::Ordering::Relaxed);
    axum::Json(json!({"code": 200}))
}

/// This process's user and system CPU so far, in seconds (`/proc/self/stat`, 100 ticks a second).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the closing parenthesis.
    (ticks(11) + ticks(12)) as f64 / 100.0
}
