//! `ExecutorRouteStrategyEnum`: the ten routing strategy names, their UI titles and order.

use std::fmt;
use std::str::FromStr;

/// How the admin picks the executor address for a trigger (DB column `executor_route_strategy`).
///
/// Declaration order is upstream's, which is also the order of the UI's drop-down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExecutorRouteStrategy {
    /// `list[0]`.
    First,
    /// `list[size - 1]`.
    Last,
    /// Per-job counter, `list[count % size]`.
    Round,
    /// `list[random(size)]`.
    Random,
    /// MD5 ring with 100 virtual nodes per address, keyed by the job id.
    ConsistentHash,
    /// The address this job used least often (counts kept for 24 h).
    LeastFrequentlyUsed,
    /// The address this job used least recently (order kept for 24 h).
    LeastRecentlyUsed,
    /// The first address whose `/beat` answers 200.
    Failover,
    /// The first address whose `/idleBeat` answers 200.
    Busyover,
    /// Every address gets a trigger with its shard index; there is no router.
    ShardingBroadcast,
}

impl ExecutorRouteStrategy {
    /// All strategies in upstream's declaration (= UI) order.
    pub const ALL: [ExecutorRouteStrategy; 10] = [
        Self::First,
        Self::Last,
        Self::Round,
        Self::Random,
        Self::ConsistentHash,
        Self::LeastFrequentlyUsed,
        Self::LeastRecentlyUsed,
        Self::Failover,
        Self::Busyover,
        Self::ShardingBroadcast,
    ];

    /// The upstream enum constant name, as stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "FIRST",
            Self::Last => "LAST",
            Self::Round => "ROUND",
            Self::Random => "RANDOM",
            Self::ConsistentHash => "CONSISTENT_HASH",
            Self::LeastFrequentlyUsed => "LEAST_FREQUENTLY_USED",
            Self::LeastRecentlyUsed => "LEAST_RECENTLY_USED",
            Self::Failover => "FAILOVER",
            Self::Busyover => "BUSYOVER",
            Self::ShardingBroadcast => "SHARDING_BROADCAST",
        }
    }

    /// Upstream's English title (`message_en.properties`, `jobconf_route_*`).
    pub fn title_en(self) -> &'static str {
        match self {
            Self::First => "First",
            Self::Last => "Last",
            Self::Round => "Round",
            Self::Random => "Random",
            Self::ConsistentHash => "Consistent Hash",
            Self::LeastFrequentlyUsed => "Least Frequently Used",
            Self::LeastRecentlyUsed => "Least Recently Used",
            Self::Failover => "Failover",
            Self::Busyover => "Busyover",
            Self::ShardingBroadcast => "Sharding Broadcast",
        }
    }

    /// Upstream's simplified-Chinese title (`message_zh_CN.properties`, `jobconf_route_*`).
    pub fn title_zh(self) -> &'static str {
        match self {
            Self::First => "第一个",
            Self::Last => "最后一个",
            Self::Round => "轮询",
            Self::Random => "随机",
            Self::ConsistentHash => "一致性HASH",
            Self::LeastFrequentlyUsed => "最不经常使用",
            Self::LeastRecentlyUsed => "最近最久未使用",
            Self::Failover => "故障转移",
            Self::Busyover => "忙碌转移",
            Self::ShardingBroadcast => "分片广播",
        }
    }

    /// Whether a router exists for this strategy. Upstream's `SHARDING_BROADCAST` has
    /// `router = null`: the trigger itself loops over the addresses.
    pub fn has_router(self) -> bool {
        self != Self::ShardingBroadcast
    }
}

impl fmt::Display for ExecutorRouteStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strategy name that is not one of the ten upstream constants.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown executor route strategy `{0}`")]
pub struct UnknownRouteStrategy(pub String);

impl FromStr for ExecutorRouteStrategy {
    type Err = UnknownRouteStrategy;

    /// Exact, case-sensitive match like Java's `Enum.valueOf`, which upstream's
    /// `ExecutorRouteStrategyEnum.match` loops over (unknown names fall back to a default there;
    /// callers here decide their own default).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|strategy| strategy.name() == s)
            .ok_or_else(|| UnknownRouteStrategy(s.to_owned()))
    }
}
