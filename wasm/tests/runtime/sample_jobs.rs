//! The real sample jobs (built with the guest SDK for wasm32-wasip1) through the runtime.
//!
//! The jobs are built once per test process with
//! `cargo build --release --target wasm32-wasip1 --manifest-path sample-jobs/Cargo.toml`
//! (components: `--target wasm32-wasip2 -p http-check -p http-stream -p sandbox-probe`); set `JOBWHEEL_SAMPLE_JOBS_TARGET_DIR`
//! to build elsewhere than `sample-jobs/target`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use jobwheel_wasm::{FailureKind, Outcome, RunInput, RunReport, Runtime};
use tokio_util::sync::CancellationToken;

use crate::support::{Fixture, Log, input, load, runtime};

fn sample_jobs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sample-jobs")
}

/// Builds sample jobs for `target` (with `extra` cargo arguments) and returns the directory
/// holding the `.wasm` files.
fn build(target: &str, extra: &[&str]) -> Result<PathBuf, String> {
    let target_dir = std::env::var_os("JOBWHEEL_SAMPLE_JOBS_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| sample_jobs_dir().join("target"));
    let output = Command::new(env!("CARGO"))
        .args(["build", "--release", "--target", target])
        .args(extra)
        .arg("--manifest-path")
        .arg(sample_jobs_dir().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "building sample jobs for {target} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(target_dir.join(target).join("release"))
}

fn read(built: &Result<PathBuf, String>, name: &str) -> Fixture {
    let dir = built.as_ref().unwrap_or_else(|message| panic!("{message}"));
    let path = dir.join(format!("{name}.wasm"));
    Fixture::from_bytes(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Preview1 sample job `name`, built once per test process.
pub(crate) fn sample(name: &str) -> Fixture {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    read(BUILT.get_or_init(|| build("wasm32-wasip1", &[])), name)
}

/// Component sample job `name` (`http-check`, `http-stream`, `sandbox-probe`), built once per test process.
pub(crate) fn sample_component(name: &str) -> Fixture {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    read(
        BUILT.get_or_init(|| {
            build("wasm32-wasip2", &["-p", "http-check", "-p", "http-stream", "-p", "sandbox-probe"])
        }),
        name,
    )
}

async fn run_sample(runtime: &Runtime, name: &str, input: RunInput) -> (RunReport, Log) {
    let module = load(runtime, &sample(name)).await;
    let log = Log::new();
    let report = runtime.run(&module, input, log.sink(), CancellationToken::new()).await;
    (report, log)
}

#[tokio::test]
async fn hello_logs_its_param() {
    let (report, log) = run_sample(&runtime(), "hello", input("jobwheel")).await;
    assert_eq!(report.outcome, Outcome::Succeeded { message: Some("said hello to jobwheel".to_owned()) });
    assert_eq!(log.guest_lines(), vec!["hello, jobwheel! (job 7, log 4242)"]);
}

#[tokio::test]
async fn failing_fails_with_its_message() {
    let (report, log) = run_sample(&runtime(), "failing", input("x")).await;
    let expected = Outcome::Failed {
        kind: FailureKind::Exit(1),
        message: "exited with code 1: failing on purpose (param: \"x\")".to_owned(),
    };
    assert_eq!(report.outcome, expected);
    assert_eq!(log.guest_lines(), vec!["about to fail on purpose"]);
}

#[tokio::test]
async fn sandbox_probe_is_denied_everything() {
    let (report, log) = run_sample(&runtime(), "sandbox-probe", input("")).await;
    assert_eq!(
        report.outcome,
        Outcome::Succeeded { message: Some("all 10 probes were denied".to_owned()) },
        "{log:?}",
        log = log.lines()
    );
    let lines = log.guest_lines();
    assert_eq!(lines.iter().filter(|l| l.starts_with("denied: ")).count(), 10, "{lines:#?}");
}

#[tokio::test]
async fn memory_hog_fails_with_out_of_memory() {
    let (report, log) = run_sample(&runtime(), "memory-hog", input("")).await;
    let Outcome::Failed { kind: FailureKind::OutOfMemory, message } = &report.outcome else {
        panic!("expected out of memory, got {:?}", report.outcome);
    };
    assert!(message.contains("over the limit of 16777216 bytes"), "{message}");
    assert!(log.count("holding 8 MiB") == 1, "{:?}", log.lines());
    assert!(report.stats.peak_memory_bytes > 8 << 20);
}

#[tokio::test]
async fn sharding_splits_the_items_across_shards() {
    let runtime = runtime();
    let mut messages = Vec::new();
    for index in 0..3 {
        let input = RunInput { shard_index: index, shard_total: 3, ..input("10") };
        let (report, _) = run_sample(&runtime, "sharding", input).await;
        match report.outcome {
            Outcome::Succeeded { message: Some(message) } => messages.push(message),
            other => panic!("shard {index}: {other:?}"),
        }
    }
    assert_eq!(
        messages,
        vec![
            "shard 0/3: processed 3 items 0..3 (sum 3)",
            "shard 1/3: processed 3 items 3..6 (sum 12)",
            "shard 2/3: processed 4 items 6..10 (sum 30)",
        ]
    );
}

#[tokio::test]
async fn cpu_burner_is_stopped_by_the_timeout() {
    let input = RunInput { timeout: Some(Duration::from_millis(300)), ..input("") };
    let (report, log) = run_sample(&runtime(), "cpu-burner", input).await;
    assert_eq!(report.outcome, Outcome::TimedOut { limit: Duration::from_millis(300) });
    assert_eq!(log.guest_lines(), vec!["burning CPU until stopped"]);
}

#[tokio::test]
async fn stdout_flood_is_truncated() {
    let (report, log) = run_sample(&runtime(), "stdout-flood", input("2")).await;
    assert!(
        matches!(&report.outcome, Outcome::Succeeded { message: Some(m) } if m.starts_with("wrote ")),
        "{:?}",
        report.outcome
    );
    assert!(report.stats.output_truncated);
    assert!(report.stats.output_bytes >= 2 << 20);
    assert_eq!(log.count("[jobwheel] output truncated after 1048576 bytes"), 1);
}
