//! The admin's storage layer: upstream's xxl-job schema plus jobwheel's tables, on SQLite,
//! PostgreSQL or MySQL/MariaDB behind one [`Store`] trait (see `docs/storage.md`).
//!
//! One implementation serves all three databases (`sql/`): its statements are written once in
//! a neutral SQL (`dialect.rs`) that each backend's spelling is derived from, and run through
//! one small layer over the concrete sqlx pools (`db.rs`, `pool.rs`). What truly differs
//! per backend — connecting, migrations, how a write transaction begins — is in `sqlite.rs`,
//! `postgres.rs` and `mysql.rs`; the contract suite in `admin/tests/all/store/` runs on all three.
//! [`Store`] is the sum of one sub-trait per area so that each `sql/` file implements one of
//! them; `use crate::store::prelude::*` brings them all into scope.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

mod alarm_store;
mod approval_store;
mod backfill_store;
mod calendar_store;
mod db;
mod dialect;
mod error;
mod fire_send_store;
mod flight_store;
mod group_store;
mod lease_store;
mod log_piece_store;
mod log_store;
mod mysql;
mod pool;
mod postgres;
mod query_buf;
mod readers;
mod schema;
mod sql;
mod sqlite;
mod support;
mod time;
mod types;
mod workflow_store;

pub use alarm_store::AlarmStore;
pub use approval_store::{ApprovalKind, ApprovalRow, ApprovalStatus, ApprovalStore, Decision, NewApproval};
pub use backfill_store::{BackfillStore, BackfillTx};
pub use calendar_store::CalendarStore;
pub use db::statement_seconds;
pub use error::StoreError;
pub use fire_send_store::{DueSend, FireSend, FireSendStore};
pub use flight_store::{FlightRow, FlightStore};
pub use group_store::GroupStore;
pub(crate) use lease_store::PARTITION_COUNT;
pub use lease_store::{LeaseRequest, LeaseRow, LeaseStore, SCHEDULE_PARTITIONS, SharedSchedule};
pub use log_piece_store::{LogCursor, LogOwner, LogPieceRow, LogPieceStore, NewLogPiece};
pub use log_store::{LogReportStore, LogStore};
pub use schema::{Generation, Schema};
use sql::SqlStore;
pub use types::*;
pub use workflow_store::{
    Admission, InstanceTx, ItemTally, RunEnd, RunTake, WorkflowAlarmStore, WorkflowChildStore,
    WorkflowItemStore, WorkflowStore,
};

/// The traits callers need in scope to call store methods on an `Arc<dyn Store>`.
pub mod prelude {
    pub use super::{
        AlarmStore, ApprovalStore, AuditStore, BackfillStore, CalendarStore, CredentialStore, FireSendStore,
        FlightStore, GrantStore, GroupStore, JobStore, LeaseStore, LogPieceStore, LogReportStore, LogStore,
        ScheduleStore, ScheduleTx, Store, TagStore, UserStore, WasmStore, WorkflowAlarmStore,
        WorkflowChildStore, WorkflowStore,
    };
}

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One file, one admin process.
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MySQL or MariaDB.
    MySql,
}

/// Opens the database named by `url`, creating it if it is a new SQLite file, and applies the
/// migrations of its backend.
///
/// Schemes: `sqlite:` (file created with its parent directory on first start, WAL journal),
/// `postgres:`/`postgresql:`, `mysql:`/`mariadb:`.
pub async fn connect(url: &str) -> Result<Arc<dyn Store>, StoreError> {
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
    match scheme.as_str() {
        "sqlite" => Ok(Arc::new(SqlStore::new(sqlite::connect(url).await?))),
        "postgres" | "postgresql" => Ok(Arc::new(SqlStore::new(postgres::connect(url).await?))),
        "mysql" => Ok(Arc::new(SqlStore::new(mysql::connect(url).await?))),
        // sqlx's MySQL driver ignores the scheme; spell it the way it documents.
        "mariadb" => {
            let url = format!("mysql{}", &url["mariadb".len()..]);
            Ok(Arc::new(SqlStore::new(mysql::connect(&url).await?)))
        }
        _ => Err(StoreError::UnsupportedScheme(scheme)),
    }
}

