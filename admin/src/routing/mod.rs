//! Executor routing: upstream's ten `ExecutorRouteStrategyEnum` strategies, reproduced
//! exactly (see `docs/scheduling.md` and docs/upstream.md §4).
//!
//! - [`ExecutorRouteStrategy`]: names, titles, UI order.
//! - [`Router`]: picks an address; owns ROUND/LFU/LRU state with its 24 h reset, and probes
//!   executors through the [`Probe`] trait for FAILOVER/BUSYOVER.
//! - [`plan_shards`]/[`shard_address`]: SHARDING_BROADCAST, which has no router.
//! - [`sort_addresses`]: Java `Collections.sort` order for registry address lists.

mod addresses;
mod broadcast;
mod cache;
mod hash;
mod lfu;
mod probe;
mod router;

pub use crate::domain::{ExecutorRouteStrategy, UnknownRouteStrategy};
pub use addresses::{java_string_cmp, java_string_hash, sort_addresses, split_address_list};
pub use broadcast::{Shard, parse_sharding_param, plan_shards, shard_address};
pub use cache::{CACHE_VALID_MS, COUNT_RESET_ABOVE, ROUND_START_BOUND};
pub use hash::{VIRTUAL_NODE_NUM, build_ring, hash_job, ring_hash};
pub use probe::{Probe, ProbeResult};
pub use router::{Route, RouteError, Router};
