//! A trigger resolved against its job and group, before any shard of it exists: the addresses
//! it may go to and where they came from, its routing strategy, whether it is a broadcast, and
//! its one trigger time. The trigger path resolves (`trigger.rs`); each shard is sent from it
//! (`shard.rs`); the pre-read asks only the routing strategy.

use std::sync::Arc;

use super::fire::TriggerRequest;
use crate::domain::Named;
use crate::executor_client::ExecutorApi;
use crate::routing::{ExecutorRouteStrategy, Shard, split_address_list};
use crate::store::{GroupRow, JobRow};

/// A trigger resolved against its job and group: what every shard of it shares. The stages of
/// a trigger are the request ([`TriggerRequest`]), this, and one shard whose log row exists
/// (`process_trigger`'s `shard` and `log_id`).
pub(super) struct Resolved<'r> {
    pub(super) request: &'r TriggerRequest,
    pub(super) job: Arc<JobRow>,
    pub(super) targets: Targets,
    pub(super) strategy: Option<ExecutorRouteStrategy>,
    pub(super) is_broadcast: bool,
    /// Every shard's trigger time (upstream ≥ 3.3.2: one per trigger).
    pub(super) trigger_time_ms: i64,
}

impl Resolved<'_> {
    /// The shard as routing, the log and `trigger_msg` see it: a broadcast's, else none.
    pub(super) fn broadcast_shard(&self, shard: Shard) -> Option<Shard> {
        self.is_broadcast.then_some(shard)
    }
}

/// The addresses of one trigger and where they came from.
pub(super) struct Targets {
    pub(super) address_type: i16,
    pub(super) addresses: Vec<String>,
    /// The group's cap on runs in flight (`jobwheel_group_cap`).
    pub(super) max_running: Option<i32>,
    /// The client for this group's executors (its own token and 3.5's protocol, if it has one).
    pub(super) client: Arc<dyn ExecutorApi>,
}

/// The group's addresses, or the caller's override (which makes the group "manual" for this
/// trigger, as upstream does). A missing group has no addresses.
pub(super) fn targets(
    group: Option<&GroupRow>,
    override_list: Option<&[String]>,
    client: Arc<dyn ExecutorApi>,
) -> Targets {
    // A manual address list does not lift the group's cap: the runs are still the group's.
    let max_running = group.and_then(|g| g.max_running);
    let (address_type, listed) = match override_list.filter(|list| !list.is_empty()) {
        Some(list) => (1, list.to_vec()),
        None => (
            group.map_or(0, |g| g.group.address_type),
            group
                .and_then(|g| g.group.address_list.as_deref())
                .filter(|list| !list.trim().is_empty())
                .map(split_address_list)
                .unwrap_or_default(),
        ),
    };
    let addresses = reachable(listed, client.as_ref());
    Targets { address_type, addresses, max_running, client }
}

/// `listed` without the dial-out executors this admin has no link to — a pod SIGKILLed a moment
/// ago stays registered until the dead timeout, and one registered through another admin may not
/// have dialled this one yet; a trigger routed there could only fail. When none is reachable
/// the list stays whole, so the trigger fails naming an address and why.
fn reachable(listed: Vec<String>, client: &dyn ExecutorApi) -> Vec<String> {
    if !listed.iter().any(|address| client.unreachable_here(address)) {
        return listed;
    }
    let kept: Vec<String> =
        listed.iter().filter(|address| !client.unreachable_here(address)).cloned().collect();
    if kept.is_empty() { listed } else { kept }
}

/// The job's routing strategy; `None` when the stored name is not one of the ten.
pub(super) fn route_strategy(job: &JobRow) -> Option<ExecutorRouteStrategy> {
    job.job.executor_route_strategy.as_ref().and_then(Named::known)
}