/// Everything the admin stores. Object-safe: the admin holds an `Arc<dyn Store>`.
#[async_trait]
pub trait Store:
    GroupStore
    + JobStore
    + TagStore
    + ScheduleStore
    + LeaseStore
    + LogStore
    + LogReportStore
    + LogPieceStore
    + FlightStore
    + FireSendStore
    + UserStore
    + CredentialStore
    + WasmStore
    + GrantStore
    + AuditStore
    + CalendarStore
    + WorkflowStore
    + WorkflowAlarmStore
    + WorkflowChildStore
    + WorkflowItemStore
    + AlarmStore
    + BackfillStore
    + ApprovalStore
    + Send
    + Sync
{
    /// The database behind this store.
    fn backend(&self) -> Backend;
    /// The generation of upstream's schema the database holds (`store/schema.rs`).
    fn schema(&self) -> Schema;
    /// One cheap read of upstream's lock table: the database answers and the schema is there
    /// (the readiness probe).
    async fn ping(&self) -> Result<(), StoreError>;
}

/// Job tags (`jobwheel_job_tag`) and what the job search reads.
#[async_trait]
pub trait TagStore: Send + Sync {
    /// The tags of `jobs`, as `(job, tag)` pairs ordered by job and tag.
    async fn job_tags(&self, jobs: &[JobId]) -> Result<Vec<(JobId, String)>, StoreError>;
    /// Replaces a job's tags with `tags` (already normalized by the caller); nothing is stored
    /// for a job that does not exist.
    async fn set_job_tags(&self, job: JobId, tags: &[String]) -> Result<(), StoreError>;
    /// Every tag in use with its number of jobs, in `group` only if given, ordered by tag.
    async fn tag_counts(&self, group: Option<GroupId>) -> Result<Vec<(String, i64)>, StoreError>;
    /// Id, description, handler and author of every job the filter matches, newest first: what
    /// the fuzzy job search scores (a few dozen bytes a job, not the job rows).
    async fn job_search_keys(&self, filter: &JobFilter) -> Result<Vec<JobSearchKey>, StoreError>;
}

