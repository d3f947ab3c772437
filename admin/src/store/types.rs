//! Row and input types of the store: plain data mirroring upstream's columns, no serialization
//! (rows are not a wire contract; the HTTP layer has its own request/response types).
//!
//! Upstream `datetime` columns are `Option<DateTime<Utc>>` (second precision; NULL is legal in
//! upstream's DDL and in adopted databases); upstream's `bigint` millisecond columns
//! (`trigger_last_time`, `trigger_next_time`) and every time in jobwheel's own tables are `i64`
//! epoch milliseconds. Enum-like columns stay strings/integers: an adopted database may hold
//! values this version does not know, and interpreting them is the scheduler's business.

use chrono::{DateTime, Months, Utc};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, sqlx::Type)]
        #[sqlx(transparent)]
        pub struct $name(pub $inner);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// `xxl_job_group.id`.
    GroupId(i32)
);
id_type!(
    /// `xxl_job_info.id`.
    JobId(i32)
);
id_type!(
    /// `xxl_job_log.id`, the `logId` executors see.
    LogId(i64)
);
id_type!(
    /// `xxl_job_user.id`.
    UserId(i32)
);
id_type!(
    /// `jobwheel_ring_claim.id`.
    ClaimId(i64)
);

/// One page of a list: `LIMIT limit OFFSET offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows to skip.
    pub offset: u32,
    /// Rows to return at most.
    pub limit: u32,
}

/// A page of rows plus the number of rows matching the filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Paged<T> {
    /// The rows of this page.
    pub rows: Vec<T>,
    /// All matching rows.
    pub total: u64,
}

// === groups and registry ===

/// `xxl_job_group` without its id.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Group {
    /// AppName; executors register under it.
    pub app_name: String,
    /// Display name.
    pub title: String,
    /// 0 automatic registration, 1 manual entry.
    pub address_type: i16,
    /// Comma-separated addresses (automatic groups: rewritten by the registry monitor).
    pub address_list: Option<String>,
    /// Last change.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

/// A stored `xxl_job_group` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct GroupRow {
    /// Primary key.
    pub id: GroupId,
    /// The columns.
    #[sqlx(flatten)]
    pub group: Group,
}

/// The identity of an `xxl_job_registry` row (its unique key `i_g_k_v`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryKey {
    /// `EXECUTOR` for executors.
    pub registry_group: String,
    /// The executor's AppName.
    pub registry_key: String,
    /// The executor's address.
    pub registry_value: String,
}

/// A stored `xxl_job_registry` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RegistryRow {
    /// Primary key.
    pub id: i64,
    /// `EXECUTOR` for executors.
    pub registry_group: String,
    /// AppName.
    pub registry_key: String,
    /// Address.
    pub registry_value: String,
    /// Last heartbeat.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

// === jobs ===

/// `xxl_job_info` without its id.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Job {
    /// Executor group.
    pub job_group: GroupId,
    /// Description (the job's name in the UI).
    pub job_desc: String,
    /// Creation time.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub add_time: Option<DateTime<Utc>>,
    /// Last change.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
    /// Owner.
    pub author: Option<String>,
    /// Comma-separated alarm e-mail addresses.
    pub alarm_email: Option<String>,
    /// `NONE`, `CRON`, `FIX_RATE` (and our `FIX_DELAY`).
    pub schedule_type: String,
    /// Cron expression or seconds.
    pub schedule_conf: Option<String>,
    /// `DO_NOTHING` or `FIRE_ONCE_NOW`.
    pub misfire_strategy: String,
    /// Routing strategy name.
    pub executor_route_strategy: Option<String>,
    /// BEAN handler name.
    pub executor_handler: Option<String>,
    /// Job parameter.
    pub executor_param: Option<String>,
    /// Block strategy name.
    pub executor_block_strategy: Option<String>,
    /// Timeout in seconds, 0 = none.
    pub executor_timeout: i32,
    /// Retries after a failure.
    pub executor_fail_retry_count: i32,
    /// GLUE type name.
    pub glue_type: String,
    /// Current GLUE source.
    pub glue_source: Option<String>,
    /// Current GLUE remark.
    pub glue_remark: Option<String>,
    /// GLUE version (executors reload when it changes).
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub glue_updatetime: Option<DateTime<Utc>>,
    /// Comma-separated child job ids.
    pub child_jobid: Option<String>,
    /// 0 stopped, 1 running.
    pub trigger_status: i16,
    /// Last trigger, epoch ms.
    pub trigger_last_time: i64,
    /// Next trigger, epoch ms.
    pub trigger_next_time: i64,
}

/// A stored `xxl_job_info` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct JobRow {
    /// Primary key.
    pub id: JobId,
    /// The columns.
    #[sqlx(flatten)]
    pub job: Job,
}

