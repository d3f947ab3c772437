//! The pooling allocator: modules and components run from pool slots with the same limits and
//! outcomes as on demand, and a run that finds every slot taken waits — within its timeout
//! and cancellation — instead of failing.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_wasm::{
    Allocation, FailureKind, NetGrant, NetLimits, NetPolicy, Outcome, RunInput, Runtime, WasmError,
};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{self, End};
use crate::http_server::TestServer;
use crate::sample_jobs::sample_component;
use crate::support::{Log, config, input, load};

fn pooled(slots: u32) -> Runtime {
    let mut config = config();
    config.allocation = Allocation::Pooling { slots };
    config.http_allow = Arc::new(NetPolicy::parse(&["http://127.0.0.1:*"]).expect("allow-list"));
    Runtime::new(config).expect("pooled runtime")
}

/// Starts a guest that loops until cancelled and returns once it holds its slot.
async fn occupy(runtime: &Runtime) -> (CancellationToken, tokio::task::JoinHandle<Outcome>) {
    let looping = load(runtime, &fixtures::spinning("holding the slot", None)).await;
    let log = Log::new();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (runtime, log, cancel) = (runtime.clone(), log.clone(), cancel.clone());
        async move { runtime.run(&looping, input(""), log.sink(), cancel).await.outcome }
    });
    log.wait_for("holding the slot", 1, Duration::from_secs(30)).await;
    (cancel, task)
}

#[tokio::test]
async fn a_run_waits_for_the_only_slot_and_runs_when_it_frees() {
    let runtime = pooled(1);
    let (stop, holder) = occupy(&runtime).await;
    let quick = load(&runtime, &fixtures::printing("quick run done\n", "", End::Return)).await;
    let log = Log::new();
    let waiting = tokio::spawn({
        let (runtime, log) = (runtime.clone(), log.clone());
        async move { runtime.run(&quick, input(""), log.sink(), CancellationToken::new()).await }
    });
    log.wait_for("waiting for a free Wasm slot: all 1 are in use by other runs", 1, Duration::from_secs(30))
        .await;
    assert!(!waiting.is_finished(), "the second run must wait while the slot is held");

    stop.cancel();
    assert_eq!(holder.await.expect("holder"), Outcome::Cancelled);
    let report = waiting.await.expect("waiting run");
    assert_eq!(report.outcome, Outcome::Succeeded { message: None }, "{:?}", log.lines());
    assert_eq!(log.guest_lines(), vec!["quick run done"]);
}

#[tokio::test]
async fn waiting_for_a_slot_counts_against_the_timeout_and_yields_to_cancellation() {
    let runtime = pooled(1);
    let (stop, holder) = occupy(&runtime).await;
    let quick = load(&runtime, &fixtures::printing("never printed\n", "", End::Return)).await;

    let limit = Duration::from_millis(300);
    let timed = RunInput { timeout: Some(limit), ..input("") };
    let log = Log::new();
    let report = runtime.run(&quick, timed, log.sink(), CancellationToken::new()).await;
    assert_eq!(report.outcome, Outcome::TimedOut { limit });
    assert!(log.guest_lines().is_empty(), "{:?}", log.lines());

    let cancel = CancellationToken::new();
    let log = Log::new();
    let cancelled = tokio::spawn({
        let (runtime, log, cancel) = (runtime.clone(), log.clone(), cancel.clone());
        async move { runtime.run(&quick, input(""), log.sink(), cancel).await.outcome }
    });
    log.wait_for("waiting for a free Wasm slot", 1, Duration::from_secs(30)).await;
    cancel.cancel();
    assert_eq!(cancelled.await.expect("cancelled run"), Outcome::Cancelled);

    stop.cancel();
    assert_eq!(holder.await.expect("holder"), Outcome::Cancelled);
}

#[tokio::test]
async fn pooled_runs_keep_the_memory_limit_and_reuse_slots() {
    let runtime = pooled(2);
    let hog = load(&runtime, &fixtures::memory_hog()).await;
    let quick = load(&runtime, &fixtures::printing("ok\n", "", End::Return)).await;
    // More runs than slots, one after another: every slot is returned and reused.
    for _ in 0..5 {
        let report = runtime.run(&hog, input(""), Log::new().sink(), CancellationToken::new()).await;
        let Outcome::Failed { kind: FailureKind::OutOfMemory, message } = &report.outcome else {
            panic!("expected out of memory, got {:?}", report.outcome);
        };
        assert!(message.contains("over the limit of 16777216 bytes"), "{message}");
        assert_eq!(report.stats.peak_memory_bytes, 16 << 20);
        let report = runtime.run(&quick, input(""), Log::new().sink(), CancellationToken::new()).await;
        assert_eq!(report.outcome, Outcome::Succeeded { message: None });
    }
}

#[tokio::test]
async fn a_component_calls_its_allowed_origin_from_a_pool_slot() {
    let runtime = pooled(2);
    let server = TestServer::start().await;
    let origin = format!("http://127.0.0.1:{}", server.port);
    let component = load(&runtime, &sample_component("http-check")).await;
    let grant = NetGrant {
        policy: Arc::new(NetPolicy::parse(&[origin.as_str()]).expect("policy")),
        limits: NetLimits::default(),
    };
    for n in 1..=3 {
        let run = RunInput {
            env: vec![("CHECK_URL".to_owned(), server.url("/ok"))],
            network: Some(grant.clone()),
            timeout: Some(Duration::from_secs(60)),
            ..input("")
        };
        let log = Log::new();
        let report = runtime.run(&component, run, log.sink(), CancellationToken::new()).await;
        assert_eq!(
            report.outcome,
            Outcome::Succeeded { message: Some("status=200".to_owned()) },
            "{:?}",
            log.lines()
        );
        assert_eq!(server.seen().len(), n);
    }
}

/// On demand, a module declaring more initial memory than the limit fails when a run
/// instantiates it; with the pool it cannot be loaded at all (its memory cannot fit a slot),
/// and the load error says so.
#[tokio::test]
async fn initial_memory_over_the_limit_is_refused_at_load_when_pooling() {
    let too_big = crate::support::Fixture::wat(r#"(module (memory 512) (func (export "_start")))"#);
    let on_demand = crate::support::runtime();
    let module = load(&on_demand, &too_big).await;
    let report = on_demand.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;
    let Outcome::Failed { kind: FailureKind::OutOfMemory, message } = &report.outcome else {
        panic!("expected out of memory, got {:?}", report.outcome);
    };
    assert!(message.contains("needs 33554432 bytes of memory at start"), "{message}");

    let bytes = too_big.bytes.clone();
    let refused = pooled(1).module(&too_big.digest, || async move { Ok(bytes) }).await;
    let Err(WasmError::Compile { message, .. }) = refused else {
        panic!("expected a compile error, got {:?}", refused.map(|load| load.source));
    };
    assert!(message.contains("minimum byte size of 33554432 which exceeds the limit"), "{message}");
}
