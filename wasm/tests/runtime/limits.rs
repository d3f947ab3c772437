//! Limits turn into clear failures: memory, stack, fuel, output volume and the timeout.

use std::time::{Duration, Instant};

use jobwheel_wasm::{FailureKind, Metering, Outcome, Runtime};
use tokio_util::sync::CancellationToken;

use crate::fixtures;
use crate::support::{Log, config, input, load, runtime};

#[tokio::test]
async fn memory_hog_fails_with_out_of_memory() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::memory_hog()).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;

    let Outcome::Failed { kind: FailureKind::OutOfMemory, message } = &report.outcome else {
        panic!("expected out of memory, got {:?}", report.outcome);
    };
    assert!(message.contains("over the limit of 16777216 bytes"), "{message}");
    assert_eq!(report.stats.peak_memory_bytes, 16 << 20);
}

#[tokio::test]
async fn unbounded_recursion_is_a_stack_overflow() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::recursion()).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;
    let Outcome::Failed { kind: FailureKind::StackOverflow, message } = &report.outcome else {
        panic!("expected stack overflow, got {:?}", report.outcome);
    };
    assert!(message.contains("stack overflow"), "{message}");
}

#[tokio::test]
async fn fuel_exhaustion_fails() {
    let mut config = config();
    config.metering = Metering::Fuel { budget: 200_000, yield_interval: 10_000 };
    let runtime = Runtime::new(config).expect("runtime");
    let module = load(&runtime, &fixtures::spinning("start", None)).await;
    let report = runtime.run(&module, input(""), Log::new().sink(), CancellationToken::new()).await;

    let expected = Outcome::Failed {
        kind: FailureKind::OutOfFuel,
        message: "fuel budget of 200000 exhausted".to_owned(),
    };
    assert_eq!(report.outcome, expected);
    assert_eq!(report.stats.fuel_used, 200_000);
}

#[tokio::test]
async fn output_flood_is_truncated_with_a_note() {
    let mut config = config();
    config.max_output_bytes = 64 << 10;
    let runtime = Runtime::new(config).expect("runtime");
    let module = load(&runtime, &fixtures::flood(2048)).await;
    let log = Log::new();
    let report = runtime.run(&module, input(""), log.sink(), CancellationToken::new()).await;

    // The result marker written after the flood still counts.
    assert_eq!(report.outcome, Outcome::Succeeded { message: Some("flooded and still reported".to_owned()) });
    assert!(report.stats.output_truncated);
    assert_eq!(report.stats.output_bytes, 2048 * 1024 + 46);
    let guest_bytes: usize = log.guest_lines().iter().map(|l| l.len() + 1).sum();
    assert!(guest_bytes <= 64 << 10, "{guest_bytes} bytes forwarded");
    assert_eq!(log.count("[jobwheel] output truncated after 65536 bytes"), 1, "{:?}", log.lines().last());
}

#[tokio::test]
async fn timeout_stops_an_infinite_loop() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::spinning("start", None)).await;
    let mut input = input("");
    input.timeout = Some(Duration::from_millis(200));
    let started = Instant::now();
    let report = runtime.run(&module, input, Log::new().sink(), CancellationToken::new()).await;
    let elapsed = started.elapsed();

    assert_eq!(report.outcome, Outcome::TimedOut { limit: Duration::from_millis(200) });
    assert!(elapsed >= Duration::from_millis(200), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(700), "stopped {elapsed:?} after start, timeout was 200 ms");
    assert!(report.stats.fuel_used > 0);
}
