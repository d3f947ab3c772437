//! The store's group area: executor groups, their own tokens and caps, and the registry.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Group, GroupId, GroupRow, GroupTokenRow, RegistryKey, RegistryRow, StoreError, StoredToken};

/// Executor groups (`xxl_job_group`) and executor registrations (`xxl_job_registry`).
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Inserts a group.
    async fn add_group(&self, group: &Group) -> Result<GroupId, StoreError>;
    /// Rewrites every column of a group; false if it does not exist.
    async fn update_group(&self, id: GroupId, group: &Group) -> Result<bool, StoreError>;
    /// Deletes a group and (upstream ≥ 3.3.1) the registry rows of its AppName; false if absent.
    async fn delete_group(&self, id: GroupId) -> Result<bool, StoreError>;
    /// One group.
    async fn load_group(&self, id: GroupId) -> Result<Option<GroupRow>, StoreError>;
    /// All groups, ordered like upstream's `findAll` (app_name, title, id).
    async fn list_groups(&self) -> Result<Vec<GroupRow>, StoreError>;
    /// Every group's access token (xxl-job 3.5's per-executor token) with the group's AppName:
    /// sealed from `jobwheel_group_token`, or on a 3.5 schema as `xxl_job_group.access_token`
    /// holds it (an empty column is no token).
    async fn group_tokens(&self) -> Result<Vec<GroupTokenRow>, StoreError>;
    /// Sets (`Some`) or removes (`None`) a group's access token, where the form says (a
    /// [`StoredToken::Plain`] needs 3.5's column); false if the group does not exist.
    async fn set_group_token(
        &self,
        id: GroupId,
        token: Option<&StoredToken>,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Sets (`Some`) or removes (`None`) the group's cap on runs in flight; nothing for a group
    /// that does not exist.
    async fn set_group_cap(&self, id: GroupId, max_running: Option<i32>) -> Result<(), StoreError>;
    /// Records a heartbeat: inserts the row or refreshes its `update_time` (unique `i_g_k_v`).
    async fn registry_upsert(&self, key: &RegistryKey, now: DateTime<Utc>) -> Result<(), StoreError>;
    /// Removes one registration (`/api/registryRemove`); the number of rows deleted.
    async fn registry_remove(&self, key: &RegistryKey) -> Result<u64, StoreError>;
    /// Deletes registrations with `update_time < dead_before` (upstream `findDead` +
    /// `removeDead`); the number deleted.
    async fn remove_dead_registry(&self, dead_before: DateTime<Utc>) -> Result<u64, StoreError>;
    /// Registrations with `update_time > alive_after`, ordered by id (upstream `findAll`).
    async fn alive_registry(&self, alive_after: DateTime<Utc>) -> Result<Vec<RegistryRow>, StoreError>;
}
