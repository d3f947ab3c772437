//! [`Router`]: picks the executor address for one trigger by strategy, holding the state of
//! the stateful strategies (ROUND, LFU, LRU).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::cache::{LruOrders, RoundCounters};
use super::hash::hash_job;
use super::lfu::LfuTable;
use super::probe::{Probe, ProbeKind, probe_in_order};
use crate::clock::{Clock, RandomSource, SystemClock, ThreadRandom};
use crate::domain::ExecutorRouteStrategy;
use crate::lang::MessageLang;

/// The address a router chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The executor address, as found in the address list.
    pub address: String,
    /// FAILOVER/BUSYOVER's probe log (upstream puts it into the trigger message); `None` for
    /// the other strategies, whose upstream result carries a null message.
    pub msg: Option<String>,
}

/// Why no address was chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The group has no addresses. Upstream never calls a router then; the trigger fails
    /// with `jobconf_trigger_address_empty`.
    #[error("executor address list is empty")]
    NoAddresses,
    /// SHARDING_BROADCAST has no router; use `plan_shards`/`shard_address`.
    #[error("SHARDING_BROADCAST has no router: trigger every shard instead")]
    Broadcast,
    /// Every FAILOVER/BUSYOVER probe failed; `msg` is upstream's accumulated probe text.
    #[error("{msg}")]
    AllProbesFailed {
        /// The `<br>`-separated probe log, stored as the route message upstream.
        msg: String,
    },
}

/// Routes triggers to executor addresses, exactly like upstream's `ExecutorRouter`s.
///
/// One per admin process (upstream's state is static). Each stateful strategy has its own
/// lock and its own 24 h reset; no lock is held across a probe's `await`.
pub struct Router {
    clock: Arc<dyn Clock>,
    random: Arc<dyn RandomSource>,
    lang: MessageLang,
    round: Mutex<RoundCounters>,
    lfu: Mutex<LfuTable>,
    lru: Mutex<LruOrders>,
}

impl Default for Router {
    fn default() -> Self {
        Self::new(Arc::new(SystemClock), Arc::new(ThreadRandom), MessageLang::default())
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").field("lang", &self.lang).finish_non_exhaustive()
    }
}

impl Router {
    /// A router reading `clock` and `random`, writing probe messages in `lang`.
    pub fn new(clock: Arc<dyn Clock>, random: Arc<dyn RandomSource>, lang: MessageLang) -> Self {
        Self {
            clock,
            random,
            lang,
            round: Mutex::new(RoundCounters::new()),
            lfu: Mutex::new(LfuTable::new()),
            lru: Mutex::new(LruOrders::new()),
        }
    }

    /// Picks the address for a trigger of `job_id` among `addresses` (already in upstream's
    /// order, see `sort_addresses`). `probe` is only used by FAILOVER and BUSYOVER.
    pub async fn route(
        &self,
        strategy: ExecutorRouteStrategy,
        job_id: i32,
        addresses: &[String],
        probe: &dyn Probe,
    ) -> Result<Route, RouteError> {
        if addresses.is_empty() {
            return Err(RouteError::NoAddresses);
        }
        let probe_kind = match strategy {
            ExecutorRouteStrategy::Failover => ProbeKind::Beat,
            ExecutorRouteStrategy::Busyover => ProbeKind::IdleBeat,
            ExecutorRouteStrategy::ShardingBroadcast => return Err(RouteError::Broadcast),
            local => return self.route_local(local, job_id, addresses),
        };
        let outcome = probe_in_order(probe_kind, self.lang, job_id, addresses, probe).await;
        match outcome.chosen {
            Some(index) => Ok(Route { address: addresses[index].clone(), msg: Some(outcome.msg) }),
            None => Err(RouteError::AllProbesFailed { msg: outcome.msg }),
        }
    }

    /// The strategies that decide without asking executors. `addresses` is non-empty.
    fn route_local(
        &self,
        strategy: ExecutorRouteStrategy,
        job_id: i32,
        addresses: &[String],
    ) -> Result<Route, RouteError> {
        let len = addresses.len();
        let index = match strategy {
            ExecutorRouteStrategy::First => Some(0),
            ExecutorRouteStrategy::Last => Some(len - 1),
            ExecutorRouteStrategy::Random => {
                Some(self.random.next_below(u32::try_from(len).unwrap_or(u32::MAX)) as usize)
            }
            ExecutorRouteStrategy::Round => {
                let count = locked(&self.round).next(job_id, self.clock.now_ms(), &*self.random);
                Some(count as usize % len)
            }
            ExecutorRouteStrategy::ConsistentHash => hash_job(job_id, addresses),
            ExecutorRouteStrategy::LeastFrequentlyUsed => {
                locked(&self.lfu).pick(job_id, addresses, self.clock.now_ms(), &*self.random)
            }
            ExecutorRouteStrategy::LeastRecentlyUsed => {
                locked(&self.lru).pick(job_id, addresses, self.clock.now_ms())
            }
            ExecutorRouteStrategy::Failover
            | ExecutorRouteStrategy::Busyover
            | ExecutorRouteStrategy::ShardingBroadcast => None,
        };
        // Every arm above yields an index into the non-empty list; `None` only for the
        // strategies `route` dispatched elsewhere.
        let address = index.and_then(|i| addresses.get(i)).ok_or(RouteError::NoAddresses)?;
        Ok(Route { address: address.clone(), msg: None })
    }
}

/// Routing caches stay usable after a panic elsewhere: at worst one job's counters are odd.
fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
