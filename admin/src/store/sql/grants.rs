//! Wasm job grants: the job's network policy and limits (`jobwheel_job_grant`), variables and
//! secrets (`jobwheel_variable`, secrets already sealed by the caller) and their history.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::{
    GrantHistoryRow, GrantStore, GroupId, JobGrantRow, JobId, SealedValue, StoreError, VariableOwner,
    VariableRow,
};

/// History entries kept per group or job.
const GRANT_HISTORY_KEPT: i64 = 50;

static LOAD_GRANT: Sql = Sql::new(
    "SELECT http_allow, http_max_requests, http_max_response_bytes, http_timeout_ms, fuel, memory_bytes, uses, \
    record_runs, journal_max_bytes FROM jobwheel_job_grant WHERE job_id = ?",
);
static SAVE_GRANT: Sql = Sql::new(
    "INSERT INTO jobwheel_job_grant (job_id, http_allow, http_max_requests, http_max_response_bytes, \
    http_timeout_ms, fuel, memory_bytes, uses, record_runs, journal_max_bytes, update_ms) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
    ON CONFLICT (job_id) DO UPDATE SET http_allow = excluded.http_allow, \
    http_max_requests = excluded.http_max_requests, http_max_response_bytes = excluded.http_max_response_bytes, \
    http_timeout_ms = excluded.http_timeout_ms, fuel = excluded.fuel, memory_bytes = excluded.memory_bytes, \
    uses = excluded.uses, record_runs = excluded.record_runs, journal_max_bytes = excluded.journal_max_bytes, \
    update_ms = excluded.update_ms",
);
macro_rules! variable_select {
    () => {
        "SELECT group_id, job_id, name, secret, value, update_ms FROM jobwheel_variable"
    };
}
static LIST_VARIABLES: Sql =
    Sql::new(concat!(variable_select!(), " WHERE group_id = ? AND job_id = ? ORDER BY name"));
static TRIGGER_VARIABLES: Sql = Sql::new(concat!(
    variable_select!(),
    " WHERE (group_id = ? AND job_id = 0) OR (group_id = 0 AND job_id = ?) ORDER BY name"
));
static PUT_VARIABLE: Sql = Sql::new(
    "INSERT INTO jobwheel_variable (group_id, job_id, name, secret, value, update_ms) VALUES (?, ?, ?, ?, ?, ?) \
    ON CONFLICT (group_id, job_id, name) DO UPDATE SET secret = excluded.secret, value = excluded.value, \
    update_ms = excluded.update_ms",
);
static DELETE_VARIABLE: Sql =
    Sql::new("DELETE FROM jobwheel_variable WHERE group_id = ? AND job_id = ? AND name = ?");
static ADD_HISTORY: Sql = Sql::new(
    "INSERT INTO jobwheel_grant_history (group_id, job_id, author, change_text, add_ms) VALUES (?, ?, ?, ?, ?)",
);
static LIST_HISTORY: Sql = Sql::new(
    "SELECT id, author, change_text, add_ms FROM jobwheel_grant_history \
    WHERE group_id = ? AND job_id = ? ORDER BY id DESC",
);
static TRIM_HISTORY: Sql =
    Sql::new("DELETE FROM jobwheel_grant_history WHERE group_id = ? AND job_id = ? AND id <= ?");
/// Locked until the re-seal commits, so a secret saved meanwhile waits and is not lost.
static SEALED_SECRETS: Sql = Sql::new(
    "SELECT group_id, job_id, name, value FROM jobwheel_variable WHERE secret <> 0 ORDER BY group_id, job_id, name FOR UPDATE",
);
static SEALED_TOKENS: Sql =
    Sql::new("SELECT group_id, sealed FROM jobwheel_group_token ORDER BY group_id FOR UPDATE");
static RESEAL_SECRET: Sql =
    Sql::new("UPDATE jobwheel_variable SET value = ? WHERE group_id = ? AND job_id = ? AND name = ?");
/// Alarm channels' URLs and signing keys (docs/alarms.md); e-mail channels have none.
static SEALED_CHANNELS: Sql =
    Sql::new("SELECT id, name, sealed FROM jobwheel_alarm_channel WHERE sealed <> '' ORDER BY id");
static RESEAL_CHANNEL: Sql = Sql::new("UPDATE jobwheel_alarm_channel SET sealed = ? WHERE id = ?");
static RESEAL_TOKEN: Sql = Sql::new("UPDATE jobwheel_group_token SET sealed = ? WHERE group_id = ?");
static NTH_HISTORY_ID: Sql = Sql::new(
    "SELECT id FROM jobwheel_grant_history WHERE group_id = ? AND job_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?",
);

