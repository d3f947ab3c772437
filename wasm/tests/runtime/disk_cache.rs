//! The disk cache: a restarted runtime loads precompiled modules without fetching or
//! compiling, and damaged artifacts are discarded and rebuilt.

use std::path::{Path, PathBuf};

use jobwheel_wasm::{LoadSource, Metering, Outcome, Runtime};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{self, End};
use crate::support::{Fixture, Log, config, input, load_with_source};

fn runtime_with_cache(dir: &Path) -> Runtime {
    let mut config = config();
    config.cache_dir = Some(dir.to_owned());
    Runtime::new(config).expect("runtime")
}

/// The single artifact the cache holds for `fixture`.
fn artifact(dir: &Path, fixture: &Fixture) -> PathBuf {
    let mut found = Vec::new();
    for engine_dir in std::fs::read_dir(dir).expect("cache dir") {
        let path = engine_dir.expect("entry").path().join(format!("{}.cwasm", fixture.digest));
        if path.exists() {
            found.push(path);
        }
    }
    assert_eq!(found.len(), 1, "exactly one artifact for the digest: {found:?}");
    found.remove(0)
}

async fn load_without_fetch(runtime: &Runtime, fixture: &Fixture) -> LoadSource {
    runtime
        .module(&fixture.digest, || async { anyhow::bail!("fetch must not be called") })
        .await
        .expect("load from disk")
        .source
}

#[tokio::test]
async fn restarted_runtime_loads_from_disk_without_compiling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = fixtures::printing("from disk\n", "", End::Return);
    let (_, source) = load_with_source(&runtime_with_cache(dir.path()), &fixture).await;
    assert_eq!(source, LoadSource::Compiled);

    let restarted = runtime_with_cache(dir.path());
    assert_eq!(load_without_fetch(&restarted, &fixture).await, LoadSource::Disk);
    let module =
        restarted.module(&fixture.digest, || async { anyhow::bail!("no fetch") }).await.expect("hit").module;
    let log = Log::new();
    let report = restarted.run(&module, input(""), log.sink(), CancellationToken::new()).await;
    assert_eq!(report.outcome, Outcome::Succeeded { message: None });
    assert_eq!(log.guest_lines(), vec!["from disk"]);
}

#[tokio::test]
async fn corrupted_artifact_is_discarded_and_recompiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = fixtures::printing("recovered\n", "", End::Return);
    load_with_source(&runtime_with_cache(dir.path()), &fixture).await;
    let path = artifact(dir.path(), &fixture);

    // Flip one byte in the middle of the native code.
    let mut bytes = std::fs::read(&path).expect("read artifact");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&path, &bytes).expect("corrupt artifact");

    let restarted = runtime_with_cache(dir.path());
    let (module, source) = load_with_source(&restarted, &fixture).await;
    assert_eq!(source, LoadSource::Compiled, "the corrupt file must not be used");
    let log = Log::new();
    let report = restarted.run(&module, input(""), log.sink(), CancellationToken::new()).await;
    assert_eq!(report.outcome, Outcome::Succeeded { message: None });

    // The rewritten artifact is good again.
    assert_eq!(load_without_fetch(&runtime_with_cache(dir.path()), &fixture).await, LoadSource::Disk);
}

#[tokio::test]
async fn truncated_or_foreign_artifact_is_discarded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = fixtures::printing("again\n", "", End::Return);
    load_with_source(&runtime_with_cache(dir.path()), &fixture).await;
    let path = artifact(dir.path(), &fixture);

    for damage in [b"JWCWASM1".to_vec(), b"\0asm\x01\0\0\0".to_vec(), Vec::new()] {
        std::fs::write(&path, &damage).expect("damage artifact");
        let (_, source) = load_with_source(&runtime_with_cache(dir.path()), &fixture).await;
        assert_eq!(source, LoadSource::Compiled, "damage {damage:?}");
    }
}

#[tokio::test]
async fn differently_configured_engine_uses_its_own_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = fixtures::printing("x\n", "", End::Return);
    load_with_source(&runtime_with_cache(dir.path()), &fixture).await;

    let mut other = config();
    other.cache_dir = Some(dir.path().to_owned());
    // Fuel metering changes the generated code, hence the compatibility hash.
    other.metering = Metering::Off;
    let other = Runtime::new(other).expect("runtime");
    let (_, source) = load_with_source(&other, &fixture).await;
    assert_eq!(source, LoadSource::Compiled);
    assert_eq!(std::fs::read_dir(dir.path()).expect("cache dir").count(), 2);
}
