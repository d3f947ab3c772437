//! [`Scheduler`]: upstream's schedule and ring threads (`JobScheduleHelper`, docs/upstream.md
//! §5.1) as one type that owns the time ring, this admin's schedule leases and claim recovery.
//!
//! Its passes are methods taking `now_ms` (`schedule.rs` for the pre-read, `ring.rs` for the
//! ring, `recover.rs` for stale claims), so tests drive them with controlled time; this file
//! holds the two loops around them with upstream's aligned sleeps and the shutdown order: the
//! schedule thread stops taking jobs, and the ring keeps firing for at most 10 s until it is
//! empty (upstream 3.3.2+); anything left in it stays a pending claim for the next start.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use chrono_tz::Tz;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::claims::InFlight;
use super::config::{EngineConfig, EngineServices};
use super::fix_delay::FixDelay;
use super::missed::MissedFires;
use super::recover::ClaimRecovery;
use super::ring::{RingEntry, TimeRing, ring_second};
use super::share::Leases;
use super::tasks::{ms, sleep_or_stop};
use super::trigger::TriggerPath;
use crate::clock::Clock;
use crate::metrics::AdminMetrics;
use crate::store::Store;

/// Upstream waits this long for the ring to drain on shutdown.
const RING_DRAIN_ON_STOP: Duration = Duration::from_secs(10);

/// A schedule thread whose last pass began longer ago than this is reported as stalled.
const SCHEDULE_STALL_MS: i64 = 15_000;

/// The pre-read, the ring and claim recovery of one admin process.
pub struct Scheduler {
    pub(super) store: Arc<dyn Store>,
    /// Where the pre-read and the ring send their triggers.
    pub(super) triggers: Arc<TriggerPath>,
    /// Claims in the ring or on the pools, held until their trigger has run.
    pub(super) in_flight: Arc<InFlight>,
    pub(super) ring: TimeRing,
    pub(super) leases: Leases,
    pub(super) missed: MissedFires,
    recovery: ClaimRecovery,
    clock: Arc<dyn Clock>,
    pub(super) metrics: Arc<AdminMetrics>,
    /// The zone of jobs without their own.
    pub(super) time_zone: Tz,
    /// Upstream's `preReadCount`: `(fast + slow pool) × 10` jobs per pre-read.
    pub(super) pre_read_count: u32,
    /// How long before its second the ring hands a slot over (`ring.rs`).
    pub(super) fire_lead: Duration,
    /// When the schedule thread last began a pass (epoch ms; 0 = not started): readiness.
    beat_ms: AtomicI64,
}

impl Scheduler {
    pub(super) fn new(
        store: Arc<dyn Store>,
        triggers: Arc<TriggerPath>,
        (in_flight, fix_delay): (Arc<InFlight>, Arc<FixDelay>),
        config: &EngineConfig,
        services: &EngineServices,
    ) -> Self {
        let metrics = Arc::clone(&services.metrics);
        let missed = MissedFires::new(Arc::clone(&metrics), config.lang);
        let node = config.schedule_node.clone();
        let recovery = ClaimRecovery::new(
            Arc::clone(&store),
            Arc::clone(&triggers),
            (Arc::clone(&in_flight), fix_delay),
            missed.clone(),
            Arc::clone(&metrics),
            node.clone(),
        );
        Self {
            leases: Leases::new(Arc::clone(&store), node, Arc::clone(&metrics)),
            store,
            triggers,
            in_flight,
            ring: TimeRing::default(),
            missed,
            recovery,
            clock: Arc::clone(&services.clock),
            metrics,
            time_zone: config.time_zone,
            pre_read_count: config.pre_read_count(),
            fire_lead: config.fire_lead,
            beat_ms: AtomicI64::new(0),
        }
    }

    /// Claim recovery, which the schedule thread runs after each pre-read.
    pub fn recovery(&self) -> &ClaimRecovery {
        &self.recovery
    }

    /// How many triggers wait in the time ring.
    pub fn ring_len(&self) -> usize {
        self.ring.len()
    }

    /// Starts the schedule and ring threads on `tracker`; they run until `shutdown`.
    pub(super) fn spawn(self: &Arc<Self>, tracker: &TaskTracker, shutdown: &CancellationToken) {
        let (scheduler, stop) = (Arc::clone(self), shutdown.clone());
        tracker.spawn(async move { scheduler.ring_loop(stop).await }.instrument(tracing::info_span!("ring")));
        let (scheduler, stop) = (Arc::clone(self), shutdown.clone());
        let schedule = async move {
            scheduler.schedule_loop(stop).await;
            scheduler.leases.leave().await;
        };
        tracker.spawn(schedule.instrument(tracing::info_span!("schedule")));
    }

