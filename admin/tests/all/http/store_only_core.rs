//! [`StoreOnlyCore`]: an [`AdminCore`] without a scheduling engine, for testing the HTTP edge
//! on its own. It keeps the database current and nothing more.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use jobwheel_protocol::{DEAD_TIMEOUT_SECS, HandleCallbackParam, REGISTRY_GROUP_EXECUTOR};

use jobwheel_admin::clock::{Clock, SystemClock};
use jobwheel_admin::engine::EngineError;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::store::{Group, HandleOutcome, HandleResult, LogId, Store, StoreError};

/// `address_type` of a group whose addresses come from executor registrations.
const ADDRESS_TYPE_AUTO: i16 = 0;

/// An [`AdminCore`] that only writes to the store: callbacks are applied to their log rows
/// (with upstream's repeat guard), and a group's address list is recomputed from live registry
/// rows when an executor appears or leaves.
///
/// **The scheduler is not started by this core**: no job is triggered, and completing a log
/// does nothing further — no child jobs, retries, alarms, lost-job detection or periodic
/// registry pass (dead executors stay in a group's address list until one of its executors
/// registers or deregisters again).
pub(crate) struct StoreOnlyCore {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl StoreOnlyCore {
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Self { store, clock: Arc::new(SystemClock) }
    }

    /// The same core deciding by `clock`, which the HTTP edge then reads too.
    pub(crate) fn on_clock(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }
}

#[async_trait]
impl AdminCore for StoreOnlyCore {
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
        for item in items {
            let result = HandleResult {
                log_id: LogId(item.log_id),
                handle_time: Utc::now(),
                handle_code: item.handle_code,
                handle_msg: Some(item.handle_msg).filter(|m| !m.is_empty()),
            };
            match self.store.apply_handle_result(&result).await? {
                HandleOutcome::Applied(_) => {
                    tracing::debug!(log_id = item.log_id, code = item.handle_code, "callback applied");
                }
                HandleOutcome::NotFound => tracing::warn!(log_id = item.log_id, "log item not found."),
                HandleOutcome::Repeated => tracing::info!(log_id = item.log_id, "log repeate callback."),
            }
        }
        Ok(())
    }

    fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    async fn refresh_group(&self, app_name: &str) {
        if let Err(e) = refresh_group_addresses(self.store.as_ref(), app_name, Utc::now()).await {
            tracing::error!(app = app_name, error = %e, "cannot refresh the group's address list");
        }
    }
}

/// Upstream's registry pass (§5.4) for one AppName: every automatic group named `app_name` gets
/// the sorted, distinct addresses of its `EXECUTOR` registrations younger than 90 s, comma
/// joined, or NULL if there are none. Groups whose list is already current are not rewritten.
pub(crate) async fn refresh_group_addresses(
    store: &dyn Store,
    app_name: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let groups: Vec<_> = store
        .list_groups()
        .await?
        .into_iter()
        .filter(|g| g.group.address_type == ADDRESS_TYPE_AUTO && g.group.app_name == app_name)
        .collect();
    if groups.is_empty() {
        return Ok(());
    }
    let dead_before = now - chrono::Duration::seconds(DEAD_TIMEOUT_SECS as i64);
    let addresses: BTreeSet<String> = store
        .alive_registry(dead_before)
        .await?
        .into_iter()
        .filter(|r| r.registry_group == REGISTRY_GROUP_EXECUTOR && r.registry_key == app_name)
        .map(|r| r.registry_value)
        .collect();
    let address_list = (!addresses.is_empty()).then(|| addresses.into_iter().collect::<Vec<_>>().join(","));
    for row in groups {
        if row.group.address_list == address_list {
            continue;
        }
        let group = Group { address_list: address_list.clone(), update_time: Some(now), ..row.group };
        store.update_group(row.id, &group).await?;
    }
    Ok(())
}
