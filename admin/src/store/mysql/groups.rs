//! MySQL/MariaDB: executor groups and the executor registry.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{MySqlStore, inserted_id};
use crate::store::time::{opt_secs, secs};
use crate::store::{Group, GroupId, GroupRow, GroupStore, RegistryKey, RegistryRow, StoreError};

macro_rules! group_columns {
    () => {
        "id, app_name, title, address_type, address_list, CAST(UNIX_TIMESTAMP(update_time) AS SIGNED) AS update_time"
    };
}

const LOAD_GROUP: &str = concat!("SELECT ", group_columns!(), " FROM xxl_job_group WHERE id = ?");
const LIST_GROUPS: &str =
    concat!("SELECT ", group_columns!(), " FROM xxl_job_group ORDER BY app_name, title, id");

const INSERT_GROUP: &str = "INSERT INTO xxl_job_group \
    (app_name, title, address_type, address_list, update_time) \
    VALUES (?, ?, ?, ?, FROM_UNIXTIME(?))";
const UPDATE_GROUP: &str = "UPDATE xxl_job_group SET app_name = ?, title = ?, address_type = ?, \
    address_list = ?, update_time = FROM_UNIXTIME(?) WHERE id = ?";
const DELETE_GROUP_REGISTRY: &str = "DELETE FROM xxl_job_registry WHERE registry_group = 'EXECUTOR' \
    AND registry_key IN (SELECT app_name FROM xxl_job_group WHERE id = ?)";
const DELETE_GROUP: &str = "DELETE FROM xxl_job_group WHERE id = ?";

// Upstream ≥ 2.5: one statement, the unique key `i_g_k_v` decides insert or refresh. `VALUES()`
// rather than MySQL 8's row alias, which MariaDB does not know.
const REGISTRY_UPSERT: &str = "INSERT INTO xxl_job_registry \
    (registry_group, registry_key, registry_value, update_time) \
    VALUES (?, ?, ?, FROM_UNIXTIME(?)) \
    ON DUPLICATE KEY UPDATE update_time = VALUES(update_time)";
const REGISTRY_REMOVE: &str = "DELETE FROM xxl_job_registry \
    WHERE registry_group = ? AND registry_key = ? AND registry_value = ?";
const REGISTRY_REMOVE_DEAD: &str = "DELETE FROM xxl_job_registry WHERE update_time < FROM_UNIXTIME(?)";
const REGISTRY_ALIVE: &str = "SELECT id, registry_group, registry_key, registry_value, \
    CAST(UNIX_TIMESTAMP(update_time) AS SIGNED) AS update_time FROM xxl_job_registry \
    WHERE update_time > FROM_UNIXTIME(?) ORDER BY id";

#[async_trait]
impl GroupStore for MySqlStore {
    async fn add_group(&self, group: &Group) -> Result<GroupId, StoreError> {
        let done = sqlx::query(INSERT_GROUP)
            .bind(&group.app_name)
            .bind(&group.title)
            .bind(group.address_type)
            .bind(&group.address_list)
            .bind(opt_secs(group.update_time))
            .execute(&self.pool)
            .await?;
        Ok(GroupId(inserted_id(&done)?))
    }

    async fn update_group(&self, id: GroupId, group: &Group) -> Result<bool, StoreError> {
        let done = sqlx::query(UPDATE_GROUP)
            .bind(&group.app_name)
            .bind(&group.title)
            .bind(group.address_type)
            .bind(&group.address_list)
            .bind(opt_secs(group.update_time))
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_group(&self, id: GroupId) -> Result<bool, StoreError> {
        let mut tx = self.begin_tx().await?;
        sqlx::query(DELETE_GROUP_REGISTRY).bind(id).execute(&mut *tx).await?;
        let done = sqlx::query(DELETE_GROUP).bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn load_group(&self, id: GroupId) -> Result<Option<GroupRow>, StoreError> {
        Ok(sqlx::query_as(LOAD_GROUP).bind(id).fetch_optional(&self.pool).await?)
    }

    async fn list_groups(&self) -> Result<Vec<GroupRow>, StoreError> {
        Ok(sqlx::query_as(LIST_GROUPS).fetch_all(&self.pool).await?)
    }

    async fn registry_upsert(&self, key: &RegistryKey, now: DateTime<Utc>) -> Result<(), StoreError> {
        sqlx::query(REGISTRY_UPSERT)
            .bind(&key.registry_group)
            .bind(&key.registry_key)
            .bind(&key.registry_value)
            .bind(secs(now))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn registry_remove(&self, key: &RegistryKey) -> Result<u64, StoreError> {
        let done = sqlx::query(REGISTRY_REMOVE)
            .bind(&key.registry_group)
            .bind(&key.registry_key)
            .bind(&key.registry_value)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn remove_dead_registry(&self, dead_before: DateTime<Utc>) -> Result<u64, StoreError> {
        let done = sqlx::query(REGISTRY_REMOVE_DEAD).bind(secs(dead_before)).execute(&self.pool).await?;
        Ok(done.rows_affected())
    }

    async fn alive_registry(&self, alive_after: DateTime<Utc>) -> Result<Vec<RegistryRow>, StoreError> {
        Ok(sqlx::query_as(REGISTRY_ALIVE).bind(secs(alive_after)).fetch_all(&self.pool).await?)
    }
}