/// Jobs (`xxl_job_info`) and their GLUE history (`xxl_job_logglue`).
#[async_trait]
pub trait JobStore: Send + Sync {
    /// Inserts a job.
    async fn add_job(&self, job: &Job) -> Result<JobId, StoreError>;
    /// Rewrites every column of a job except `add_time`; false if it does not exist.
    async fn update_job(&self, id: JobId, job: &Job) -> Result<bool, StoreError>;
    /// Deletes a job with all its logs, GLUE history, Wasm versions and ring claims (one
    /// transaction); false if it did not exist.
    async fn delete_job(&self, id: JobId) -> Result<bool, StoreError>;
    /// One job.
    async fn load_job(&self, id: JobId) -> Result<Option<JobRow>, StoreError>;
    /// Several jobs at once, for the trigger path's batches; missing ids are left out, the
    /// order is unspecified. The default loads them one by one.
    async fn load_jobs(&self, ids: &[JobId]) -> Result<Vec<JobRow>, StoreError> {
        let mut rows = Vec::with_capacity(ids.len());
        for id in ids {
            rows.extend(self.load_job(*id).await?);
        }
        Ok(rows)
    }
    /// The job epoch: a number every job edit through this store moves (`update_job`,
    /// `delete_job`, `start_job`, `stop_job`, `set_job_time_zone`, `set_job_priority`). A job
    /// row read after reading the epoch is still current while the epoch has not moved.
    async fn job_epoch(&self) -> Result<i64, StoreError>;
    /// What completing runs of `ids` needs of their jobs (a callback batch's follow-up: a few
    /// columns, not whole rows); missing ids are left out, the order is unspecified.
    async fn follow_ups(&self, ids: &[JobId]) -> Result<Vec<JobFollowUp>, StoreError>;
    /// A page of jobs matching `filter`, newest id first.
    async fn page_jobs(&self, filter: &JobFilter, page: Page) -> Result<Paged<JobRow>, StoreError>;
    /// Starts a job: status 1, `trigger_last_time = 0`, `trigger_next_time = next_ms`.
    async fn start_job(&self, id: JobId, next_ms: i64, now: DateTime<Utc>) -> Result<bool, StoreError>;
    /// Stops a job: status 0, last and next time 0.
    async fn stop_job(&self, id: JobId, now: DateTime<Utc>) -> Result<bool, StoreError>;
    /// jobwheel extension: sets (`Some`, an IANA name) or clears (`None`) the job's time zone in
    /// `jobwheel_job_zone`. Setting it for a job that does not exist writes nothing. The store
    /// keeps the name as given; validating it is the caller's (and the engine falls back to its
    /// own zone when a stored name is not a zone).
    async fn set_job_time_zone(&self, id: JobId, time_zone: Option<&str>) -> Result<(), StoreError>;
    /// jobwheel extension: the job's own retry backoff (`jobwheel_job_retry`), `None` when it
    /// uses the admin's `--retry-backoff*`.
    async fn job_retry_backoff(&self, id: JobId) -> Result<Option<RetryBackoff>, StoreError>;
    /// Sets a job's priority (`HIGH` or `LOW`), or clears it (`None`: normal); nothing for a
    /// job that does not exist.
    async fn set_job_priority(&self, id: JobId, priority: Option<&str>) -> Result<(), StoreError>;
    /// Sets a job's delivery mode (`EXACTLY_ONCE`), or clears it (`None`: at most once);
    /// nothing for a job that does not exist.
    async fn set_job_delivery(&self, id: JobId, mode: Option<&str>) -> Result<(), StoreError>;
    /// Sets (`Some`) or clears (`None`) the job's retry backoff; nothing for a missing job.
    async fn set_job_retry_backoff(&self, id: JobId, backoff: Option<RetryBackoff>)
    -> Result<(), StoreError>;
    /// Adds a GLUE history row and deletes all but the newest [`HISTORY_KEPT_PER_JOB`] of the job.
    async fn add_glue_history(&self, glue: &NewGlueHistory) -> Result<i32, StoreError>;
    /// The job's GLUE history, newest first.
    async fn list_glue_history(&self, job_id: JobId) -> Result<Vec<GlueHistoryRow>, StoreError>;
}