    /// Upstream's schedule thread: a pre-read per cycle (plus claim recovery), then sleep to
    /// the next [`PRE_READ_PHASE_MS`] of a second — or five seconds ahead when nothing was due.
    async fn schedule_loop(&self, shutdown: CancellationToken) {
        self.beat();
        // Upstream waits 5 s before its first pre-read. A shared scheduler starts at the next
        // phase instead: it only pre-reads partitions nobody else holds, and its recovery pass
        // is what fires the claims of an admin that died while this one was restarting (the
        // HA test kills the admins in turn every 5 s).
        let shared = self.leases.shared();
        let startup = if shared { 0 } else { 5000 };
        let first = startup + until_phase(self.clock.now_ms());
        if sleep_or_stop(ms(first), &shutdown).await {
            return;
        }
        // Upstream pre-reads every second while it finds jobs and every 5 s otherwise. Claim
        // recovery runs every second regardless: a dead admin's claims must be fired within the
        // misfire threshold even when this admin has nothing of its own to schedule.
        let mut next_cycle_ms = 0;
        while !shutdown.is_cancelled() {
            let started = Instant::now();
            let now_ms = self.clock.now_ms();
            self.beat();
            if now_ms >= next_cycle_ms {
                let found = match self.schedule_cycle(now_ms).await {
                    Ok(report) => report.pre_read > 0,
                    Err(e) => {
                        tracing::error!(error = %e, "schedule cycle failed");
                        false
                    }
                };
                // A shared scheduler renews its leases every second even when idle.
                next_cycle_ms = if found || shared { 0 } else { now_ms + 4000 };
            }
            if let Err(e) = self.recovery.recover_claims(now_ms).await {
                tracing::error!(error = %e, "claim recovery failed");
            }
            if started.elapsed() < Duration::from_secs(1) {
                let pause = until_phase(self.clock.now_ms());
                if sleep_or_stop(ms(pause), &shutdown).await {
                    return;
                }
            }
        }
    }

    /// Upstream's ring thread: wake at each whole second and fire the due slots — here, wake
    /// `fire_lead` before it and hand the slots over early (`ring.rs`).
    async fn ring_loop(&self, shutdown: CancellationToken) {
        let mut drain_deadline = None;
        let lead = self.fire_lead_ms();
        loop {
            let pause = ms(1000 - (self.clock.now_ms() + lead).rem_euclid(1000));
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
            self.hand_over_ring(self.clock.now_ms());
        }
    }

    fn beat(&self) {
        self.beat_ms.store(self.clock.now_ms(), Ordering::Relaxed);
    }

    /// Readiness of the schedule thread: running (scheduling, or standing by while another
    /// admin holds the schedule lock — both begin a pass every second or so), or why not.
    pub fn readiness(&self) -> Result<(), String> {
        let beat = self.beat_ms.load(Ordering::Relaxed);
        if beat == 0 {
            return Err("the scheduler has not started".to_owned());
        }
        let since = self.clock.now_ms() - beat;
        if since > SCHEDULE_STALL_MS {
            return Err(format!("the scheduler's last pass began {} s ago", since / 1000));
        }
        Ok(())
    }
}

/// The ring thread's passes.
impl Scheduler {
    /// The ring thread's work for one wake-up at `second` (0–59): take the due slots and fire
    /// their claims through the pools. Returns what was fired.
    pub fn drain_ring(&self, second: u32) -> Vec<RingEntry> {
        self.fire_slots(second, None)
    }

    /// The ring thread's work for a wake-up at `now_ms`, [`fire_lead`] before a second (a
    /// late or early wake-up of up to half a second still means that second): hand the second's
    /// slots to the pools, to be sent once it begins. Returns what was handed over.
    ///
    /// [`fire_lead`]: super::EngineConfig::fire_lead
    pub fn hand_over_ring(&self, now_ms: i64) -> Vec<RingEntry> {
        let lead = self.fire_lead_ms();
        let second_ms = (now_ms + lead + 500).div_euclid(1000) * 1000;
        let release = (second_ms > now_ms).then_some(second_ms);
        self.fire_slots(ring_second(second_ms), release)
    }

    fn fire_slots(&self, second: u32, release_ms: Option<i64>) -> Vec<RingEntry> {
        let due = self.ring.take_due(second);
        for entry in &due {
            self.triggers.submit(entry.request(release_ms));
        }
        due
    }

    /// The configured lead, bounded by [`MAX_FIRE_LEAD`](super::config::MAX_FIRE_LEAD).
    pub(crate) fn fire_lead_ms(&self) -> i64 {
        let lead = self.fire_lead.min(super::config::MAX_FIRE_LEAD);
        i64::try_from(lead.as_millis()).unwrap_or(0)
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
