//! The sample Wasm jobs (`sample-jobs/`), built once per test process: preview1 modules for
//! `wasm32-wasip1`, components (`http-check`, `http-stream`, `sandbox-probe`) for `wasm32-wasip2`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the sample jobs are built: `JOBWHEEL_SAMPLE_JOBS_TARGET_DIR`, else `sample-jobs/target`.
fn target_dir() -> PathBuf {
    std::env::var_os("JOBWHEEL_SAMPLE_JOBS_TARGET_DIR")
        .map_or_else(|| repo().join("sample-jobs/target"), PathBuf::from)
}

/// Runs `cargo build --release --target <target> <extra>` on the sample-jobs workspace and
/// returns the directory of the built `.wasm` files.
fn build(target: &str, extra: &[&str]) -> PathBuf {
    let dir = target_dir();
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--target", target])
        .args(extra)
        .arg("--manifest-path")
        .arg(repo().join("sample-jobs/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &dir)
        .status()
        .expect("run cargo to build sample-jobs");
    assert!(status.success(), "building sample-jobs for {target} failed (is the target installed?)");
    dir.join(target).join("release")
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The bytes of preview1 sample job `name` (e.g. `hello`, `cpu-burner`).
pub fn sample_job(name: &str) -> Vec<u8> {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    read(BUILT.get_or_init(|| build("wasm32-wasip1", &[])), name)
}

/// The bytes of component sample job `name` (`http-check`, `http-stream`, `sandbox-probe`), built for
/// `wasm32-wasip2`.
pub fn sample_component(name: &str) -> Vec<u8> {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    read(
        BUILT.get_or_init(|| {
            build("wasm32-wasip2", &["-p", "http-check", "-p", "http-stream", "-p", "sandbox-probe"])
        }),
        name,
    )
}

/// How long a test waits for a Python or JavaScript component's first run or preparation: the
/// executor compiles each 15–19 MB component first (dev profile), which alone took over 30 s on a
/// busy 2-core machine.
pub const FIRST_COMPONENT_COMPILE: std::time::Duration = std::time::Duration::from_secs(300);

/// The Python and JavaScript component `name` (`http-check`, `workflow-step`) that
/// `scripts/test.sh` built into `JOBWHEEL_GUEST_COMPONENTS`, as `(language, bytes)`. Required
/// under `CI`; elsewhere an empty list without it (the toolchains take minutes to install).
pub fn guest_components(name: &str) -> anyhow::Result<Vec<(&'static str, Vec<u8>)>> {
    let Some(dir) = std::env::var_os("JOBWHEEL_GUEST_COMPONENTS") else {
        anyhow::ensure!(std::env::var_os("CI").is_none(), "JOBWHEEL_GUEST_COMPONENTS must be set in CI");
        return Ok(Vec::new());
    };
    let mut all = Vec::new();
    for language in ["python", "js"] {
        let path = Path::new(&dir).join(language).join(format!("{name}.wasm"));
        let bytes =
            std::fs::read(&path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        all.push((language, bytes));
    }
    Ok(all)
}

/// `bytes` with a custom section `jobwheel-bench` holding `version` appended: the same code
/// under a new digest (custom sections may follow the last section of a module or component).
pub fn with_marker(bytes: &[u8], version: u32) -> Vec<u8> {
    let name = b"jobwheel-bench";
    let mut payload = vec![u8::try_from(name.len()).unwrap_or(u8::MAX)];
    payload.extend_from_slice(name);
    payload.extend_from_slice(&version.to_le_bytes());
    let mut out = bytes.to_vec();
    out.push(0); // custom section id
    out.push(u8::try_from(payload.len()).unwrap_or(u8::MAX)); // < 128: a one-byte LEB128
    out.extend_from_slice(&payload);
    out
}
