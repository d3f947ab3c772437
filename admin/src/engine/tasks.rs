//! The engine's background tasks: the scheduler's two threads (`scheduler.rs`) and the
//! monitors, each a thin loop around a testable pass (`handle_failures`, `mark_lost_jobs`,
//! `refresh_registry`, `report_and_clean`) with upstream's period.
//!
//! Every task is spawned on the engine's `TaskTracker`. On shutdown the schedule thread stops
//! taking jobs, the monitors stop, and the ring drains (`scheduler.rs`); [`Engine::stopped`]
//! then waits for them and for in-flight triggers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::{Engine, EngineError};
use crate::clock::Clock;

impl Engine {
    /// Starts the scheduler, the ring and the monitors. They run until `shutdown` is
    /// cancelled; [`Engine::stopped`] then waits for them and for in-flight triggers.
    pub fn start(&self, shutdown: CancellationToken) {
        let i = self.config.intervals;
        let periodic = Periodic { tracker: &self.tracker, clock: &self.clock, shutdown: &shutdown };
        periodic.spawn("registry_monitor", i.registry, &self.registry, |m, now| async move {
            m.refresh_registry(now).await
        });
        periodic.spawn("fail_monitor", i.fail, &self.failures, |m, now| async move {
            m.handle_failures(now).await.map(|_| ())
        });
        periodic.spawn("lost_monitor", i.lost, &self.completion, |m, now| async move {
            m.mark_lost_jobs(now).await.map(|_| ())
        });
        periodic.spawn("resend_monitor", Duration::from_secs(1), &self.resends, |r, now| async move {
            r.pass(now).await.map(|_| ())
        });
        periodic.spawn("report_monitor", i.report, &self.report, |m, now| async move {
            m.report_and_clean(now).await.map(|_| ())
        });
        periodic.spawn("workflow_sweep", Duration::from_secs(1), &self.workflows, |w, now| async move {
            w.sweep(now).await.map(|_| ())
        });
        periodic.spawn("backfill_sweep", Duration::from_secs(1), &self.backfills, |b, now| async move {
            b.pass(now).await.map(|_| ())
        });
        periodic.spawn("alarm_desk", Duration::from_secs(1), &self.alarms, |d, now| async move {
            d.pass(now).await.map(|_| ())
        });
        self.scheduler.spawn(&self.tracker, &shutdown);
    }

    /// Waits until every task and trigger has finished (after `shutdown` was cancelled).
    pub async fn stopped(&self) {
        self.tracker.close();
        self.tracker.wait().await;
    }
}

/// Spawns monitors: one pass per period until shutdown.
struct Periodic<'a> {
    tracker: &'a TaskTracker,
    clock: &'a Arc<dyn Clock>,
    shutdown: &'a CancellationToken,
}

impl Periodic<'_> {
    fn spawn<M, F, Fut>(&self, name: &'static str, period: Duration, monitor: &Arc<M>, pass: F)
    where
        M: Send + Sync + 'static,
        F: Fn(Arc<M>, i64) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), EngineError>> + Send + 'static,
    {
        let (monitor, clock, shutdown) = (Arc::clone(monitor), Arc::clone(self.clock), self.shutdown.clone());
        let task = async move {
            loop {
                if let Err(e) = pass(Arc::clone(&monitor), clock.now_ms()).await {
                    tracing::error!(error = %e, "monitor pass failed");
                }
                if sleep_or_stop(period, &shutdown).await {
                    return;
                }
            }
        };
        self.tracker.spawn(task.instrument(tracing::info_span!("monitor", name)));
    }
}

/// Milliseconds as a `Duration` (negative: zero).
pub(super) fn ms(millis: i64) -> Duration {
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Sleeps for `pause`; true if `shutdown` was cancelled first (or already).
pub(super) async fn sleep_or_stop(pause: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => true,
        () = tokio::time::sleep(pause) => false,
    }
}
