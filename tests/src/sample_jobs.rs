//! The sample Wasm jobs (`sample-jobs/`), built once per test process for `wasm32-wasip1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds every sample job (release, `wasm32-wasip1`) on first call and returns the target dir.
/// `JOBWHEEL_SAMPLE_JOBS_TARGET_DIR` overrides where they are built.
fn built() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target = std::env::var_os("JOBWHEEL_SAMPLE_JOBS_TARGET_DIR")
            .map_or_else(|| repo().join("sample-jobs/target"), PathBuf::from);
        let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["build", "--release", "--target", "wasm32-wasip1", "--manifest-path"])
            .arg(repo().join("sample-jobs/Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("run cargo to build sample-jobs");
        assert!(status.success(), "building sample-jobs for wasm32-wasip1 failed (is the target installed?)");
        target.join("wasm32-wasip1/release")
    })
}

/// The bytes of sample job `name` (e.g. `hello`, `cpu-burner`).
pub fn sample_job(name: &str) -> Vec<u8> {
    let path = built().join(format!("{name}.wasm"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}
