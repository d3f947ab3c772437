//! Test helpers: runtimes with small limits, module fixtures with their digests, a log sink
//! that can be awaited, and default run inputs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobwheel_wasm::{LoadSource, LoadedModule, LogSink, RunInput, Runtime, RuntimeConfig};
use sha2::{Digest, Sha256};
use tokio::sync::watch;

/// Wasm bytes and their lower-case hex SHA-256.
#[derive(Clone)]
pub(crate) struct Fixture {
    pub(crate) bytes: Vec<u8>,
    pub(crate) digest: String,
}

impl Fixture {
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> Fixture {
        let digest = hex::encode(Sha256::digest(&bytes));
        Fixture { bytes, digest }
    }

    pub(crate) fn wat(source: &str) -> Fixture {
        let bytes =
            wat::parse_str(source).unwrap_or_else(|e| panic!("fixture does not parse: {e}\n{source}"));
        Fixture::from_bytes(bytes)
    }
}

/// Config for tests: no disk cache, 16 MiB memory, everything else default.
pub(crate) fn config() -> RuntimeConfig {
    let mut config = RuntimeConfig::new(None);
    config.max_memory_bytes = 16 << 20;
    config
}

pub(crate) fn runtime() -> Runtime {
    Runtime::new(config()).expect("runtime")
}

/// Loads `fixture`, returning the module and how it was found.
pub(crate) async fn load_with_source(runtime: &Runtime, fixture: &Fixture) -> (LoadedModule, LoadSource) {
    let bytes = fixture.bytes.clone();
    let load = runtime.module(&fixture.digest, || async move { Ok(bytes) }).await.expect("module loads");
    (load.module, load.source)
}

pub(crate) async fn load(runtime: &Runtime, fixture: &Fixture) -> LoadedModule {
    load_with_source(runtime, fixture).await.0
}

pub(crate) fn input(param: &str) -> RunInput {
    RunInput {
        job_id: 7,
        log_id: 4242,
        param: param.to_owned(),
        shard_index: 2,
        shard_total: 5,
        fire_key: "job:7@1900000000000#2/5".to_owned(),
        scheduled_time: 1_900_000_000_000,
        ..RunInput::default()
    }
}

/// Collects log lines and lets a test wait (with a deadline) for one to appear.
#[derive(Clone)]
pub(crate) struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    changed: Arc<watch::Sender<usize>>,
}

impl Log {
    pub(crate) fn new() -> Log {
        Log { lines: Arc::default(), changed: Arc::new(watch::Sender::new(0)) }
    }

    pub(crate) fn sink(&self) -> Arc<dyn LogSink> {
        let log = self.clone();
        Arc::new(move |line: &str| {
            log.lines.lock().expect("log lock").push(line.to_owned());
            log.changed.send_modify(|n| *n += 1);
        })
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("log lock").clone()
    }

    /// Guest lines only (without the runtime's `[jobwheel]` notes).
    pub(crate) fn guest_lines(&self) -> Vec<String> {
        self.lines().into_iter().filter(|l| !l.starts_with("[jobwheel]")).collect()
    }

    pub(crate) fn count(&self, needle: &str) -> usize {
        self.lines().iter().filter(|l| l.contains(needle)).count()
    }

    /// Waits until at least `n` lines contain `needle`, failing the test after `within`.
    pub(crate) async fn wait_for(&self, needle: &str, n: usize, within: Duration) {
        let mut rx = self.changed.subscribe();
        let reached = tokio::time::timeout(within, rx.wait_for(|_| self.count(needle) >= n)).await;
        assert!(
            reached.is_ok(),
            "no {n} log lines containing {needle:?} within {within:?}; log: {:?}",
            self.lines()
        );
    }
}
