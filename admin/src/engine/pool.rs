//! The fast and slow trigger pools (upstream `JobTriggerPoolHelper`, docs/upstream.md §5.2).
//!
//! A trigger taking more than 500 ms counts against its job for the current minute; a job with
//! more than 10 such triggers in the minute goes to the slow pool, so one slow executor cannot
//! starve everybody else's triggers. Each pool bounds its concurrency with a semaphore and its
//! backlog with a counter: beyond the backlog a trigger is logged and dropped (upstream ≥ 2.5).
//!
//! A trigger the ring hands over ahead of its second ([`Entry::Early`]) starts at once and
//! takes its slot only when due: its database work is done meanwhile, and the pool still bounds
//! the triggers being *sent* (`ring.rs`, "Early").
//!
//! A trigger gives its pool slot up once its `/run` is out and then waits for its outcome
//! write, which is deferred behind the sends (`sending.rs`). Those waits are bounded too: a
//! slot also takes one of [`EngineConfig::outcome_backlog`](super::EngineConfig::outcome_backlog)
//! places, held until the trigger ends. When the database falls behind, the places run out, the
//! pools stop sending, new triggers queue in the backlog and beyond it are dropped to recovery,
//! so the admin's memory stays bounded instead of growing with the unwritten outcomes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::sending::SendGauge;
use crate::clock::Clock;
use crate::store::JobId;

/// A trigger slower than this counts toward the slow pool.
pub const SLOW_TRIGGER: Duration = Duration::from_millis(500);
/// More slow triggers than this in one minute move a job to the slow pool.
pub const SLOW_COUNT_LIMIT: u32 = 10;

/// One pool: bounded concurrency plus a bounded number of waiting triggers.
struct Lane {
    name: &'static str,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_waiting: usize,
}

/// When a submitted trigger takes its pool slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Before it starts (upstream: the pool thread runs the whole trigger).
    Now,
    /// When it calls [`PoolSlot::acquire`], once due: a ring trigger handed over ahead of its
    /// second does its database work first without holding a slot.
    Early,
}

/// A trigger's slot in its pool: held, not yet taken, or given up. Dropping it frees the slot,
/// or, if it was never taken, the trigger's place in the backlog.
#[derive(Debug, Default)]
pub(crate) struct PoolSlot {
    /// The pools it belongs to while not yet taken (`None`: taken, or no pool at all).
    pools: Option<Arc<TriggerPools>>,
    slow: bool,
    permit: Option<OwnedSemaphorePermit>,
    /// When the slot was taken, for the slow-trigger count.
    acquired: Arc<OnceLock<Instant>>,
    /// The trigger's place among those sent and not yet recorded; kept past [`Self::release`]
    /// until the slot is dropped, that is until the trigger's task ends.
    unrecorded: Option<OwnedSemaphorePermit>,
}

impl PoolSlot {
    /// Takes the slot, waiting for a free one; does nothing if it is held or was given up.
    pub(crate) async fn acquire(&mut self) {
        let Some(pools) = self.pools.take() else { return };
        let lane = pools.lane(self.slow);
        // The semaphores are never closed, so acquiring only fails if they were; run anyway.
        // The lane first: a trigger of a saturated slow lane must not hold an outcome place
        // while it waits, and a trigger waiting for a place holds its lane back, which is the
        // point (no more sends while outcomes are not being written).
        self.permit = Arc::clone(&lane.permits).acquire_owned().await.ok();
        self.unrecorded = match Arc::clone(&pools.unrecorded).try_acquire_owned() {
            Ok(place) => Some(place),
            Err(_) => {
                // At the bound: the deferred outcome writes are what this trigger waits for,
                // so they must not wait for it (`sending.rs`).
                let _gated = pools.sends.gated();
                Arc::clone(&pools.unrecorded).acquire_owned().await.ok()
            }
        };
        lane.waiting.fetch_sub(1, Ordering::SeqCst);
        let _ = self.acquired.set(Instant::now());
    }

