//! Per-job routing state that upstream keeps in static maps cleared every 24 hours: the
//! ROUND counters and the LEAST_RECENTLY_USED orders (LFU lives in `lfu.rs`).
//!
//! Each strategy has its own map and its own `CACHE_VALID_TIME`, starting at 0 so that the
//! first call clears (an empty map) and sets the next deadline to now + 24 h. State is
//! in-process only; upstream does not share it between admin nodes either.

use std::collections::HashMap;

use crate::clock::RandomSource;

/// How long a strategy's per-job state lives before the whole map is dropped.
pub const CACHE_VALID_MS: i64 = 24 * 60 * 60 * 1000;

/// A counter above this starts over from a random value (ROUND and LFU).
pub const COUNT_RESET_ABOVE: u32 = 1_000_000;

/// ROUND draws its starting counter below this bound ("ease the first burst" upstream).
pub const ROUND_START_BOUND: u32 = 100;

/// A per-job map dropped wholesale once `now > valid_until_ms`.
#[derive(Debug)]
pub(crate) struct DailyMap<V> {
    valid_until_ms: i64,
    pub(crate) jobs: HashMap<i32, V>,
}

impl<V> DailyMap<V> {
    pub(crate) fn new() -> Self {
        Self { valid_until_ms: 0, jobs: HashMap::new() }
    }

    /// Clears the map if its 24 h are over, exactly like upstream's
    /// `if (now > CACHE_VALID_TIME) { clear(); CACHE_VALID_TIME = now + 24h; }`.
    pub(crate) fn expire(&mut self, now_ms: i64) {
        if now_ms > self.valid_until_ms {
            self.jobs.clear();
            self.valid_until_ms = now_ms.saturating_add(CACHE_VALID_MS);
        }
    }
}

/// ROUND: one counter per job (`ExecutorRouteRound.count`).
#[derive(Debug)]
pub(crate) struct RoundCounters(DailyMap<u32>);

impl RoundCounters {
    pub(crate) fn new() -> Self {
        Self(DailyMap::new())
    }

    /// The job's next counter value. A new or overgrown counter starts at
    /// `random(100)` and that first value is used as-is; otherwise it is incremented.
    pub(crate) fn next(&mut self, job_id: i32, now_ms: i64, random: &dyn RandomSource) -> u32 {
        self.0.expire(now_ms);
        let count = match self.0.jobs.get(&job_id) {
            Some(&count) if count <= COUNT_RESET_ABOVE => count + 1,
            _ => random.next_below(ROUND_START_BOUND),
        };
        self.0.jobs.insert(job_id, count);
        count
    }
}

/// LEAST_RECENTLY_USED: per job, the addresses from least to most recently used, modelling
/// `new LinkedHashMap<>(16, 0.75f, true)` (access order).
#[derive(Debug)]
pub(crate) struct LruOrders(DailyMap<Vec<String>>);

impl LruOrders {
    pub(crate) fn new() -> Self {
        Self(DailyMap::new())
    }

    /// Returns the index into `addresses` of the least recently used one and marks it used.
    ///
    /// New addresses are appended in list order (`put` of an absent key goes to the young
    /// end), vanished ones removed, then the eldest is read with `get`, which moves it to the
    /// young end. `containsKey` does not count as an access.
    pub(crate) fn pick(&mut self, job_id: i32, addresses: &[String], now_ms: i64) -> Option<usize> {
        self.0.expire(now_ms);
        let order = self.0.jobs.entry(job_id).or_default();
        for address in addresses {
            if !order.contains(address) {
                order.push(address.clone());
            }
        }
        order.retain(|known| addresses.contains(known));
        if order.is_empty() {
            return None;
        }
        let eldest = order.remove(0);
        let index = addresses.iter().position(|address| *address == eldest);
        order.push(eldest);
        index
    }
}
