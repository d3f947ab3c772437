//! The registry monitor (upstream `JobRegistryHelper`, docs/upstream.md §5.4): drop
//! registrations without a heartbeat for 90 s and rewrite every automatic group's address list
//! from the live ones, sorted like Java's `Collections.sort`.
//!
//! jobwheel addition: [`RegistryMonitor::refresh_group`] rebuilds one AppName's groups at once, so a
//! newly registered executor is routable immediately instead of after up to 30 s.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use jobwheel_protocol::REGISTRY_GROUP_EXECUTOR;

use super::EngineError;
use super::fire::to_datetime;
use crate::clock::Clock;
use crate::routing::{sort_addresses, split_address_list};
use crate::store::{Group, GroupId, GroupRow, Store};

/// Upstream `DEAD_TIMEOUT`: a registration without heartbeat for this long is dead (the
/// default of `EngineConfig::dead_timeout`).
pub const DEAD_TIMEOUT_MS: i64 = 90_000;

/// Group `address_type` of automatic registration.
const AUTO: i16 = 0;

/// The registry monitor: which executors are alive, and each automatic group's addresses.
pub struct RegistryMonitor {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// `--executor-dead-timeout` in ms.
    dead_timeout_ms: i64,
}

impl RegistryMonitor {
    pub(super) fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, dead_timeout: Duration) -> Self {
        let dead_timeout_ms = i64::try_from(dead_timeout.as_millis()).unwrap_or(DEAD_TIMEOUT_MS);
        Self { store, clock, dead_timeout_ms }
    }

    /// One registry monitor pass at `now_ms`. Like upstream, it does nothing unless at least
    /// one group registers automatically.
    pub async fn refresh_registry(&self, now_ms: i64) -> Result<(), EngineError> {
        let groups = self.store.list_groups().await?;
        if !groups.iter().any(|g| g.group.address_type == AUTO) {
            return Ok(());
        }
        let dead_before = to_datetime(now_ms - self.dead_timeout_ms);
        let removed = self.store.remove_dead_registry(dead_before).await?;
        if removed > 0 {
            tracing::info!(removed, "removed dead executor registrations");
        }
        let live = self.live_addresses(now_ms, None).await?;
        for group in groups.iter().filter(|g| g.group.address_type == AUTO) {
            self.write_addresses(group, live.get(&group.group.app_name), now_ms).await?;
        }
        Ok(())
    }

    /// Rebuilds the address lists of the automatic groups of `app_name` from the live
    /// registry now (call after a registration or removal for that AppName).
    pub async fn refresh_group(&self, app_name: &str) -> Result<(), EngineError> {
        let now_ms = self.clock.now_ms();
        let live = self.live_addresses(now_ms, Some(app_name)).await?;
        let groups = self.store.list_groups().await?;
        for group in groups.iter().filter(|g| g.group.address_type == AUTO && g.group.app_name == app_name) {
            self.write_addresses(group, live.get(app_name), now_ms).await?;
        }
        Ok(())
    }

    /// Refuses a manual trigger's address list unless every address is one of group `group`'s
    /// executors: in its stored address list (configured, or written from the registry) or
    /// registered live under its AppName now. Compared without a trailing `/`.
    pub(super) async fn check_manual_addresses(
        &self,
        group: GroupId,
        addresses: &[String],
    ) -> Result<(), EngineError> {
        let Some(row) = self.store.load_group(group).await? else {
            return Err(EngineError::Refused(format!(
                "addressList: executor group {} does not exist",
                group.0
            )));
        };
        let mut known: BTreeSet<String> = row
            .group
            .address_list
            .as_deref()
            .map(split_address_list)
            .unwrap_or_default()
            .into_iter()
            .map(|a| a.trim_end_matches('/').to_owned())
            .collect();
        let live = self.live_addresses(self.clock.now_ms(), Some(&row.group.app_name)).await?;
        if let Some(registered) = live.get(&row.group.app_name) {
            known.extend(registered.iter().map(|a| a.trim_end_matches('/').to_owned()));
        }
        match addresses.iter().find(|a| !known.contains(a.trim_end_matches('/'))) {
            None => Ok(()),
            Some(stranger) => Err(EngineError::Refused(format!(
                "addressList: {stranger} is not an executor of group {:?} (AppName {}); a manual \
                 trigger may only name executors registered or configured for the job's group",
                row.group.title, row.group.app_name
            ))),
        }
    }

    /// AppName → distinct live executor addresses (optionally of one AppName only).
    async fn live_addresses(
        &self,
        now_ms: i64,
        only: Option<&str>,
    ) -> Result<HashMap<String, BTreeSet<String>>, EngineError> {
        let alive_after = to_datetime(now_ms - self.dead_timeout_ms);
        let mut live: HashMap<String, BTreeSet<String>> = HashMap::new();
        for row in self.store.alive_registry(alive_after).await? {
            if row.registry_group != REGISTRY_GROUP_EXECUTOR
                || only.is_some_and(|app| app != row.registry_key)
            {
                continue;
            }
            live.entry(row.registry_key).or_default().insert(row.registry_value);
        }
        Ok(live)
    }

    /// Upstream's full-row group update with the sorted, comma-joined list (NULL when empty).
    async fn write_addresses(
        &self,
        group: &GroupRow,
        addresses: Option<&BTreeSet<String>>,
        now_ms: i64,
    ) -> Result<(), EngineError> {
        let address_list = addresses.filter(|set| !set.is_empty()).map(|set| {
            let mut list: Vec<String> = set.iter().cloned().collect();
            sort_addresses(&mut list);
            list.join(",")
        });
        let updated = Group { address_list, update_time: Some(to_datetime(now_ms)), ..group.group.clone() };
        self.store.update_group(group.id, &updated).await?;
        Ok(())
    }
}