    /// Gives the slot up (or the place in the backlog, if it was never taken); the outcome
    /// place stays until the slot is dropped.
    pub(crate) fn release(&mut self) {
        self.permit = None;
        if let Some(pools) = self.pools.take() {
            pools.lane(self.slow).waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for PoolSlot {
    fn drop(&mut self) {
        self.release();
    }
}

impl std::fmt::Debug for TriggerPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TriggerPools").field("waiting", &self.waiting()).finish_non_exhaustive()
    }
}

/// Per-minute slow-trigger counts (upstream's `jobTimeoutCountMap` and `minTim`).
#[derive(Default)]
struct SlowCounts {
    minute: i64,
    counts: HashMap<JobId, u32>,
}

/// The two trigger pools. Every trigger task is owned by the engine's `TaskTracker`.
pub(crate) struct TriggerPools {
    fast: Lane,
    slow: Lane,
    slow_counts: Mutex<SlowCounts>,
    /// Places for triggers sent and not yet recorded ([`PoolSlot::unrecorded`]).
    unrecorded: Arc<Semaphore>,
    unrecorded_max: usize,
    /// The trigger path's sends gauge, told when a trigger waits for an outcome place.
    sends: Arc<SendGauge>,
    clock: Arc<dyn Clock>,
    tracker: TaskTracker,
    /// Triggers submitted and not finished (waiting or running); `idle` fires when it drops
    /// to zero, which lets tests and shutdown wait for triggers without sleeping.
    outstanding: AtomicUsize,
    idle: Notify,
}

impl TriggerPools {
    /// Pools of `sizes` (fast, slow) with backlogs of `queues`, and at most `unrecorded`
    /// triggers that have taken a slot and not yet ended (`sends` hears of those waiting).
    pub(crate) fn new(
        sizes: (usize, usize),
        queues: (usize, usize),
        (unrecorded, sends): (usize, Arc<SendGauge>),
        clock: Arc<dyn Clock>,
        tracker: TaskTracker,
    ) -> Self {
        let lane = |name, size, max_waiting| Lane {
            name,
            permits: Arc::new(Semaphore::new(size)),
            waiting: AtomicUsize::new(0),
            max_waiting,
        };
        Self {
            fast: lane("fast", sizes.0, queues.0),
            slow: lane("slow", sizes.1, queues.1),
            slow_counts: Mutex::new(SlowCounts::default()),
            unrecorded: Arc::new(Semaphore::new(unrecorded.max(1))),
            unrecorded_max: unrecorded.max(1),
            sends,
            clock,
            tracker,
            outstanding: AtomicUsize::new(0),
            idle: Notify::new(),
        }
    }

    /// Runs `trigger` for `job_id` on the pool the job currently belongs to; false if that
    /// pool's backlog is full and the trigger was dropped. `trigger` gets its pool slot and
    /// may give it up before it ends (once its `/run` calls are out: `sending.rs`). With
    /// [`Entry::Now`] the slot is taken before `trigger` starts; with [`Entry::Early`]
    /// `trigger` starts at once and takes the slot itself ([`PoolSlot::acquire`]), counted as
    /// waiting until then.
    pub(crate) fn submit<T, F>(self: &Arc<Self>, job_id: JobId, entry: Entry, trigger: T) -> bool
    where
        T: FnOnce(PoolSlot) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let use_slow = self.slow_count(job_id) > SLOW_COUNT_LIMIT;
        let lane = self.lane(use_slow);
        if lane.waiting.fetch_add(1, Ordering::SeqCst) >= lane.max_waiting {
            lane.waiting.fetch_sub(1, Ordering::SeqCst);
            tracing::error!(
                job_id = job_id.0,
                pool = lane.name,
                "trigger pool backlog full, trigger dropped"
            );
            return false;
        }
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        let pools = Arc::clone(self);
        let span = tracing::info_span!("trigger_task", job_id = job_id.0, pool = lane.name);
        self.tracker.spawn(
            async move {
                let acquired = Arc::new(OnceLock::new());
                let mut slot = PoolSlot {
                    pools: Some(Arc::clone(&pools)),
                    slow: use_slow,
                    permit: None,
                    acquired: Arc::clone(&acquired),
                    unrecorded: None,
                };
                if entry == Entry::Now {
                    slot.acquire().await;
                }
                let submitted = Instant::now();
                trigger(slot).await;
                // Slow means slow once it had its slot: an early trigger's wait for its second
                // does not count.
                let started = acquired.get().copied().unwrap_or(submitted);
                pools.record(job_id, started.elapsed());
                if pools.outstanding.fetch_sub(1, Ordering::SeqCst) == 1 {
                    pools.idle.notify_waiters();
                }
            }
            .instrument(span),
        );
        true
    }

    fn lane(&self, slow: bool) -> &Lane {
        if slow { &self.slow } else { &self.fast }
    }

