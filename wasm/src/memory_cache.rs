//! Bounded in-memory cache of loaded modules with single-flight loading: concurrent requests
//! for a new digest share one load, and the least recently used entries are evicted.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::OnceCell;

/// One slot per digest. The `OnceCell` is the single-flight point: the first caller runs the
/// load, later callers wait on the same cell. A failed load leaves the cell empty and the slot
/// is removed, so the next request retries.
struct Slot<V> {
    cell: Arc<OnceCell<V>>,
    /// Logical time of the last request, for LRU eviction.
    last_used: u64,
}

struct State<V> {
    slots: HashMap<String, Slot<V>>,
    clock: u64,
}

/// Digest-keyed cache; values are cheap clones (an `InstancePre` is reference-counted), so an
/// evicted module stays alive for runs that already hold it.
pub(crate) struct MemoryCache<V> {
    capacity: usize,
    state: Mutex<State<V>>,
}

impl<V: Clone> MemoryCache<V> {
    pub(crate) fn new(capacity: usize) -> MemoryCache<V> {
        MemoryCache {
            capacity: capacity.max(1),
            state: Mutex::new(State { slots: HashMap::new(), clock: 0 }),
        }
    }

    /// Returns the cached value for `key`, or runs `load` (once across concurrent callers).
    /// The flag says whether *this* call ran `load`.
    pub(crate) async fn get_or_load<E, F, Fut>(&self, key: &str, load: F) -> Result<(V, bool), E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        let cell = self.slot(key);
        let mut loaded_here = false;
        let result = cell
            .get_or_try_init(|| {
                loaded_here = true;
                load()
            })
            .await
            .cloned();
        if result.is_err() {
            self.forget_failed(key, &cell);
        }
        result.map(|value| (value, loaded_here))
    }

    /// Number of digests currently held (including loads in flight).
    pub(crate) fn len(&self) -> usize {
        self.lock().slots.len()
    }

    /// Finds or creates the slot for `key`, marks it used, and evicts past capacity.
    fn slot(&self, key: &str) -> Arc<OnceCell<V>> {
        let mut state = self.lock();
        state.clock += 1;
        let now = state.clock;
        let cell = match state.slots.get_mut(key) {
            Some(slot) => {
                slot.last_used = now;
                slot.cell.clone()
            }
            None => {
                let cell = Arc::new(OnceCell::new());
                state.slots.insert(key.to_owned(), Slot { cell: cell.clone(), last_used: now });
                cell
            }
        };
        while state.slots.len() > self.capacity {
            // Only finished loads are evicted: dropping an in-flight slot would let a second
            // caller start a duplicate compile.
            let victim = state
                .slots
                .iter()
                .filter(|(k, slot)| k.as_str() != key && slot.cell.initialized())
                .min_by_key(|(_, slot)| slot.last_used)
                .map(|(k, _)| k.clone());
            match victim {
                Some(victim) => state.slots.remove(&victim),
                None => break,
            };
        }
        cell
    }

    fn forget_failed(&self, key: &str, cell: &Arc<OnceCell<V>>) {
        let mut state = self.lock();
        // Another caller may already have replaced the slot and succeeded; leave that one.
        let same_failed_slot = state
            .slots
            .get(key)
            .is_some_and(|slot| Arc::ptr_eq(&slot.cell, cell) && !slot.cell.initialized());
        if same_failed_slot {
            state.slots.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<V>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn concurrent_loads_of_one_key_run_once() {
        let cache = MemoryCache::<u32>::new(4);
        let calls = AtomicUsize::new(0);
        let barrier = tokio::sync::Barrier::new(2);
        let load = || async {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            Ok::<_, ()>(7)
        };
        let (a, b) = tokio::join!(
            async {
                barrier.wait().await;
                cache.get_or_load("k", load).await
            },
            async {
                barrier.wait().await;
                cache.get_or_load("k", load).await
            }
        );
        assert_eq!(a.map(|v| v.0), Ok(7));
        assert_eq!(b.map(|v| v.0), Ok(7));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn failed_load_is_retried_and_lru_entry_is_evicted() {
        let cache = MemoryCache::<u32>::new(2);
        assert_eq!(cache.get_or_load("a", || async { Err::<u32, &str>("boom") }).await, Err("boom"));
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.get_or_load("a", || async { Ok::<_, ()>(1) }).await, Ok((1, true)));
        assert_eq!(cache.get_or_load("b", || async { Ok::<_, ()>(2) }).await, Ok((2, true)));
        // Touch "a" so "b" is the least recently used when "c" arrives.
        assert_eq!(cache.get_or_load("a", || async { Ok::<_, ()>(99) }).await, Ok((1, false)));
        assert_eq!(cache.get_or_load("c", || async { Ok::<_, ()>(3) }).await, Ok((3, true)));
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get_or_load("a", || async { Ok::<_, ()>(99) }).await, Ok((1, false)));
        assert_eq!(cache.get_or_load("b", || async { Ok::<_, ()>(20) }).await, Ok((20, true)));
    }
}