/// Filters of the job list (upstream `pageList`); `None` means "any".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFilter {
    /// `job_group =`.
    pub job_group: Option<GroupId>,
    /// `trigger_status =`.
    pub trigger_status: Option<i16>,
    /// `job_desc LIKE %…%` (case-insensitive on every backend, as on upstream's MySQL).
    pub job_desc: Option<String>,
    /// `executor_handler LIKE %…%`.
    pub executor_handler: Option<String>,
    /// `author LIKE %…%`.
    pub author: Option<String>,
}

/// What the schedule thread writes back for one job after a pre-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TriggerTimeUpdate {
    /// The job.
    pub job_id: JobId,
    /// New `trigger_last_time`, epoch ms.
    pub trigger_last_time: i64,
    /// New `trigger_next_time`, epoch ms.
    pub trigger_next_time: i64,
    /// Whether to set `trigger_status = 0` (upstream: the next time could not be computed);
    /// otherwise the status is left alone.
    pub stop: bool,
}

/// A `xxl_job_logglue` row to add (GLUE history).
#[derive(Debug, Clone, PartialEq)]
pub struct NewGlueHistory {
    /// The job.
    pub job_id: JobId,
    /// GLUE type.
    pub glue_type: Option<String>,
    /// The new source.
    pub glue_source: Option<String>,
    /// Remark.
    pub glue_remark: String,
    /// `add_time` and `update_time`.
    pub now: DateTime<Utc>,
}

/// A stored `xxl_job_logglue` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct GlueHistoryRow {
    /// Primary key.
    pub id: i32,
    /// The job.
    pub job_id: JobId,
    /// GLUE type.
    pub glue_type: Option<String>,
    /// Source.
    pub glue_source: Option<String>,
    /// Remark.
    pub glue_remark: String,
    /// Creation.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub add_time: Option<DateTime<Utc>>,
    /// Last change.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

/// How many GLUE (and Wasm) versions are kept per job, like upstream's `removeOld(jobId, 30)`.
pub const HISTORY_KEPT_PER_JOB: u32 = 30;

// === durable ring claims ===

/// Values of `jobwheel_ring_claim.status`.
pub mod claim_status {
    /// Taken from `xxl_job_info` by a pre-read, not fired yet.
    pub const PENDING: i16 = 0;
    /// Fired: its log row exists (`log_id`).
    pub const FIRED: i16 = 1;
    /// Dropped without firing (e.g. the job was deleted).
    pub const DISCARDED: i16 = 2;
}

/// A claim to insert during a pre-read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewClaim {
    /// The job to fire.
    pub job_id: JobId,
    /// When to fire it, epoch ms (the `trigger_next_time` that was consumed).
    pub fire_time_ms: i64,
    /// When the pre-read took it, epoch ms.
    pub claimed_at_ms: i64,
}

/// A stored `jobwheel_ring_claim` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ClaimRow {
    /// Primary key.
    pub id: ClaimId,
    /// The job.
    pub job_id: JobId,
    /// Fire time, epoch ms.
    pub fire_time_ms: i64,
    /// Claim time, epoch ms.
    pub claimed_at_ms: i64,
    /// See [`claim_status`].
    pub status: i16,
    /// The log row the claim turned into, once fired.
    pub log_id: Option<LogId>,
}

// === logs ===

/// The first insert of a trigger: upstream inserts these columns with `trigger_code = 0` and
/// `handle_code = 0` before calling the executor, so the executor learns the log id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewLog {
    /// Group of the job.
    pub job_group: GroupId,
    /// The job.
    pub job_id: JobId,
    /// Trigger time.
    pub trigger_time: DateTime<Utc>,
}

/// Upstream `updateTriggerInfo`: what the trigger learned after routing and `/run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTriggerUpdate {
    /// The log row.
    pub log_id: LogId,
    /// Trigger time.
    pub trigger_time: DateTime<Utc>,
    /// 200 or 500 (the executor's response code).
    pub trigger_code: i32,
    /// HTML trigger message.
    pub trigger_msg: Option<String>,
    /// Chosen executor address.
    pub executor_address: Option<String>,
    /// Handler.
    pub executor_handler: Option<String>,
    /// Parameter actually sent.
    pub executor_param: Option<String>,
    /// `"i/total"` for broadcast shards.
    pub executor_sharding_param: Option<String>,
    /// Remaining retries.
    pub executor_fail_retry_count: i32,
}

/// A handle result: from a callback, the lost-job monitor or a manual kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleResult {
    /// The log row.
    pub log_id: LogId,
    /// When the result arrived.
    pub handle_time: DateTime<Utc>,
    /// 200, 500, 502 …
    pub handle_code: i32,
    /// Message; appended to an existing one with `<br>` by [`LogStore::apply_handle_result`].
    ///
    /// [`LogStore::apply_handle_result`]: crate::store::LogStore::apply_handle_result
    pub handle_msg: Option<String>,
}