/// The pre-read transaction and the durable ring (`jobwheel_ring_claim`).
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Begins a pre-read: a transaction holding the schedule lock until
    /// [`ScheduleTx::commit`] (or until it is dropped, which rolls back). PostgreSQL/MySQL:
    /// `SELECT … FROM xxl_job_lock WHERE lock_name = 'schedule_lock' FOR UPDATE`, so admins on
    /// one database take turns; SQLite: `BEGIN IMMEDIATE`.
    async fn begin_schedule(&self) -> Result<Box<dyn ScheduleTx>, StoreError>;
    /// Pending claims with `fire_time_ms <= up_to_ms`, by fire time then id.
    async fn pending_claims(&self, up_to_ms: i64) -> Result<Vec<ClaimRow>, StoreError>;
    /// Fires a claim: in one transaction, marks it fired **if still pending** and inserts the
    /// log row. `None` (and no log row) if another trigger or admin consumed or discarded it.
    async fn consume_claim_and_insert_log(
        &self,
        claim: ClaimId,
        log: &NewLog,
    ) -> Result<Option<LogId>, StoreError>;
    /// [`ScheduleStore::consume_claim_and_insert_log`] for many claims at once (the ring fires
    /// a second's worth together); the answers are in input order, and each claim is consumed
    /// at most once even if it is listed twice. The default handles them one by one.
    async fn consume_claims_and_insert_logs(
        &self,
        items: &[(ClaimId, NewLog)],
    ) -> Result<Vec<Option<LogId>>, StoreError> {
        let mut out = Vec::with_capacity(items.len());
        for (claim, log) in items {
            out.push(self.consume_claim_and_insert_log(*claim, log).await?);
        }
        Ok(out)
    }
    /// Splits a broadcast trigger's claim into one claim per shard, in one transaction: if
    /// `claim` is still pending it becomes shard `0/total` (fired, with the log row staged for
    /// it or else a new one from `log`), and a pending claim `"i/total"` with the same job and fire time is inserted for
    /// each `i` in `1..total`. Their ids come back in shard order (`None`: the claim was no
    /// longer pending). Each shard then fires by consuming its own claim, so shards that had
    /// not gone out when an admin died stay pending for recovery. `now_ms` is the new claims'
    /// claim time (the store never reads the clock).
    async fn split_claim(
        &self,
        claim: ClaimId,
        log: &NewLog,
        total: usize,
        now_ms: i64,
    ) -> Result<Option<(LogId, Vec<ClaimId>)>, StoreError>;
    /// Fires staged claims (see [`ScheduleTx::stage_claims`]): in one transaction, marks each
    /// claim fired **if still pending**; answers in input order whether this call took it (a
    /// claim listed twice is taken once), recording `taken_ms` as its take time. Its log row
    /// exists already, so nothing else is written before the trigger's `/run`.
    async fn take_claims(&self, claims: &[ClaimId], taken_ms: i64) -> Result<Vec<bool>, StoreError>;
    /// Marks a pending claim discarded, and deletes the log row staged for it (if any, and if
    /// it has no trigger outcome); false if it was no longer pending.
    async fn discard_claim(&self, claim: ClaimId) -> Result<bool, StoreError>;
    /// Discards pending `claims` (as [`discard_claim`](Self::discard_claim)) and, if any was
    /// still pending, inserts the missed-fire row `missed(count, first fire time)` describes —
    /// in one transaction, so of two admins recovering the same claims exactly one records
    /// them, and a crash cannot discard them unrecorded. The ids discarded.
    async fn discard_missed(
        &self,
        claims: &[ClaimRow],
        missed: &(dyn Fn(usize, i64) -> MissedFire + Sync),
    ) -> Result<Vec<ClaimId>, StoreError>;
    /// Deletes fired and discarded claims with `fire_time_ms < before_ms`; the number deleted.
    async fn purge_claims(&self, before_ms: i64) -> Result<u64, StoreError>;
}

/// One pre-read, holding the schedule lock. Dropping it without `commit` rolls back.
#[async_trait]
pub trait ScheduleTx: Send {
    /// Upstream `scheduleJobQuery`: running jobs with `trigger_next_time <= max_next_time_ms`,
    /// by id, at most `limit`; whole rows as [`JobStore::load_job`] reads them (zone and
    /// priority included), so a trigger can fire with them.
    async fn due_jobs(&mut self, max_next_time_ms: i64, limit: u32) -> Result<Vec<JobRow>, StoreError>;
    /// Upstream ≥ 3.4 batch update (`CASE id WHEN …`, 100 jobs per statement) guarded by
    /// `AND trigger_status = 1`, so a job stopped meanwhile is not resurrected. Returns the
    /// number of jobs updated.
    async fn update_trigger_times(&mut self, updates: &[TriggerTimeUpdate]) -> Result<u64, StoreError>;
    /// Inserts pending claims, none staged; their ids in input order.
    async fn insert_claims(&mut self, claims: &[NewClaim]) -> Result<Vec<ClaimId>, StoreError> {
        let bare: Vec<(NewClaim, Option<NewLog>)> = claims.iter().map(|claim| (*claim, None)).collect();
        Ok(self.stage_claims(&bare).await?.into_iter().map(|(claim, _)| claim).collect())
    }
    /// Inserts pending claims; a claim given a log is **staged** (pre-staged firing): its log
    /// row (`trigger_code` 0, the scheduled trigger time) is inserted too and the claim points
    /// at it. `(claim, staged log)` ids in input order. Firing a staged claim only takes it
    /// ([`ScheduleStore::take_claims`]); one nobody fired is recovered like any pending claim,
    /// with its log row.
    async fn stage_claims(
        &mut self,
        claims: &[(NewClaim, Option<NewLog>)],
    ) -> Result<Vec<(ClaimId, Option<LogId>)>, StoreError>;
    /// Inserts the missed-fire rows of the jobs this pre-read skipped (`DO_NOTHING`), in the
    /// transaction that advances them.
    async fn record_missed(&mut self, missed: &[MissedFire]) -> Result<(), StoreError>;
    /// Commits and releases the lock.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// Admin users (`xxl_job_user`).
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Inserts a user; a duplicate username is a [`StoreError::Database`] unique violation.
    async fn add_user(&self, user: &User) -> Result<UserId, StoreError>;
    /// Rewrites every column of a user; false if absent.
    async fn update_user(&self, id: UserId, user: &User) -> Result<bool, StoreError>;
    /// Deletes a user; false if absent.
    async fn delete_user(&self, id: UserId) -> Result<bool, StoreError>;
    /// One user by id.
    async fn load_user(&self, id: UserId) -> Result<Option<UserRow>, StoreError>;
    /// One user by exact username.
    async fn find_user(&self, username: &str) -> Result<Option<UserRow>, StoreError>;
    /// A page of users matching `filter`, by username (upstream order).
    async fn page_users(&self, filter: &UserFilter, page: Page) -> Result<Paged<UserRow>, StoreError>;
}

