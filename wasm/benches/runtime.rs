//! Runtime benchmark (no harness): warm run latency, disk-cache load time, fuel overhead and
//! cancel/deadline → stop latency. Run with `cargo bench -p jobwheel-wasm --bench runtime`;
//! it builds the sample jobs for wasm32-wasip1 first (like the integration tests do).
#![allow(clippy::print_stdout, reason = "a benchmark reports its figures on stdout")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobwheel_wasm::{LoadSource, LoadedModule, LogSink, Metering, Outcome, RunInput, Runtime, RuntimeConfig};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

fn main() -> anyhow::Result<()> {
    let jobs = build_sample_jobs()?;
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    tokio.block_on(async {
        warm_runs(&jobs).await?;
        disk_loads(&jobs).await?;
        fuel_overhead(&jobs).await?;
        stop_latency(&jobs).await
    })
}

fn build_sample_jobs() -> anyhow::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-jobs");
    let target =
        std::env::var_os("JOBWHEEL_SAMPLE_JOBS_TARGET_DIR").map(PathBuf::from).unwrap_or(dir.join("target"));
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--target", "wasm32-wasip1", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .status()?;
    anyhow::ensure!(status.success(), "building sample jobs failed");
    Ok(target.join("wasm32-wasip1/release"))
}

fn wasm(jobs: &Path, name: &str) -> anyhow::Result<Vec<u8>> {
    Ok(std::fs::read(jobs.join(format!("{name}.wasm")))?)
}

async fn load(runtime: &Runtime, bytes: &[u8]) -> anyhow::Result<LoadedModule> {
    let digest = hex::encode(Sha256::digest(bytes));
    let bytes = bytes.to_vec();
    Ok(runtime.module(&digest, || async move { Ok(bytes) }).await?.module)
}

fn quiet() -> Arc<dyn LogSink> {
    Arc::new(|_: &str| {})
}

fn input(param: &str) -> RunInput {
    RunInput {
        job_id: 1,
        log_id: 1,
        param: param.to_owned(),
        shard_index: 0,
        shard_total: 1,
        ..RunInput::default()
    }
}

/// Value at quantile `q` of sorted samples.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn report_latencies(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let (p50, p99, max) = (quantile(&samples, 0.5), quantile(&samples, 0.99), samples[samples.len() - 1]);
    println!("{label}: n={} p50 {} p99 {} max {}", samples.len(), micros(p50), micros(p99), micros(max));
}

async fn run_once(runtime: &Runtime, module: &LoadedModule, param: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let report = runtime.run(module, input(param), quiet(), CancellationToken::new()).await;
    let elapsed = started.elapsed();
    anyhow::ensure!(matches!(report.outcome, Outcome::Succeeded { .. }), "run failed: {:?}", report.outcome);
    Ok(elapsed)
}

/// Instantiate → run → result for a module already in the memory cache.
async fn warm_runs(jobs: &Path) -> anyhow::Result<()> {
    let runtime = Runtime::new(RuntimeConfig::new(None))?;
    let trivial = wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "_start")))"#)?;
    for (label, bytes) in
        [("warm run, hello (Rust + SDK)", wasm(jobs, "hello")?), ("warm run, empty WAT _start", trivial)]
    {
        let module = load(&runtime, &bytes).await?;
        for _ in 0..200 {
            run_once(&runtime, &module, "bench").await?;
        }
        let mut samples = Vec::new();
        for _ in 0..5000 {
            samples.push(run_once(&runtime, &module, "bench").await?);
        }
        report_latencies(label, samples);
    }
    Ok(())
}