    /// Waits until every submitted trigger has finished.
    pub(crate) async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.outstanding.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }

    fn slow_count(&self, job_id: JobId) -> u32 {
        let counts = self.slow_counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.counts.get(&job_id).copied().unwrap_or(0)
    }

    /// Upstream: after each trigger, reset the map when the minute changed, then count the
    /// trigger if it took more than 500 ms.
    fn record(&self, job_id: JobId, took: Duration) {
        let minute = self.clock.now_ms().div_euclid(60_000);
        let mut counts = self.slow_counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.minute != minute {
            counts.minute = minute;
            counts.counts.clear();
        }
        if took > SLOW_TRIGGER {
            *counts.counts.entry(job_id).or_insert(0) += 1;
        }
    }

    /// Triggers waiting for a slot of the fast and of the slow pool.
    pub(crate) fn waiting(&self) -> (usize, usize) {
        (self.fast.waiting.load(Ordering::Relaxed), self.slow.waiting.load(Ordering::Relaxed))
    }

    /// Triggers that took a slot and have not ended: sending, or sent and waiting for their
    /// outcome write.
    pub(crate) fn unrecorded(&self) -> usize {
        self.unrecorded_max - self.unrecorded.available_permits()
    }

    /// Whether `job_id` currently dispatches to the slow pool (for tests and diagnostics).
    pub(crate) fn is_slow(&self, job_id: JobId) -> bool {
        self.slow_count(job_id) > SLOW_COUNT_LIMIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    fn pools(size: usize) -> Arc<TriggerPools> {
        Arc::new(TriggerPools::new(
            (size, size),
            (10, 10),
            (100, Arc::default()),
            Arc::new(SystemClock),
            TaskTracker::new(),
        ))
    }

    #[tokio::test]
    async fn an_early_trigger_starts_without_a_slot_and_waits_for_one_when_due() {
        let pools = pools(1);
        let held = Arc::new(tokio::sync::Notify::new());
        let (busy_tx, busy_rx) = tokio::sync::oneshot::channel();
        let release = Arc::clone(&held);
        assert!(pools.submit(JobId(1), Entry::Now, move |slot| async move {
            let _held = slot;
            let _ = busy_tx.send(());
            release.notified().await;
        }));
        busy_rx.await.expect("the first trigger runs");

        // The only slot is taken: an early trigger still starts, and counts as waiting.
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (sent_tx, mut sent_rx) = tokio::sync::oneshot::channel();
        assert!(pools.submit(JobId(2), Entry::Early, move |mut slot| async move {
            let _ = started_tx.send(());
            slot.acquire().await;
            let _ = sent_tx.send(());
        }));
        started_rx.await.expect("started before a slot was free");
        assert_eq!(pools.waiting(), (1, 0));
        tokio::task::yield_now().await;
        assert!(sent_rx.try_recv().is_err(), "no slot yet");

        held.notify_one();
        tokio::time::timeout(Duration::from_secs(10), sent_rx).await.expect("slot freed").expect("sent");
        tokio::time::timeout(Duration::from_secs(10), pools.wait_idle()).await.expect("idle");
        assert_eq!(pools.waiting(), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trigger_sent_and_not_recorded_holds_its_outcome_place_until_it_ends() {
        // Two slots, one outcome place.
        let gauge = Arc::new(SendGauge::default());
        let pools = Arc::new(TriggerPools::new(
            (2, 2),
            (10, 10),
            (1, Arc::clone(&gauge)),
            Arc::new(SystemClock),
            TaskTracker::new(),
        ));
        let written = Arc::new(tokio::sync::Notify::new());
        let (sent_tx, sent_rx) = tokio::sync::oneshot::channel();
        let write = Arc::clone(&written);
        assert!(pools.submit(JobId(1), Entry::Now, move |mut slot| async move {
            // Sent: the pool slot goes back, the outcome write is still to come.
            slot.release();
            let _ = sent_tx.send(());
            write.notified().await;
            drop(slot);
        }));
        sent_rx.await.expect("the first trigger is sent");
        assert_eq!(pools.unrecorded(), 1);

        // A pool slot is free, but no outcome place: the next trigger waits in the backlog.
        let (started_tx, mut started_rx) = tokio::sync::oneshot::channel();
        assert!(pools.submit(JobId(2), Entry::Now, move |_slot| async move {
            let _ = started_tx.send(());
        }));
        // The clock is paused: this sleep ends only once every other task is blocked, so the
        // second trigger has got as far as it can.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(started_rx.try_recv().is_err(), "started without an outcome place");
        assert_eq!(pools.waiting(), (1, 0), "counted in the backlog while it waits");
        // Its wait is the outcome write's: a deferred write no longer waits for the sends.
        let sending = gauge.enter();
        let deferred = tokio::time::Instant::now();
        gauge.wait_quiet(Duration::from_secs(60)).await;
        assert_eq!(deferred.elapsed(), Duration::ZERO, "the deferral ended at once");
        drop(sending);

        written.notify_one();
        tokio::time::timeout(Duration::from_secs(10), started_rx).await.expect("place freed").expect("ran");
        tokio::time::timeout(Duration::from_secs(10), pools.wait_idle()).await.expect("idle");
        assert_eq!((pools.waiting(), pools.unrecorded()), ((0, 0), 0));
    }

    #[tokio::test]
    async fn an_early_trigger_that_ends_without_its_slot_leaves_the_backlog() {
        let pools = pools(1);
        assert!(pools.submit(JobId(1), Entry::Early, |_slot| async {}));
        tokio::time::timeout(Duration::from_secs(10), pools.wait_idle()).await.expect("idle");
        assert_eq!(pools.waiting(), (0, 0), "its place in the backlog was given back");
    }
}
