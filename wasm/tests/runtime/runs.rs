//! Ordinary runs: inputs reach the guest, output reaches the log, exits and traps become
//! outcomes with the guest's message, and the sandbox exposes nothing of the host.

use jobwheel_wasm::{FailureKind, Outcome};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{self, End};
use crate::support::{Log, input, load, runtime};

#[tokio::test]
async fn success_sees_param_and_ids_and_logs_lines() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::dump_args_and_env()).await;
    let log = Log::new();
    let report = runtime.run(&module, input("hello param"), log.sink(), CancellationToken::new()).await;

    assert_eq!(report.outcome, Outcome::Succeeded { message: None });
    let mut expected = vec![
        "jobwheel-job",
        "hello param",
        "JOBWHEEL_PARAM=hello param",
        "JOBWHEEL_JOB_ID=7",
        "JOBWHEEL_LOG_ID=4242",
        "JOBWHEEL_SHARD_INDEX=2",
        "JOBWHEEL_SHARD_TOTAL=5",
        "JOBWHEEL_FIRE_KEY=job:7@1900000000000#2/5",
        "JOBWHEEL_SCHEDULED_TIME=1900000000000",
    ];
    let mut guest = log.guest_lines();
    // Exactly these lines: no host environment variable leaks into the guest.
    guest.sort();
    expected.sort();
    assert_eq!(guest, expected);
    let stats_note = log.lines().last().cloned().unwrap_or_default();
    assert!(stats_note.starts_with("[jobwheel] fuel used "), "{stats_note}");
    assert!(report.stats.fuel_used > 0);
    assert!(report.stats.peak_memory_bytes >= 2 * 65536);
}

#[tokio::test]
async fn success_message_comes_from_result_marker() {
    let runtime = runtime();
    let fixture = fixtures::printing("processed 3 items\n", "::jobwheel-result::3 items ok\n", End::Return);
    let module = load(&runtime, &fixture).await;
    let log = Log::new();
    let report = runtime.run(&module, input(""), log.sink(), CancellationToken::new()).await;

    assert_eq!(report.outcome, Outcome::Succeeded { message: Some("3 items ok".to_owned()) });
    assert_eq!(log.guest_lines(), vec!["processed 3 items"], "marker lines are not logged");
}

#[tokio::test]
async fn proc_exit_zero_is_success() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::printing("bye\n", "", End::Exit(0))).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;
    assert_eq!(report.outcome, Outcome::Succeeded { message: None });
}

#[tokio::test]
async fn nonzero_exit_fails_with_marker_message() {
    let runtime = runtime();
    let fixture = fixtures::printing("working\n", "::jobwheel-result::disk full\n", End::Exit(3));
    let module = load(&runtime, &fixture).await;
    let log = Log::new();
    let report = runtime.run(&module, input(""), log.sink(), CancellationToken::new()).await;

    let expected =
        Outcome::Failed { kind: FailureKind::Exit(3), message: "exited with code 3: disk full".to_owned() };
    assert_eq!(report.outcome, expected);
    assert_eq!(log.guest_lines(), vec!["working"]);
}

#[tokio::test]
async fn nonzero_exit_without_marker_uses_last_stderr_line() {
    let runtime = runtime();
    let fixture = fixtures::printing("", "warning: slow\nfatal: cannot parse param\n", End::Exit(1));
    let module = load(&runtime, &fixture).await;
    let log = Log::new();
    let report = runtime.run(&module, input(""), log.sink(), CancellationToken::new()).await;

    let expected = Outcome::Failed {
        kind: FailureKind::Exit(1),
        message: "exited with code 1: fatal: cannot parse param".to_owned(),
    };
    assert_eq!(report.outcome, expected);
    assert_eq!(log.guest_lines(), vec!["warning: slow", "fatal: cannot parse param"]);
}

#[tokio::test]
async fn trap_fails_with_trap_and_guest_message() {
    let runtime = runtime();
    // What the SDK's panic hook prints before a Rust guest aborts.
    let fixture = fixtures::printing("", "::jobwheel-result::panicked at src/main.rs:3:5: oops\n", End::Trap);
    let module = load(&runtime, &fixture).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;

    let Outcome::Failed { kind: FailureKind::Trap, message } = &report.outcome else {
        panic!("expected a trap failure, got {:?}", report.outcome);
    };
    assert!(message.starts_with("wasm trap: "), "{message}");
    assert!(message.contains("unreachable"), "{message}");
    assert!(message.ends_with(": panicked at src/main.rs:3:5: oops"), "{message}");
}

#[tokio::test]
async fn no_preopened_directories() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::preopen_probe()).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;
    assert_eq!(report.outcome, Outcome::Succeeded { message: None });
}

#[tokio::test]
async fn nul_in_param_is_a_bad_input_failure() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::dump_args_and_env()).await;
    let report = runtime.run(&module, input("a\0b"), Log::new().sink(), CancellationToken::new()).await;
    let Outcome::Failed { kind: FailureKind::BadInput, message } = &report.outcome else {
        panic!("expected bad input, got {:?}", report.outcome);
    };
    assert!(message.contains("NUL"), "{message}");
}

/// The executor spawns loads and runs on a multi-threaded runtime, so both futures must be
/// `Send` (checked at compile time; the futures are dropped unpolled).
#[test]
fn load_and_run_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let runtime = runtime();
    let loading = runtime.module("00", || async { Ok(Vec::new()) });
    assert_send(&loading);
    drop(loading);
    let module = tokio::runtime::Runtime::new()
        .expect("tokio")
        .block_on(load(&runtime, &fixtures::printing("", "", End::Return)));
    let run = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new());
    assert_send(&run);
}