/// What [`LogStore::apply_handle_result`] did.
///
/// [`LogStore::apply_handle_result`]: crate::store::LogStore::apply_handle_result
#[derive(Debug, Clone, PartialEq)]
pub enum HandleOutcome {
    /// Stored; the row after the update (for upstream's `complete()`: child jobs).
    Applied(Box<LogRow>),
    /// Upstream's `"log item not found."`.
    NotFound,
    /// The row already had `handle_code > 0`: upstream's `"log repeate callback."`; unchanged.
    Repeated,
}

/// Upstream keeps at most this many characters of `handle_msg`.
pub const MAX_HANDLE_MSG_CHARS: usize = 15_000;

/// A stored `xxl_job_log` row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct LogRow {
    /// Primary key (`logId`).
    pub id: LogId,
    /// Group.
    pub job_group: GroupId,
    /// Job.
    pub job_id: JobId,
    /// Chosen executor address.
    pub executor_address: Option<String>,
    /// Handler.
    pub executor_handler: Option<String>,
    /// Parameter sent.
    pub executor_param: Option<String>,
    /// `"i/total"` for broadcast shards.
    pub executor_sharding_param: Option<String>,
    /// Remaining retries.
    pub executor_fail_retry_count: i32,
    /// Trigger time.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub trigger_time: Option<DateTime<Utc>>,
    /// 0 just inserted, 200, 500.
    pub trigger_code: i32,
    /// HTML trigger message.
    pub trigger_msg: Option<String>,
    /// Result time.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub handle_time: Option<DateTime<Utc>>,
    /// 0 running, 200, 500, 502.
    pub handle_code: i32,
    /// HTML result message.
    pub handle_msg: Option<String>,
    /// 0 new, −1 locked, 1 not needed, 2 sent, 3 failed.
    pub alarm_status: i16,
}

/// The log list's status filter (upstream `logStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogStatusFilter {
    /// −1: everything.
    #[default]
    All,
    /// 1: `handle_code = 200`.
    Success,
    /// 2: `trigger_code NOT IN (0,200) OR handle_code NOT IN (0,200)`.
    Failed,
    /// 3: `trigger_code = 200 AND handle_code = 0`.
    Running,
}

impl LogStatusFilter {
    /// Upstream's request value; unknown values mean "all", as upstream's mapper does.
    pub fn from_code(code: i32) -> Self {
        match code {
            1 => Self::Success,
            2 => Self::Failed,
            3 => Self::Running,
            _ => Self::All,
        }
    }
}

/// Filters of the log list; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFilter {
    /// `job_group =`.
    pub job_group: Option<GroupId>,
    /// `job_id =`.
    pub job_id: Option<JobId>,
    /// Status.
    pub status: LogStatusFilter,
    /// `trigger_time >=`.
    pub trigger_from: Option<DateTime<Utc>>,
    /// `trigger_time <=`.
    pub trigger_to: Option<DateTime<Utc>>,
}

/// Which logs to delete (upstream `findClearLogIds` + `clearLog`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogClear {
    /// `job_group =`.
    pub job_group: Option<GroupId>,
    /// `job_id =`.
    pub job_id: Option<JobId>,
    /// `trigger_time <=`.
    pub trigger_before: Option<DateTime<Utc>>,
    /// When > 0, the newest this many logs (by `trigger_time`) of the same group/job survive.
    pub keep_newest: u32,
}

/// Upstream's nine "clear log" choices of the log page (`type` 1–9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogClearType {
    /// 1: older than one month.
    OlderThanOneMonth,
    /// 2: older than three months.
    OlderThanThreeMonths,
    /// 3: older than six months.
    OlderThanSixMonths,
    /// 4: older than one year.
    OlderThanOneYear,
    /// 5: all but the newest 1 000.
    KeepNewest1k,
    /// 6: all but the newest 10 000.
    KeepNewest10k,
    /// 7: all but the newest 30 000.
    KeepNewest30k,
    /// 8: all but the newest 100 000.
    KeepNewest100k,
    /// 9: everything.
    All,
}

impl LogClearType {
    /// Upstream's `type` parameter; `None` for anything else (upstream: "clear type invalid").
    pub fn from_code(code: i32) -> Option<Self> {
        Some(match code {
            1 => Self::OlderThanOneMonth,
            2 => Self::OlderThanThreeMonths,
            3 => Self::OlderThanSixMonths,
            4 => Self::OlderThanOneYear,
            5 => Self::KeepNewest1k,
            6 => Self::KeepNewest10k,
            7 => Self::KeepNewest30k,
            8 => Self::KeepNewest100k,
            9 => Self::All,
            _ => return None,
        })
    }

