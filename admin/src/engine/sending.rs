//! Sends first: while triggers are on their way to `/run`, the writes that can wait — a
//! trigger's outcome and the executors' callback results — wait for them (for at most
//! [`MAX_DEFER`]).
//!
//! Why: every trigger of a second is due at its start, so the second's lateness is how long its
//! last `/run` takes to leave. The send path writes to the database too (taking the staged
//! claim), and on SQLite every write of the process goes through one writer; the outcome
//! writes of the second's first triggers and the callbacks of its first runs got in the way of
//! the claims of its last triggers. Deferring them until the sends are out took p99 lateness at
//! 1 000 triggers/s from ~100 to 53–79 ms and at 4 000/s from 735 to 280 ms (docs/benchmarks.md,
//! issue 14). Nothing is acknowledged
//! earlier than before: a callback is still answered only once stored, and a trigger's task
//! still ends only once its outcome is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// The longest a deferred write waits for the sends by default: under a steady stream of
/// triggers the gauge may never reach zero, and the writes then go in batches this far apart.
pub const MAX_DEFER: Duration = Duration::from_millis(200);

/// How many triggers are between their submission and their `/run` (queued for a pool slot
/// included), how many of them wait for an outcome place (`pool.rs`), and a wake-up for when
/// the deferred writes should go.
#[derive(Debug, Default)]
pub(crate) struct SendGauge {
    sending: AtomicUsize,
    /// Triggers waiting for an outcome place: they wait for the deferred writes themselves, so
    /// while there are any, deferring them only stalls both.
    gated: AtomicUsize,
    quiet: Notify,
}

impl SendGauge {
    /// Counts one more trigger on its way to `/run` until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>) -> Sending {
        self.sending.fetch_add(1, Ordering::SeqCst);
        Sending(Arc::clone(self))
    }

    /// Triggers on their way to `/run` now.
    pub(crate) fn sending(&self) -> usize {
        self.sending.load(Ordering::SeqCst)
    }

    /// Counts a trigger waiting for an outcome place until the guard is dropped; deferred
    /// writes stop waiting meanwhile.
    pub(crate) fn gated(self: &Arc<Self>) -> Gated {
        self.gated.fetch_add(1, Ordering::SeqCst);
        self.quiet.notify_waiters();
        Gated(Arc::clone(self))
    }

    /// Returns once no trigger is on its way to `/run`, or one waits for the outcomes to be
    /// written (at the outcome backlog), or after `max`.
    pub(crate) async fn wait_quiet(&self, max: Duration) {
        let deadline = tokio::time::Instant::now() + max;
        loop {
            let quiet = self.quiet.notified();
            if self.sending() == 0 || self.gated.load(Ordering::SeqCst) > 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, quiet).await.is_err() {
                return;
            }
        }
    }
}

/// One trigger counted by a [`SendGauge`].
#[derive(Debug)]
pub(crate) struct Sending(Arc<SendGauge>);

impl Drop for Sending {
    fn drop(&mut self) {
        if self.0.sending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.quiet.notify_waiters();
        }
    }
}

/// One trigger waiting for an outcome place, counted by a [`SendGauge`].
#[derive(Debug)]
pub(crate) struct Gated(Arc<SendGauge>);

impl Drop for Gated {
    fn drop(&mut self) {
        self.0.gated.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waiting_for_quiet_ends_when_the_last_send_is_out() {
        let gauge = Arc::new(SendGauge::default());
        let first = gauge.enter();
        let second = gauge.enter();
        assert_eq!(gauge.sending(), 2);
        let waiter = {
            let gauge = Arc::clone(&gauge);
            tokio::spawn(async move { gauge.wait_quiet(Duration::from_secs(30)).await })
        };
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one trigger is still being sent");
        drop(second);
        tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("quiet").expect("no panic");
        assert_eq!(gauge.sending(), 0);
    }

    #[tokio::test]
    async fn a_send_that_never_ends_delays_writes_by_at_most_the_bound() {
        let gauge = Arc::new(SendGauge::default());
        let _stuck = gauge.enter();
        let bound = Duration::from_millis(50);
        let started = tokio::time::Instant::now();
        gauge.wait_quiet(bound).await;
        let waited = started.elapsed();
        assert!(waited >= bound && waited < Duration::from_secs(5), "waited {waited:?}");
    }

    #[tokio::test]
    async fn a_trigger_waiting_for_an_outcome_place_ends_the_deferral_at_once() {
        let gauge = Arc::new(SendGauge::default());
        let _sending = gauge.enter();
        let waiter = {
            let gauge = Arc::clone(&gauge);
            tokio::spawn(async move { gauge.wait_quiet(Duration::from_secs(60)).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "a send is out");
        let gated = gauge.gated();
        tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("woken").expect("no panic");
        gauge.wait_quiet(Duration::from_secs(60)).await;
        drop(gated);
        assert_eq!(gauge.gated.load(Ordering::SeqCst), 0);
    }
}
