//! The fast and slow trigger pools (upstream `JobTriggerPoolHelper`, upstream-xxl-job.md §5.2).
//!
//! A trigger taking more than 500 ms counts against its job for the current minute; a job with
//! more than 10 such triggers in the minute goes to the slow pool, so one slow executor cannot
//! starve everybody else's triggers. Each pool bounds its concurrency with a semaphore and its
//! backlog with a counter: beyond the backlog a trigger is logged and dropped (upstream ≥ 2.5).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::Instrument;

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
    clock: Arc<dyn Clock>,
    tracker: TaskTracker,
    /// Triggers submitted and not finished (waiting or running); `idle` fires when it drops
    /// to zero, which lets tests and shutdown wait for triggers without sleeping.
    outstanding: AtomicUsize,
    idle: Notify,
}

impl TriggerPools {
    pub(crate) fn new(
        sizes: (usize, usize),
        queues: (usize, usize),
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
            clock,
            tracker,
            outstanding: AtomicUsize::new(0),
            idle: Notify::new(),
        }
    }

    /// Runs `trigger` for `job_id` on the pool the job currently belongs to; false if that
    /// pool's backlog is full and the trigger was dropped. `trigger` gets the pool slot it runs
    /// in and may give it up before it ends (once its `/run` calls are out: `sending.rs`).
    pub(crate) fn submit<T, F>(self: &Arc<Self>, job_id: JobId, trigger: T) -> bool
    where
        T: FnOnce(Option<OwnedSemaphorePermit>) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let use_slow = self.slow_count(job_id) > SLOW_COUNT_LIMIT;
        let lane = if use_slow { &self.slow } else { &self.fast };
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
                let lane = if use_slow { &pools.slow } else { &pools.fast };
                // The semaphore is never closed, so acquiring only fails if it were; run anyway.
                let permit = Arc::clone(&lane.permits).acquire_owned().await.ok();
                lane.waiting.fetch_sub(1, Ordering::SeqCst);
                let started = Instant::now();
                trigger(permit).await;
                pools.record(job_id, started.elapsed());
                if pools.outstanding.fetch_sub(1, Ordering::SeqCst) == 1 {
                    pools.idle.notify_waiters();
                }
            }
            .instrument(span),
        );
        true
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

    /// Whether `job_id` currently dispatches to the slow pool (for tests and diagnostics).
    pub(crate) fn is_slow(&self, job_id: JobId) -> bool {
        self.slow_count(job_id) > SLOW_COUNT_LIMIT
    }
}
