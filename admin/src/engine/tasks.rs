//! The engine's background tasks: thin loops around the testable passes (`schedule_cycle`,
//! `drain_ring`, `recover_claims`, the monitors), with upstream's sleeps and the shutdown order.
//!
//! Every task is spawned on the engine's `TaskTracker`. On shutdown the schedule thread stops
//! taking jobs, the monitors stop, and the ring keeps firing for at most 10 s until it is
//! empty (upstream 3.3.2+); anything left in it stays a pending claim for the next start.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Engine;

/// Upstream waits this long for the ring to drain on shutdown.
const RING_DRAIN_ON_STOP: Duration = Duration::from_secs(10);

impl Engine {
    /// Starts the scheduler, the ring and the monitors. They run until `shutdown` is
    /// cancelled; [`Engine::stopped`] then waits for them and for in-flight triggers.
    pub fn start(self: &Arc<Self>, shutdown: CancellationToken) {
        let i = self.config.intervals;
        self.spawn_periodic("registry_monitor", i.registry, &shutdown, |e, now| async move {
            e.refresh_registry(now).await.map(|_| ())
        });
        self.spawn_periodic("fail_monitor", i.fail, &shutdown, |e, now| async move {
            e.handle_failures(now).await.map(|_| ())
        });
        self.spawn_periodic("lost_monitor", i.lost, &shutdown, |e, now| async move {
            e.mark_lost_jobs(now).await.map(|_| ())
        });
        self.spawn_periodic("report_monitor", i.report, &shutdown, |e, now| async move {
            e.report_and_clean(now).await.map(|_| ())
        });
        let engine = Arc::clone(self);
        let stop = shutdown.clone();
        self.tracker
            .spawn(async move { engine.ring_loop(stop).await }.instrument(tracing::info_span!("ring")));
        let engine = Arc::clone(self);
        let schedule = async move {
            Arc::clone(&engine).schedule_loop(shutdown).await;
            engine.leave_schedule().await;
        };
        self.tracker.spawn(schedule.instrument(tracing::info_span!("schedule")));
    }

    /// Waits until every task and trigger has finished (after `shutdown` was cancelled).
    pub async fn stopped(&self) {
        self.tracker.close();
        self.tracker.wait().await;
    }

    /// Upstream's schedule thread: a pre-read per cycle (plus claim recovery), then sleep to
    /// the next [`PRE_READ_PHASE_MS`] of a second — or five seconds ahead when nothing was due.
    async fn schedule_loop(self: Arc<Self>, shutdown: CancellationToken) {
        self.schedule_beat();
        // Upstream waits 5 s before its first pre-read. A shared scheduler starts at the next
        // phase instead: it only pre-reads partitions nobody else holds, and its recovery pass
        // is what fires the claims of an admin that died while this one was restarting (the
        // HA test kills the admins in turn every 5 s).
        let startup = if self.config.schedule_node.is_some() { 0 } else { 5000 };
        let first = startup + until_phase(self.services.now_ms());
        if sleep_or_stop(ms(first), &shutdown).await {
            return;
        }
        // Upstream pre-reads every second while it finds jobs and every 5 s otherwise. Claim
        // recovery runs every second regardless: a dead admin's claims must be fired within the
        // misfire threshold even when this admin has nothing of its own to schedule.
        let mut next_cycle_ms = 0;
        while !shutdown.is_cancelled() {
            let started = Instant::now();
            let now_ms = self.services.now_ms();
            self.schedule_beat();
            if now_ms >= next_cycle_ms {
                let found = match self.schedule_cycle(now_ms).await {
                    Ok(report) => report.pre_read > 0,
                    Err(e) => {
                        tracing::error!(error = %e, "schedule cycle failed");
                        false
                    }
                };
                // A shared scheduler renews its leases every second even when idle.
                let shared = self.config.schedule_node.is_some();
                next_cycle_ms = if found || shared { 0 } else { now_ms + 4000 };
            }
            if let Err(e) = self.recover_claims(now_ms).await {
                tracing::error!(error = %e, "claim recovery failed");
            }
            if started.elapsed() < Duration::from_secs(1) {
                let pause = until_phase(self.services.now_ms());
                if sleep_or_stop(ms(pause), &shutdown).await {
                    return;
                }
            }
        }
    }

