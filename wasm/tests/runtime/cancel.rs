//! Cancellation stops a tight infinite loop promptly, on a single-threaded tokio runtime,
//! while other runs on the same `Runtime` keep making progress.

use std::time::{Duration, Instant};

use jobwheel_wasm::{Metering, Outcome, Runtime};
use tokio_util::sync::CancellationToken;

use crate::fixtures::{self, End};
use crate::support::{Log, config, input, load, runtime};

/// Generous bound for CI noise; the benchmark measures the real latency.
const STOP_BOUND: Duration = Duration::from_millis(500);

// `#[tokio::test]` is single-threaded: the other run can only complete if the looping guest
// yields to the scheduler, which is what fuel yielding guarantees.
#[tokio::test]
async fn cancel_stops_tight_loop_while_another_run_completes() {
    let runtime = runtime();
    let looping = load(&runtime, &fixtures::spinning("entering loop", None)).await;
    let quick = load(&runtime, &fixtures::printing("quick run done\n", "", End::Return)).await;

    let log = Log::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (runtime, log, cancel) = (runtime.clone(), log.clone(), cancel.clone());
        async move { runtime.run(&looping, input(""), log.sink(), cancel).await }
    });
    log.wait_for("entering loop", 1, Duration::from_secs(10)).await;

    let other_log = Log::new();
    let other = runtime.run(&quick, input(""), other_log.sink(), CancellationToken::new()).await;
    assert_eq!(other.outcome, Outcome::Succeeded { message: None });
    assert_eq!(other_log.guest_lines(), vec!["quick run done"]);
    assert!(!run.is_finished(), "the looping run must still be running");

    let cancelled_at = Instant::now();
    cancel.cancel();
    let report = run.await.expect("run task");
    let latency = cancelled_at.elapsed();

    assert_eq!(report.outcome, Outcome::Cancelled);
    assert!(latency < STOP_BOUND, "stopped {latency:?} after cancel");
    assert!(report.stats.fuel_used > 0);
    assert!(report.stats.wall_time > Duration::ZERO);
}

#[tokio::test]
async fn epoch_backstop_cancels_without_fuel() {
    let mut config = config();
    config.metering = Metering::Off;
    let runtime = Runtime::new(config).expect("runtime");
    let module = load(&runtime, &fixtures::spinning("entering loop", None)).await;
    let log = Log::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (runtime, log, cancel) = (runtime.clone(), log.clone(), cancel.clone());
        async move { runtime.run(&module, input(""), log.sink(), cancel).await }
    });
    log.wait_for("entering loop", 1, Duration::from_secs(10)).await;

    let cancelled_at = Instant::now();
    cancel.cancel();
    let report = run.await.expect("run task");
    assert_eq!(report.outcome, Outcome::Cancelled);
    assert!(cancelled_at.elapsed() < STOP_BOUND, "stopped {:?} after cancel", cancelled_at.elapsed());
    assert_eq!(report.stats.fuel_used, 0, "metering is off");
}

#[tokio::test]
async fn cancelled_before_start_does_not_run_the_guest() {
    let runtime = runtime();
    let module = load(&runtime, &fixtures::printing("should not appear\n", "", End::Return)).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let log = Log::new();
    let report = runtime.run(&module, input(""), log.sink(), cancel).await;
    assert_eq!(report.outcome, Outcome::Cancelled);
    assert!(log.guest_lines().is_empty());
}