/// `Runtime::module` on a fresh runtime whose disk cache holds the artifact.
async fn disk_loads(jobs: &Path) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for name in ["hello", "sha256"] {
        let bytes = wasm(jobs, name)?;
        let digest = hex::encode(Sha256::digest(&bytes));
        let compile_started = Instant::now();
        load(&Runtime::new(RuntimeConfig::new(Some(dir.path().to_owned())))?, &bytes).await?;
        let compile = compile_started.elapsed();
        let mut samples = Vec::new();
        for _ in 0..100 {
            let runtime = Runtime::new(RuntimeConfig::new(Some(dir.path().to_owned())))?;
            let started = Instant::now();
            let load = runtime.module(&digest, || async { anyhow::bail!("unexpected fetch") }).await?;
            samples.push(started.elapsed());
            anyhow::ensure!(load.source == LoadSource::Disk);
        }
        println!(
            "compile + link + write cache, {name} ({} KiB wasm): {:.1} ms",
            bytes.len() / 1024,
            compile.as_secs_f64() * 1e3
        );
        report_latencies(&format!("cached-compiled load from disk, {name}"), samples);
    }
    Ok(())
}

fn config(metering: Metering, epoch: Option<Duration>) -> RuntimeConfig {
    let mut config = RuntimeConfig::new(None);
    config.metering = metering;
    config.epoch_tick = epoch;
    config
}

/// Best of three wall times of one module under each engine configuration.
async fn fuel_overhead(jobs: &Path) -> anyhow::Result<()> {
    let default = RuntimeConfig::new(None);
    let tight_loop = wat::parse_str(
        r#"(module (memory (export "memory") 1)
  (func (export "_start") (local $i i64) (local $acc i64)
    (loop $l
      (local.set $acc (i64.add (i64.mul (local.get $acc) (i64.const 31)) (local.get $i)))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br_if $l (i64.lt_u (local.get $i) (i64.const 1000000000))))
    (i64.store (i32.const 0) (local.get $acc))))"#,
    )?;
    let cases = [
        ("sha256 guest, 64 MiB", wasm(jobs, "sha256")?, "64"),
        ("tight i64 loop, 10^9 iterations (WAT)", tight_loop, ""),
    ];
    for (label, bytes, param) in cases {
        let mut times = Vec::new();
        for (name, config) in [
            ("unmetered", config(Metering::Off, None)),
            ("epoch only", config(Metering::Off, default.epoch_tick)),
            ("fuel + epoch (default)", default.clone()),
        ] {
            let runtime = Runtime::new(config)?;
            let module = load(&runtime, &bytes).await?;
            let mut best = Duration::MAX;
            for _ in 0..3 {
                best = best.min(run_once(&runtime, &module, param).await?);
            }
            times.push((name, best));
        }
        let base = times[0].1.as_secs_f64();
        for (name, best) in times {
            let overhead = (best.as_secs_f64() / base - 1.0) * 100.0;
            println!("{label}: {name}: {:.1} ms ({overhead:+.1} % vs unmetered)", best.as_secs_f64() * 1e3);
        }
    }
    Ok(())
}

/// Time from `cancel()` (kill) and from the timeout (deadline) until `run` returns, on the
/// cpu-burner job.
async fn stop_latency(jobs: &Path) -> anyhow::Result<()> {
    let runtime = Runtime::new(RuntimeConfig::new(None))?;
    let module = load(&runtime, &wasm(jobs, "cpu-burner")?).await?;
    let mut kills = Vec::new();
    let mut deadlines = Vec::new();
    for round in 0..50 {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (runtime, module, cancel) = (runtime.clone(), module.clone(), cancel.clone());
            async move { runtime.run(&module, input(""), quiet(), cancel).await }
        });
        // Let the guest get well into its loop; the offset varies to sample different phases.
        tokio::time::sleep(Duration::from_millis(20 + round % 7)).await;
        let cancelled = Instant::now();
        cancel.cancel();
        let report = task.await?;
        kills.push(cancelled.elapsed());
        anyhow::ensure!(report.outcome == Outcome::Cancelled);

        let limit = Duration::from_millis(20 + round % 7);
        let started = Instant::now();
        let report = runtime
            .run(&module, RunInput { timeout: Some(limit), ..input("") }, quiet(), CancellationToken::new())
            .await;
        deadlines.push(started.elapsed().saturating_sub(limit));
        anyhow::ensure!(report.outcome == Outcome::TimedOut { limit });
    }
    report_latencies("cancel (kill) → run returned, cpu-burner", kills);
    report_latencies("deadline → run returned, cpu-burner", deadlines);
    Ok(())
}
