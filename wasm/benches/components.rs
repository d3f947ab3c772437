//! Component benchmark (no harness): size and compile time of the `http-check` component in
//! Rust, Python and JavaScript, warm runs of a component next to a preview1 module, and what one
//! outbound HTTP request through the policy check costs a run, each also recorded by the flight
//! recorder (docs/replay.md) to show what journaling costs. Run with
//! `cargo bench -p jobwheel-wasm --bench components`; the Python and JavaScript components come
//! from `JOBWHEEL_GUEST_COMPONENTS` (built by `scripts/test.sh`) and are skipped without it.
#![allow(clippy::print_stdout, reason = "a benchmark reports its figures on stdout")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobwheel_wasm::{
    Allocation, Flight, FlightReport, LoadedModule, LogSink, NetGrant, NetLimits, NetPolicy, Outcome,
    RunInput, Runtime, RuntimeConfig,
};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

fn main() -> anyhow::Result<()> {
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    tokio.block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let hello = std::fs::read(build("wasm32-wasip1", &[])?.join("hello.wasm"))?;
    let mut components = vec![(
        "Rust",
        std::fs::read(build("wasm32-wasip2", &["-p", "http-check"])?.join("http-check.wasm"))?,
    )];
    if let Some(dir) = std::env::var_os("JOBWHEEL_GUEST_COMPONENTS") {
        for (language, sub) in [("Python", "python"), ("JavaScript", "js")] {
            components.push((language, std::fs::read(Path::new(&dir).join(sub).join("http-check.wasm"))?));
        }
    }

    // Compiled artifacts are shared through a disk cache, so each allocator compiles once.
    let cache = tempfile::tempdir()?;
    let mut config = RuntimeConfig::new(Some(cache.path().to_path_buf()));
    config.http_allow = Arc::new(NetPolicy::parse(&["http://127.0.0.1:*"])?);
    let server = serve().await?;
    let origin = format!("http://127.0.0.1:{}", server.0);
    let grant =
        NetGrant { policy: Arc::new(NetPolicy::parse(&[origin.as_str()])?), limits: NetLimits::default() };

    for allocation in [Allocation::OnDemand, Allocation::Pooling { slots: 16 }] {
        println!("# allocator: {allocation:?}");
        let runtime = Runtime::new(RuntimeConfig { allocation, ..config.clone() })?;
        for (language, bytes) in &components {
            let started = Instant::now();
            let component = load(&runtime, bytes).await?;
            println!(
                "{language} http-check: {:.2} MB, loaded (compiled or from disk) in {:.2} s",
                bytes.len() as f64 / 1e6,
                started.elapsed().as_secs_f64()
            );
            let samples = if *language == "Rust" { 1000 } else { 100 };
            if *language == "Rust" {
                let module = load(&runtime, &hello).await?;
                let plain = RunInput { shard_total: 1, ..RunInput::default() };
                compare("warm run, preview1 module (hello)", &runtime, &module, plain, samples).await?;
                let no_request = input(&grant, &origin, "0");
                compare("warm run, Rust component, no request", &runtime, &component, no_request, samples)
                    .await?;
            }
            let one_request = input(&grant, &origin, "1");
            let label = format!("warm run, {language} component, one GET through the policy");
            compare(&label, &runtime, &component, one_request, samples).await?;
        }
    }
    server.1.abort();
    Ok(())
}

fn input(grant: &NetGrant, origin: &str, repeat: &str) -> RunInput {
    RunInput {
        shard_total: 1,
        env: vec![("CHECK_URL".into(), format!("{origin}/check")), ("CHECK_REPEAT".into(), repeat.into())],
        network: Some(grant.clone()),
        ..RunInput::default()
    }
}

async fn runs(
    runtime: &Runtime,
    module: &LoadedModule,
    input: RunInput,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        // The run's lines, shown only if it fails.
        let lines: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
        let sink: Arc<dyn LogSink> = {
            let lines = Arc::clone(&lines);
            Arc::new(move |line: &str| lines.lock().expect("lines").push(line.to_owned()))
        };
        let started = Instant::now();
        let report = runtime.run(module, input.clone(), sink, CancellationToken::new()).await;
        anyhow::ensure!(
            matches!(report.outcome, Outcome::Succeeded { .. }),
            "run {i} failed: {:?}\n{:#?}",
            report.outcome,
            lines.lock().expect("lines")
        );
        if i >= n / 10 {
            samples.push(started.elapsed());
        }
    }
    Ok(samples)
}

/// Runs `input` plain and recorded, `n` of each in turn (so drift hits both alike), and reports
/// both and the journal's size.
async fn compare(
    label: &str,
    runtime: &Runtime,
    module: &LoadedModule,
    input: RunInput,
    n: usize,
) -> anyhow::Result<()> {
    let recorded = RunInput {
        flight: Flight::Record { secret_key: b"bench".to_vec(), max_body_bytes: 1 << 20 },
        ..input.clone()
    };
    let (mut plain_samples, mut recorded_samples) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        plain_samples.extend(runs(runtime, module, input.clone(), n / 10).await?);
        recorded_samples.extend(runs(runtime, module, recorded.clone(), n / 10).await?);
    }
    report(label, plain_samples);
    report(&format!("{label}, recorded"), recorded_samples);
    let report = runtime.run(module, recorded, Arc::new(|_: &str| {}), CancellationToken::new()).await;
    if let Some(FlightReport::Recorded(journal)) = report.flight {
        println!("  journal: {} bytes as JSON", serde_json::to_vec(&*journal)?.len());
    }
    Ok(())
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    println!("{label}: n={} p50 {:.3} ms p99 {:.3} ms", samples.len(), at(0.5), at(0.99));
}

async fn load(runtime: &Runtime, bytes: &[u8]) -> anyhow::Result<LoadedModule> {
    let digest = hex::encode(Sha256::digest(bytes));
    let bytes = bytes.to_vec();
    Ok(runtime.module(&digest, || async move { Ok(bytes) }).await?.module)
}

/// Answers every connection with `200 fine`; the accept loop ends with the benchmark.
async fn serve() -> anyhow::Result<(u16, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // Read the whole request head first: closing with unread bytes would reset the
                // connection under the guest's feet.
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\nconnection: close\r\n\r\nfine")
                    .await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok((port, task))
}

fn build(target: &str, extra: &[&str]) -> anyhow::Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-jobs");
    let out =
        std::env::var_os("JOBWHEEL_SAMPLE_JOBS_TARGET_DIR").map(PathBuf::from).unwrap_or(dir.join("target"));
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--target", target])
        .args(extra)
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&out)
        .env_remove("CARGO_TARGET_DIR")
        .status()?;
    anyhow::ensure!(status.success(), "building sample jobs for {target} failed");
    Ok(out.join(target).join("release"))
}