/// Login sessions and API tokens (`jobwheel_session`, `jobwheel_api_token`). Keys are SHA-256
/// digests; the callers hash.
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// Stores a new session.
    async fn insert_session(&self, session: &NewSession) -> Result<(), StoreError>;
    /// The session with this digest if it has not expired at `now_ms`.
    async fn load_session(&self, id_hash: &str, now_ms: i64) -> Result<Option<SessionRow>, StoreError>;
    /// Ends one session; false if there was none.
    async fn delete_session(&self, id_hash: &str) -> Result<bool, StoreError>;
    /// Ends every session of a user except `keep` (the digest of the caller's own, if any).
    async fn delete_user_sessions(&self, user_id: UserId, keep: Option<&str>) -> Result<u64, StoreError>;
    /// Deletes sessions that expired before `now_ms`.
    async fn purge_sessions(&self, now_ms: i64) -> Result<u64, StoreError>;
    /// Stores an API token and answers its id.
    async fn add_api_token(&self, token: &NewApiToken) -> Result<i64, StoreError>;
    /// A user's tokens, newest first.
    async fn list_api_tokens(&self, user_id: UserId) -> Result<Vec<ApiTokenRow>, StoreError>;
    /// The token with this digest.
    async fn find_api_token(&self, token_hash: &str) -> Result<Option<ApiTokenRow>, StoreError>;
    /// Records that a token was used at `now_ms`.
    async fn touch_api_token(&self, id: i64, now_ms: i64) -> Result<(), StoreError>;
    /// Deletes one of `user_id`'s tokens; false if it has no such token.
    async fn delete_api_token(&self, id: i64, user_id: UserId) -> Result<bool, StoreError>;
    /// Deletes every token of a user (the user was deleted).
    async fn delete_user_tokens(&self, user_id: UserId) -> Result<u64, StoreError>;
    /// The user a single sign-on provider's `subject` signs in as (`jobwheel_user_identity`).
    async fn find_identity(&self, provider: &str, subject: &str) -> Result<Option<UserId>, StoreError>;
    /// Records that `provider`'s `subject` is `user_id`; a duplicate is a unique violation.
    async fn add_identity(
        &self,
        provider: &str,
        subject: &str,
        user_id: UserId,
        at_ms: i64,
    ) -> Result<(), StoreError>;
    /// Forgets a user's identities (the user was deleted, or an identity points at none).
    async fn delete_user_identities(&self, user_id: UserId) -> Result<u64, StoreError>;
    /// The identity signed in through its provider at `at_ms` (N4: its sessions and tokens
    /// are honoured for a set time after that).
    async fn confirm_identity(&self, provider: &str, subject: &str, at_ms: i64) -> Result<(), StoreError>;
    /// When a user with single sign-on identities last signed in through a provider; `None`
    /// for a user without any.
    async fn identity_confirmed_ms(&self, user_id: UserId) -> Result<Option<i64>, StoreError>;
}

