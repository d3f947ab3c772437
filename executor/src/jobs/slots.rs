//! The executor-wide cap on concurrent runs (`--max-concurrent-runs`): a run beyond it waits
//! for a slot, and a freed slot goes to the waiting run of the highest priority (`HIGH`, normal,
//! `LOW`, from the trigger's `priority`), the longest-waiting first among equals.
//!
//! Each job still runs its triggers one at a time in its own queue (upstream's job thread); the
//! cap bounds how many job threads execute at once. While the executor is full, `/idleBeat`
//! answers busy, so the admin's BUSYOVER routing passes it by.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::lock;

/// A run's claim on a slot, from the trigger's `priority`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Priority {
    Low,
    Normal,
    High,
}

impl Priority {
    /// `HIGH` and `LOW` (any case); anything else, or nothing, is normal.
    pub(crate) fn from_wire(value: Option<&str>) -> Self {
        match value.map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("HIGH") => Self::High,
            Some(v) if v.eq_ignore_ascii_case("LOW") => Self::Low,
            _ => Self::Normal,
        }
    }
}

/// The slots of one executor.
pub(crate) struct RunSlots {
    cap: usize,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: usize,
    waiting: BinaryHeap<Waiter>,
    next_seq: u64,
}

struct Waiter {
    priority: Priority,
    seq: u64,
    wake: oneshot::Sender<()>,
}

// The heap pops the greatest: higher priority first, then the smaller (older) sequence number.
impl Ord for Waiter {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority.cmp(&other.priority).then_with(|| other.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Waiter {}

impl std::fmt::Debug for RunSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (running, waiting, cap) = self.levels();
        f.debug_struct("RunSlots")
            .field("running", &running)
            .field("waiting", &waiting)
            .field("cap", &cap)
            .finish()
    }
}

/// A held slot; dropping it frees the slot for the next waiting run.
pub(crate) struct Slot(Arc<RunSlots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// A wait that may be abandoned (its job was killed): a slot handed to it after that is
/// passed on, never lost.
struct Pending {
    slots: Arc<RunSlots>,
    woken: Option<oneshot::Receiver<()>>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(mut woken) = self.woken.take()
            && woken.try_recv().is_ok()
        {
            self.slots.release();
        }
    }
}

impl RunSlots {
    /// Slots for at most `cap` runs at once (at least one).
    pub(crate) fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self { cap: cap.max(1), state: Mutex::default() })
    }

    /// Waits for a slot; the highest priority waiting longest gets the next free one.
    pub(crate) async fn acquire(self: &Arc<Self>, priority: Priority) -> Slot {
        let woken = {
            let mut state = lock(&self.state);
            if state.running < self.cap && state.waiting.is_empty() {
                state.running += 1;
                return Slot(Arc::clone(self));
            }
            let (wake, woken) = oneshot::channel();
            let seq = state.next_seq;
            state.next_seq += 1;
            state.waiting.push(Waiter { priority, seq, wake });
            woken
        };
        let mut pending = Pending { slots: Arc::clone(self), woken: Some(woken) };
        if let Some(woken) = pending.woken.as_mut() {
            // The sender lives in the heap until it is woken; it is never dropped unsent.
            let _ = woken.await;
        }
        pending.woken = None;
        Slot(Arc::clone(self))
    }

    /// `(running, waiting, cap)`. A wait its job abandoned (killed) stays in the heap until a
    /// hand-off skips it, but is not counted.
    pub(crate) fn levels(&self) -> (usize, usize, usize) {
        let state = lock(&self.state);
        let waiting = state.waiting.iter().filter(|w| !w.wake.is_closed()).count();
        (state.running, waiting, self.cap)
    }

    /// Whether every slot is taken.
    pub(crate) fn is_full(&self) -> bool {
        lock(&self.state).running >= self.cap
    }

    /// Hands the slot to the next waiter still waiting, or frees it.
    fn release(&self) {
        let mut state = lock(&self.state);
        while let Some(waiter) = state.waiting.pop() {
            if waiter.wake.send(()).is_ok() {
                return;
            }
        }
        state.running = state.running.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::{Priority, RunSlots};

    #[tokio::test]
    async fn freed_slots_go_to_the_highest_priority_then_the_oldest() {
        let slots = RunSlots::new(1);
        let first = slots.acquire(Priority::Normal).await;
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut waiting = Vec::new();
        for (name, priority) in [
            ("low", Priority::Low),
            ("normal-1", Priority::Normal),
            ("high", Priority::High),
            ("normal-2", Priority::Normal),
        ] {
            let (mine, order) = (std::sync::Arc::clone(&slots), std::sync::Arc::clone(&order));
            waiting.push(tokio::spawn(async move {
                let slot = mine.acquire(priority).await;
                order.lock().expect("order").push(name);
                drop(slot);
            }));
            // Each waiter is queued before the next one asks.
            while slots.levels().1 < waiting.len() {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(slots.levels(), (1, 4, 1));
        assert!(slots.is_full());
        drop(first);
        for task in waiting {
            task.await.expect("waiter");
        }
        assert_eq!(*order.lock().expect("order"), ["high", "normal-1", "normal-2", "low"]);
        assert_eq!(slots.levels(), (0, 0, 1));
    }

    #[tokio::test]
    async fn an_abandoned_wait_passes_its_slot_on() {
        let slots = RunSlots::new(1);
        let held = slots.acquire(Priority::Normal).await;
        let abandoned = tokio::spawn({
            let slots = std::sync::Arc::clone(&slots);
            async move { drop(slots.acquire(Priority::High).await) }
        });
        while slots.levels().1 < 1 {
            tokio::task::yield_now().await;
        }
        abandoned.abort();
        let _ = abandoned.await;
        drop(held);
        let again =
            tokio::time::timeout(std::time::Duration::from_secs(5), slots.acquire(Priority::Low)).await;
        assert!(again.is_ok(), "the slot was not lost to the abandoned wait");
        assert_eq!(slots.levels(), (1, 0, 1));
    }
}