    /// Upstream's ring thread: wake at each whole second and fire the due slots — here, wake
    /// `fire_lead` before it and hand the slots over early (`ring.rs`).
    async fn ring_loop(self: Arc<Self>, shutdown: CancellationToken) {
        let mut drain_deadline = None;
        let lead = self.fire_lead_ms();
        loop {
            let pause = ms(1000 - (self.services.now_ms() + lead).rem_euclid(1000));
            match drain_deadline {
                None => {
                    if sleep_or_stop(pause, &shutdown).await {
                        drain_deadline = Some(Instant::now() + RING_DRAIN_ON_STOP);
                        continue;
                    }
                }
                Some(deadline) => {
                    if self.ring.is_empty() || Instant::now() >= deadline {
                        if !self.ring.is_empty() {
                            tracing::warn!(
                                left = self.ring.len(),
                                "ring not empty at shutdown; claims stay pending"
                            );
                        }
                        return;
                    }
                    tokio::time::sleep(pause).await;
                }
            }
            self.hand_over_ring(self.services.now_ms());
        }
    }

    fn spawn_periodic<F, Fut>(
        self: &Arc<Self>,
        name: &'static str,
        period: Duration,
        shutdown: &CancellationToken,
        pass: F,
    ) where
        F: Fn(Arc<Engine>, i64) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), super::EngineError>> + Send + 'static,
    {
        let engine = Arc::clone(self);
        let shutdown = shutdown.clone();
        let task = async move {
            loop {
                let now_ms = engine.services.now_ms();
                if let Err(e) = pass(Arc::clone(&engine), now_ms).await {
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

/// Where in each second the pre-read runs (upstream: at 0, with the ring). Half a second away
/// from the ring's wake-up, the pre-read's transaction — which stages the log rows of the next
/// 5 s, and on SQLite holds the write lock — never competes with the triggers leaving at the
/// whole second. The 5 s window still covers every second: a pass at k + 0.5 s reads up to
/// k + 5.5 s.
const PRE_READ_PHASE_MS: i64 = 500;

/// Milliseconds from `now_ms` to the next [`PRE_READ_PHASE_MS`] of a second (1–1000).
fn until_phase(now_ms: i64) -> i64 {
    let into = (now_ms - PRE_READ_PHASE_MS).rem_euclid(1000);
    1000 - into
}

fn ms(millis: i64) -> Duration {
    Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// Sleeps for `pause`; true if `shutdown` was cancelled first (or already).
async fn sleep_or_stop(pause: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        () = shutdown.cancelled() => true,
        () = tokio::time::sleep(pause) => false,
    }
}

/// A schedule thread whose last pass began longer ago than this is reported as stalled.
const SCHEDULE_STALL_MS: i64 = 15_000;

impl Engine {
    fn schedule_beat(&self) {
        self.schedule_beat_ms.store(self.services.now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Readiness of the schedule thread: running (scheduling, or standing by while another
    /// admin holds the schedule lock — both begin a pass every second or so), or why not.
    pub fn scheduler_readiness(&self) -> Result<(), String> {
        let beat = self.schedule_beat_ms.load(std::sync::atomic::Ordering::Relaxed);
        if beat == 0 {
            return Err("the scheduler has not started".to_owned());
        }
        let since = self.services.now_ms() - beat;
        if since > SCHEDULE_STALL_MS {
            return Err(format!("the scheduler's last pass began {} s ago", since / 1000));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::until_phase;

    #[test]
    fn the_pre_read_runs_half_a_second_after_the_ring() {
        assert_eq!(until_phase(10_000), 500);
        assert_eq!(until_phase(10_200), 300);
        assert_eq!(until_phase(10_500), 1000);
        assert_eq!(until_phase(10_999), 501);
        assert_eq!(until_phase(-1), 501);
    }
}