/// What Wasm jobs are granted: network policy and limits per job, variables and secrets per
/// group and job (secrets sealed by the caller; the store never sees plaintext), and history.
#[async_trait]
pub trait GrantStore: Send + Sync {
    /// The job's grant row, `None` if never saved.
    async fn load_job_grant(&self, job_id: JobId) -> Result<Option<JobGrantRow>, StoreError>;
    /// Inserts or replaces the job's grant row.
    async fn save_job_grant(&self, job_id: JobId, grant: &JobGrantRow, now_ms: i64)
    -> Result<(), StoreError>;
    /// An owner's variables and secrets, by name.
    async fn list_variables(&self, owner: VariableOwner) -> Result<Vec<VariableRow>, StoreError>;
    /// The group's and the job's variables and secrets together (the trigger merges them).
    async fn trigger_variables(&self, group_id: i32, job_id: JobId) -> Result<Vec<VariableRow>, StoreError>;
    /// Inserts or replaces one variable (a secret's `value` is already sealed).
    async fn put_variable(
        &self,
        owner: VariableOwner,
        name: &str,
        secret: bool,
        value: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Deletes one variable; false if there was none.
    async fn delete_variable(&self, owner: VariableOwner, name: &str) -> Result<bool, StoreError>;
    /// Records a change and keeps the newest entries only.
    async fn add_grant_history(
        &self,
        owner: VariableOwner,
        author: &str,
        change: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// The owner's history, newest first.
    async fn list_grant_history(&self, owner: VariableOwner) -> Result<Vec<GrantHistoryRow>, StoreError>;
    /// Replaces every sealed value (secret variables and group tokens) with what `reseal`
    /// returns for it, in one transaction: all or nothing. The first value `reseal` refuses
    /// (`None`) rolls everything back and is returned as `Err`; `Ok` counts the values replaced.
    async fn reseal_all(
        &self,
        reseal: &(dyn for<'v> Fn(&'v SealedValue) -> Option<String> + Send + Sync),
    ) -> Result<Result<usize, SealedValue>, StoreError>;
}

/// The audit log of management changes (`jobwheel_audit`).
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Records one change.
    async fn add_audit(&self, entry: &NewAudit) -> Result<(), StoreError>;
    /// Changes matching `filter`, newest first.
    async fn page_audit(&self, filter: &AuditFilter, page: Page) -> Result<Paged<AuditRow>, StoreError>;
    /// Deletes changes recorded before `before_ms` (log retention); how many.
    async fn purge_audit(&self, before_ms: i64) -> Result<u64, StoreError>;
}

/// Wasm modules by digest and the per-job version history.
#[async_trait]
pub trait WasmStore: Send + Sync {
    /// Stores a module under its SHA-256; storing the same bytes again writes nothing.
    async fn put_wasm_module(&self, bytes: &[u8], now_ms: i64) -> Result<WasmPut, StoreError>;
    /// A module by digest (lower-case hex).
    async fn get_wasm_module(&self, digest: &str) -> Result<Option<WasmModuleRow>, StoreError>;
    /// The job's current module (its newest version) as digest and size, without reading the
    /// module's bytes: what the trigger path sends to executors. `None` if the job has none.
    async fn current_wasm_module(&self, job_id: JobId) -> Result<Option<CurrentWasmModule>, StoreError>;
    /// Adds a version entry and deletes all but the newest [`HISTORY_KEPT_PER_JOB`] of the job.
    async fn add_wasm_version(&self, version: &NewWasmVersion) -> Result<i64, StoreError>;
    /// The job's versions, newest first.
    async fn list_wasm_versions(&self, job_id: JobId) -> Result<Vec<WasmVersionRow>, StoreError>;
    /// Whether a job of group `group` has (or had, within its kept history) the module
    /// `digest`: what an executor holding only that group's access token may download.
    async fn wasm_module_in_group(&self, digest: &str, group: GroupId) -> Result<bool, StoreError>;
    /// The existing groups whose jobs have (or had, within their kept history) the module
    /// `digest`, by id: one query for the global token's download check.
    async fn wasm_module_groups(&self, digest: &str) -> Result<Vec<GroupId>, StoreError>;
    /// The size of the stored module `digest`, without reading its bytes; `None` if it is not
    /// stored (a replay's `wasmModule`).
    async fn wasm_module_size(&self, digest: &str) -> Result<Option<i64>, StoreError>;
}
