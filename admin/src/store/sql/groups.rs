//! Executor groups (`xxl_job_group`) and the executor registry (`xxl_job_registry`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::time::{opt_secs, secs};
use crate::store::{
    Group, GroupId, GroupRow, GroupStore, GroupTokenRow, RegistryKey, RegistryRow, StoreError, StoredToken,
};

/// A group with its cap (`jobwheel_group_cap` has no column named like one of
/// `xxl_job_group`'s, so the unqualified column list stays unambiguous).
macro_rules! group_with_cap {
    () => {
        "SELECT id, app_name, GROUP_NAME AS title, address_type, address_list, EPOCH(update_time) AS update_time, \
         c.max_running FROM xxl_job_group LEFT JOIN jobwheel_group_cap c ON c.group_id = xxl_job_group.id"
    };
}

static LOAD_GROUP: Sql = Sql::new(concat!(group_with_cap!(), " WHERE id = ?"));
static LIST_GROUPS: Sql = Sql::new(concat!(group_with_cap!(), " ORDER BY app_name, GROUP_NAME, id"));
/// Only for an existing group (the `SELECT` yields no row otherwise).
static SET_GROUP_CAP: Sql = Sql::new(
    "INSERT INTO jobwheel_group_cap (group_id, max_running) SELECT id, ? FROM xxl_job_group WHERE id = ? \
    ON CONFLICT (group_id) DO UPDATE SET max_running = excluded.max_running",
);
static DELETE_GROUP_CAP: Sql = Sql::new("DELETE FROM jobwheel_group_cap WHERE group_id = ?");

static INSERT_GROUP: Sql = Sql::new(
    "INSERT INTO xxl_job_group (app_name, GROUP_NAME, address_type, address_list, update_time) \
    VALUES (?, ?, ?, ?, TS(?)) RETURNING id",
);
static UPDATE_GROUP: Sql = Sql::new(
    "UPDATE xxl_job_group SET app_name = ?, GROUP_NAME = ?, address_type = ?, \
    address_list = ?, update_time = TS(?) WHERE id = ?",
);
static DELETE_GROUP_REGISTRY: Sql = Sql::new(
    "DELETE FROM xxl_job_registry WHERE registry_group = 'EXECUTOR' \
    AND registry_key IN (SELECT app_name FROM xxl_job_group WHERE id = ?)",
);
static DELETE_GROUP_TOKEN: Sql = Sql::new("DELETE FROM jobwheel_group_token WHERE group_id = ?");
static DELETE_GROUP: Sql = Sql::new("DELETE FROM xxl_job_group WHERE id = ?");
/// The group's own variables, secrets and their history go with it (review L1).
static DELETE_GROUP_VARIABLES: Sql =
    Sql::new("DELETE FROM jobwheel_variable WHERE group_id = ? AND job_id = 0");
static DELETE_GROUP_HISTORY: Sql =
    Sql::new("DELETE FROM jobwheel_grant_history WHERE group_id = ? AND job_id = 0");

static GROUP_TOKENS: Sql = Sql::new(
    "SELECT t.group_id, g.app_name, t.sealed FROM jobwheel_group_token t \
    JOIN xxl_job_group g ON g.id = t.group_id ORDER BY t.group_id",
);
/// Only for an existing group (the `SELECT` yields no row otherwise).
static SET_GROUP_TOKEN: Sql = Sql::new(
    "INSERT INTO jobwheel_group_token (group_id, sealed, update_time) SELECT id, ?, I64(?) \
    FROM xxl_job_group WHERE id = ? \
    ON CONFLICT (group_id) DO UPDATE SET sealed = excluded.sealed, update_time = excluded.update_time",
);
/// xxl-job 3.5 keeps a group's token in its own row; an empty one is no token (3.5's admin
/// refuses a blank token, jobwheel falls back to the global one).
static COLUMN_TOKENS: Sql = Sql::new(
    "SELECT id, app_name, access_token FROM xxl_job_group \
    WHERE access_token IS NOT NULL AND access_token <> '' ORDER BY id",
);
static SET_COLUMN_TOKEN: Sql = Sql::new("UPDATE xxl_job_group SET access_token = ? WHERE id = ?");
static GROUP_EXISTS: Sql = Sql::new("SELECT I64(COUNT(*)) FROM xxl_job_group WHERE id = ?");

// Upstream ≥ 2.5: one statement, the unique key `i_g_k_v` decides insert or refresh.
static REGISTRY_UPSERT: Sql = Sql::new(
    "INSERT INTO xxl_job_registry (registry_group, registry_key, registry_value, update_time) \
    VALUES (?, ?, ?, TS(?)) ON CONFLICT (registry_group, registry_key, registry_value) \
    DO UPDATE SET update_time = excluded.update_time",
);
static REGISTRY_REMOVE: Sql = Sql::new(
    "DELETE FROM xxl_job_registry WHERE registry_group = ? AND registry_key = ? AND registry_value = ?",
);
static REGISTRY_REMOVE_DEAD: Sql = Sql::new("DELETE FROM xxl_job_registry WHERE update_time < TS(?)");
static REGISTRY_ALIVE: Sql = Sql::new(
    "SELECT id, registry_group, registry_key, registry_value, EPOCH(update_time) AS update_time \
    FROM xxl_job_registry WHERE update_time > TS(?) ORDER BY id",
);

