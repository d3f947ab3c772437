//! Module loading: memory-cache hits, single flight, digest checks, clear link/entry errors,
//! and hot reload by digest with the old version still running.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use jobwheel_wasm::{LoadSource, Outcome, WasmError};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{self, End};
use crate::support::{Fixture, Log, input, load_with_source, runtime};

#[tokio::test]
async fn second_load_is_a_memory_hit_without_fetch() {
    let runtime = runtime();
    let fixture = fixtures::printing("hi\n", "", End::Return);
    let (_, first) = load_with_source(&runtime, &fixture).await;
    let load = runtime
        .module(&fixture.digest.to_uppercase(), || async {
            anyhow::bail!("fetch must not be called on a hit")
        })
        .await
        .expect("memory hit");
    assert_eq!((first, load.source), (LoadSource::Compiled, LoadSource::Memory));
    assert_eq!(load.module.digest(), fixture.digest);
}

#[tokio::test]
async fn concurrent_first_loads_fetch_and_compile_once() {
    let runtime = runtime();
    let fixture = fixtures::printing("hi\n", "", End::Return);
    let fetches = Arc::new(AtomicUsize::new(0));
    let fetch = || {
        let (fetches, bytes) = (fetches.clone(), fixture.bytes.clone());
        || async move {
            fetches.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Ok(bytes)
        }
    };
    let (a, b) =
        tokio::join!(runtime.module(&fixture.digest, fetch()), runtime.module(&fixture.digest, fetch()));
    let mut sources = vec![a.expect("load a").source, b.expect("load b").source];
    sources.sort_by_key(|s| format!("{s:?}"));
    assert_eq!(sources, vec![LoadSource::Compiled, LoadSource::Memory]);
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    assert_eq!(runtime.cached_modules(), 1);
}

async fn load_error(fixture: &Fixture, digest: &str) -> WasmError {
    let bytes = fixture.bytes.clone();
    runtime().module(digest, || async move { Ok(bytes) }).await.expect_err("load must fail")
}

#[tokio::test]
async fn digest_mismatch_is_rejected() {
    let fixture = fixtures::printing("hi\n", "", End::Return);
    let wrong = fixtures::printing("other\n", "", End::Return).digest;
    match load_error(&fixture, &wrong).await {
        WasmError::DigestMismatch { expected, actual } => {
            assert_eq!((expected, actual), (wrong, fixture.digest))
        }
        other => panic!("expected a digest mismatch, got {other}"),
    }
}

#[tokio::test]
async fn malformed_digest_is_rejected_before_fetching() {
    let fixture = fixtures::printing("hi\n", "", End::Return);
    let error = load_error(&fixture, "../../etc/passwd").await;
    assert!(matches!(error, WasmError::InvalidDigest { .. }), "{error}");
}

#[tokio::test]
async fn fetch_failure_is_reported_and_retried() {
    let runtime = runtime();
    let fixture = fixtures::printing("hi\n", "", End::Return);
    let error = runtime.module(&fixture.digest, || async { anyhow::bail!("admin unreachable") }).await;
    assert!(
        matches!(&error, Err(WasmError::Fetch { message, .. }) if message == "admin unreachable"),
        "{error:?}"
    );
    let (_, source) = load_with_source(&runtime, &fixture).await;
    assert_eq!(source, LoadSource::Compiled);
}

#[tokio::test]
async fn not_wasm_fails_to_compile() {
    let garbage = Fixture::from_bytes(b"#!/bin/sh\necho not wasm\n".to_vec());
    let error = load_error(&garbage, &garbage.digest).await;
    assert!(matches!(error, WasmError::Compile { .. }), "{error}");
}

#[tokio::test]
async fn unknown_import_fails_at_load_naming_it() {
    let fixture =
        Fixture::wat(r#"(module (import "env" "launch_missiles" (func)) (func (export "_start")))"#);
    let error = load_error(&fixture, &fixture.digest).await;
    let WasmError::Link { message, .. } = &error else { panic!("expected a link error, got {error}") };
    assert!(message.contains("env::launch_missiles"), "{message}");
}

#[tokio::test]
async fn missing_entry_export_fails_at_load() {
    let fixture = Fixture::wat(r#"(module (func (export "main")))"#);
    let error = load_error(&fixture, &fixture.digest).await;
    let WasmError::Entry { message, .. } = &error else { panic!("expected an entry error, got {error}") };
    assert!(message.contains("no `_start` export"), "{message}");

    let wrong_type = Fixture::wat(r#"(module (func (export "_start") (param i32)))"#);
    let error = load_error(&wrong_type, &wrong_type.digest).await;
    assert!(matches!(error, WasmError::Entry { .. }), "{error}");
}

#[tokio::test]
async fn validate_accepts_good_and_rejects_bad_modules() {
    let runtime = runtime();
    let good = fixtures::printing("hi\n", "", End::Return);
    assert_eq!(runtime.validate(good.bytes.clone()).await.expect("valid"), good.digest);
    let bad = Fixture::wat(r#"(module (import "env" "f" (func)) (func (export "_start")))"#);
    assert!(matches!(runtime.validate(bad.bytes).await, Err(WasmError::Link { .. })));
    assert_eq!(runtime.cached_modules(), 0, "validate does not cache");
}

#[tokio::test]
async fn hot_reload_runs_new_digest_while_old_version_keeps_running() {
    let runtime = runtime();
    let v1 =
        load_with_source(&runtime, &fixtures::spinning("v1 started", Some((200_000, "v1 tick")))).await.0;
    let log_v1 = Log::new();
    let cancel_v1 = CancellationToken::new();
    let run_v1 = tokio::spawn({
        let (runtime, log, cancel) = (runtime.clone(), log_v1.clone(), cancel_v1.clone());
        async move { runtime.run(&v1, input(""), log.sink(), cancel).await }
    });
    log_v1.wait_for("v1 tick", 1, Duration::from_secs(10)).await;

    let v2 = load_with_source(&runtime, &fixtures::printing("v2 says hi\n", "", End::Return)).await.0;
    let log_v2 = Log::new();
    let report_v2 = runtime.run(&v2, input(""), log_v2.sink(), CancellationToken::new()).await;
    assert_eq!(report_v2.outcome, Outcome::Succeeded { message: None });
    assert_eq!(log_v2.guest_lines(), vec!["v2 says hi"]);

    // v1 is still running its own code after v2 was loaded and ran.
    let ticks = log_v1.count("v1 tick");
    log_v1.wait_for("v1 tick", ticks + 2, Duration::from_secs(10)).await;
    cancel_v1.cancel();
    let report_v1 = run_v1.await.expect("v1 task");
    assert_eq!(report_v1.outcome, Outcome::Cancelled);
    assert!(log_v1.guest_lines().iter().all(|l| l.starts_with("v1 ")), "{:?}", log_v1.guest_lines());
}