    /// The deletion this choice means at `now` for the given group/job filters. Month arithmetic
    /// is calendar arithmetic in UTC (upstream uses the JVM's zone).
    pub fn to_clear(self, now: DateTime<Utc>, job_group: Option<GroupId>, job_id: Option<JobId>) -> LogClear {
        let months_ago = |m: u32| now.checked_sub_months(Months::new(m)).or(Some(now));
        let (trigger_before, keep_newest) = match self {
            Self::OlderThanOneMonth => (months_ago(1), 0),
            Self::OlderThanThreeMonths => (months_ago(3), 0),
            Self::OlderThanSixMonths => (months_ago(6), 0),
            Self::OlderThanOneYear => (months_ago(12), 0),
            Self::KeepNewest1k => (None, 1_000),
            Self::KeepNewest10k => (None, 10_000),
            Self::KeepNewest30k => (None, 30_000),
            Self::KeepNewest100k => (None, 100_000),
            Self::All => (None, 0),
        };
        LogClear { job_group, job_id, trigger_before, keep_newest }
    }
}

/// Counts of one day's logs (upstream `findLogReport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// All logs.
    pub total: i64,
    /// `trigger_code IN (0,200) AND handle_code = 0`.
    pub running: i64,
    /// `handle_code = 200`.
    pub success: i64,
}

impl LogCounts {
    /// Upstream's `fail = total - running - suc`.
    pub fn failed(&self) -> i64 {
        self.total - self.running - self.success
    }
}

/// A `xxl_job_log_report` row to upsert by `trigger_day`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogReport {
    /// Start of the day.
    pub trigger_day: DateTime<Utc>,
    /// Running.
    pub running_count: i32,
    /// Succeeded.
    pub suc_count: i32,
    /// Failed.
    pub fail_count: i32,
    /// When computed.
    pub update_time: DateTime<Utc>,
}

/// A stored `xxl_job_log_report` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LogReportRow {
    /// Primary key.
    pub id: i32,
    /// Start of the day.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub trigger_day: Option<DateTime<Utc>>,
    /// Running.
    pub running_count: i32,
    /// Succeeded.
    pub suc_count: i32,
    /// Failed.
    pub fail_count: i32,
    /// When computed.
    #[sqlx(try_from = "crate::store::time::DbSecs")]
    pub update_time: Option<DateTime<Utc>>,
}

/// Sums over all report rows (upstream `queryLogReportTotal`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogReportTotals {
    /// Σ running_count.
    pub running: i64,
    /// Σ suc_count.
    pub success: i64,
    /// Σ fail_count.
    pub failed: i64,
}

// === users ===

/// `xxl_job_user` without its id.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct User {
    /// Login name (unique).
    pub username: String,
    /// Password hash, opaque to the store.
    pub password: String,
    /// Current login token signature.
    pub token: Option<String>,
    /// 0 normal, 1 admin.
    pub role: i16,
    /// Comma-separated group ids a normal user may manage.
    pub permission: Option<String>,
}

/// A stored `xxl_job_user` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UserRow {
    /// Primary key.
    pub id: UserId,
    /// The columns.
    #[sqlx(flatten)]
    pub user: User,
}

/// Filters of the user list; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserFilter {
    /// `username LIKE %…%`.
    pub username: Option<String>,
    /// `role =`.
    pub role: Option<i16>,
}

// === wasm modules ===

/// Result of storing a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmPut {
    /// Lower-case hex SHA-256 of the bytes.
    pub digest: String,
    /// False when a module with that digest was already stored (nothing was written).
    pub inserted: bool,
}

/// A stored `jobwheel_wasm_module` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WasmModuleRow {
    /// Primary key.
    pub id: i64,
    /// Lower-case hex SHA-256 of `bytes`.
    pub digest: String,
    /// The module.
    pub bytes: Vec<u8>,
    /// `bytes.len()`.
    pub size: i64,
    /// Upload time, epoch ms.
    pub created_at_ms: i64,
}

/// A version-history entry to add for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWasmVersion {
    /// The job.
    pub job_id: JobId,
    /// Module digest.
    pub digest: String,
    /// Who uploaded it.
    pub uploader: Option<String>,
    /// Remark.
    pub remark: Option<String>,
    /// Epoch ms.
    pub created_at_ms: i64,
}

/// A stored `jobwheel_wasm_version` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WasmVersionRow {
    /// Primary key.
    pub id: i64,
    /// The job.
    pub job_id: JobId,
    /// Module digest.
    pub digest: String,
    /// Who uploaded it.
    pub uploader: Option<String>,
    /// Remark.
    pub remark: Option<String>,
    /// Epoch ms.
    pub created_at_ms: i64,
}