#[async_trait]
impl GroupStore for SqlStore {
    async fn add_group(&self, group: &Group) -> Result<GroupId, StoreError> {
        let args = args![
            &group.app_name,
            &group.title,
            group.address_type,
            &group.address_list,
            opt_secs(group.update_time)
        ];
        Ok(GroupId(self.ex().insert_id(&INSERT_GROUP, &args).await?))
    }

    async fn update_group(&self, id: GroupId, group: &Group) -> Result<bool, StoreError> {
        let args = args![
            &group.app_name,
            &group.title,
            group.address_type,
            &group.address_list,
            opt_secs(group.update_time),
            id
        ];
        Ok(self.ex().execute(&UPDATE_GROUP, &args).await? > 0)
    }

    async fn delete_group(&self, id: GroupId) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        tx.ex().execute(&DELETE_GROUP_REGISTRY, &args![id]).await?;
        tx.ex().execute(&DELETE_GROUP_TOKEN, &args![id]).await?;
        tx.ex().execute(&DELETE_GROUP_CAP, &args![id]).await?;
        tx.ex().execute(&DELETE_GROUP_VARIABLES, &args![id]).await?;
        tx.ex().execute(&DELETE_GROUP_HISTORY, &args![id]).await?;
        let deleted = tx.ex().execute(&DELETE_GROUP, &args![id]).await?;
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn load_group(&self, id: GroupId) -> Result<Option<GroupRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_GROUP, &args![id]).await
    }

    async fn list_groups(&self) -> Result<Vec<GroupRow>, StoreError> {
        self.ex().fetch_all(&LIST_GROUPS, &[]).await
    }

    async fn group_tokens(&self) -> Result<Vec<GroupTokenRow>, StoreError> {
        let (stmt, form): (_, fn(String) -> StoredToken) = if self.db.schema().group_token_column {
            (&COLUMN_TOKENS, StoredToken::Plain)
        } else {
            (&GROUP_TOKENS, StoredToken::Sealed)
        };
        let rows: Vec<(GroupId, String, String)> = self.ex().fetch_all(stmt, &[]).await?;
        Ok(rows
            .into_iter()
            .map(|(group_id, app_name, token)| GroupTokenRow { group_id, app_name, token: form(token) })
            .collect())
    }

    async fn set_group_token(
        &self,
        id: GroupId,
        token: Option<&StoredToken>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let changed = match token {
            Some(StoredToken::Plain(token)) => {
                self.ex().execute(&SET_COLUMN_TOKEN, &args![token.as_str(), id]).await?
            }
            Some(StoredToken::Sealed(sealed)) => {
                return Ok(
                    self.ex().execute(&SET_GROUP_TOKEN, &args![sealed.as_str(), now_ms, id]).await? > 0
                );
            }
            None if self.db.schema().group_token_column => {
                self.ex().execute(&SET_COLUMN_TOKEN, &args![None::<&str>, id]).await?
            }
            None => {
                self.ex().execute(&DELETE_GROUP_TOKEN, &args![id]).await?;
                0
            }
        };
        if changed > 0 {
            return Ok(true);
        }
        // MySQL counts a row set to the value it had as unchanged: ask whether the group exists.
        let count: Option<i64> = self.ex().fetch_value(&GROUP_EXISTS, &args![id]).await?;
        Ok(count.unwrap_or(0) > 0)
    }

    async fn set_group_cap(&self, id: GroupId, max_running: Option<i32>) -> Result<(), StoreError> {
        match max_running {
            Some(max) => self.ex().execute(&SET_GROUP_CAP, &args![max, id]).await?,
            None => self.ex().execute(&DELETE_GROUP_CAP, &args![id]).await?,
        };
        Ok(())
    }

    async fn registry_upsert(&self, key: &RegistryKey, now: DateTime<Utc>) -> Result<(), StoreError> {
        let args = args![&key.registry_group, &key.registry_key, &key.registry_value, secs(now)];
        self.ex().execute(&REGISTRY_UPSERT, &args).await?;
        Ok(())
    }

    async fn registry_remove(&self, key: &RegistryKey) -> Result<u64, StoreError> {
        let args = args![&key.registry_group, &key.registry_key, &key.registry_value];
        self.ex().execute(&REGISTRY_REMOVE, &args).await
    }

    async fn remove_dead_registry(&self, dead_before: DateTime<Utc>) -> Result<u64, StoreError> {
        self.ex().execute(&REGISTRY_REMOVE_DEAD, &args![secs(dead_before)]).await
    }

    async fn alive_registry(&self, alive_after: DateTime<Utc>) -> Result<Vec<RegistryRow>, StoreError> {
        self.ex().fetch_all(&REGISTRY_ALIVE, &args![secs(alive_after)]).await
    }
}