#[async_trait]
impl GrantStore for SqlStore {
    async fn load_job_grant(&self, job_id: JobId) -> Result<Option<JobGrantRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_GRANT, &args![job_id]).await
    }

    async fn save_job_grant(
        &self,
        job_id: JobId,
        grant: &JobGrantRow,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let args = args![
            job_id,
            &grant.http_allow,
            grant.http_max_requests,
            grant.http_max_response_bytes,
            grant.http_timeout_ms,
            grant.fuel,
            grant.memory_bytes,
            &grant.uses,
            grant.record_runs,
            grant.journal_max_bytes,
            now_ms
        ];
        self.ex().execute(&SAVE_GRANT, &args).await?;
        Ok(())
    }

    async fn list_variables(&self, owner: VariableOwner) -> Result<Vec<VariableRow>, StoreError> {
        let (group_id, job_id) = owner.columns();
        self.ex().fetch_all(&LIST_VARIABLES, &args![group_id, job_id]).await
    }

    async fn trigger_variables(&self, group_id: i32, job_id: JobId) -> Result<Vec<VariableRow>, StoreError> {
        self.ex().fetch_all(&TRIGGER_VARIABLES, &args![group_id, job_id]).await
    }

    async fn put_variable(
        &self,
        owner: VariableOwner,
        name: &str,
        secret: bool,
        value: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let (group_id, job_id) = owner.columns();
        let args = args![group_id, job_id, name, i16::from(secret), value, now_ms];
        self.ex().execute(&PUT_VARIABLE, &args).await?;
        Ok(())
    }

    async fn delete_variable(&self, owner: VariableOwner, name: &str) -> Result<bool, StoreError> {
        let (group_id, job_id) = owner.columns();
        Ok(self.ex().execute(&DELETE_VARIABLE, &args![group_id, job_id, name]).await? > 0)
    }

    async fn add_grant_history(
        &self,
        owner: VariableOwner,
        author: &str,
        change: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let (group_id, job_id) = owner.columns();
        self.ex().execute(&ADD_HISTORY, &args![group_id, job_id, author, change, now_ms]).await?;
        let oldest_kept: Option<(i64,)> =
            self.ex().fetch_optional(&NTH_HISTORY_ID, &args![group_id, job_id, GRANT_HISTORY_KEPT]).await?;
        if let Some((id,)) = oldest_kept {
            self.ex().execute(&TRIM_HISTORY, &args![group_id, job_id, id]).await?;
        }
        Ok(())
    }

    async fn list_grant_history(&self, owner: VariableOwner) -> Result<Vec<GrantHistoryRow>, StoreError> {
        let (group_id, job_id) = owner.columns();
        self.ex().fetch_all(&LIST_HISTORY, &args![group_id, job_id]).await
    }

    async fn reseal_all(
        &self,
        reseal: &(dyn for<'v> Fn(&'v SealedValue) -> Option<String> + Send + Sync),
    ) -> Result<Result<usize, SealedValue>, StoreError> {
        let mut tx = self.db.begin().await?;
        let secrets: Vec<(i32, i32, String, String)> = tx.ex().fetch_all(&SEALED_SECRETS, &[]).await?;
        let tokens: Vec<(GroupId, String)> = tx.ex().fetch_all(&SEALED_TOKENS, &[]).await?;
        let mut replaced = 0;
        for (group_id, job_id, name, sealed) in secrets {
            let owner = if job_id == 0 {
                VariableOwner::Group(GroupId(group_id))
            } else {
                VariableOwner::Job(JobId(job_id))
            };
            let value = SealedValue { owner, name: Some(name), sealed, channel: None };
            let Some(resealed) = reseal(&value) else { return Ok(Err(value)) };
            let name = value.name.as_deref().unwrap_or_default();
            tx.ex().execute(&RESEAL_SECRET, &args![resealed.as_str(), group_id, job_id, name]).await?;
            replaced += 1;
        }
        for (group, sealed) in tokens {
            let value = SealedValue { owner: VariableOwner::Group(group), name: None, sealed, channel: None };
            let Some(resealed) = reseal(&value) else { return Ok(Err(value)) };
            tx.ex().execute(&RESEAL_TOKEN, &args![resealed.as_str(), group]).await?;
            replaced += 1;
        }
        let channels: Vec<(i64, String, String)> = tx.ex().fetch_all(&SEALED_CHANNELS, &[]).await?;
        for (id, name, sealed) in channels {
            let owner = VariableOwner::Group(GroupId(0));
            let value = SealedValue { owner, name: None, sealed, channel: Some(name) };
            let Some(resealed) = reseal(&value) else { return Ok(Err(value)) };
            tx.ex().execute(&RESEAL_CHANNEL, &args![resealed.as_str(), id]).await?;
            replaced += 1;
        }
        tx.commit().await?;
        Ok(Ok(replaced))
    }
}
