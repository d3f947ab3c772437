//! Row and input types for trigger logs, log deletion and the dashboard report.

use chrono::{DateTime, Months, Utc};

use super::{GroupId, JobId, LogId};

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

/// A missed fire's log row (jobwheel, `engine/missed.rs`): a trigger the misfire strategy
/// skipped, written finished in one insert — trigger code 500, no retries left — inside the
/// transaction that skipped it, so a crash cannot keep the skip and lose its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissedFire {
    /// Group of the job.
    pub job_group: GroupId,
    /// The job.
    pub job_id: JobId,
    /// The (first) missed fire time.
    pub trigger_time: DateTime<Utc>,
    /// Says how late, how many fire times and which strategy.
    pub trigger_msg: String,
    /// The job's handler.
    pub executor_handler: Option<String>,
    /// The job's parameter.
    pub executor_param: Option<String>,
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
    /// Stored; what was written (for upstream's `complete()`: child jobs).
    Applied(StoredResult),
    /// Upstream's `"log item not found."`.
    NotFound,
    /// The row already had `handle_code > 0`: upstream's `"log repeate callback."`; unchanged.
    Repeated,
}

/// A result as [`LogStore::apply_handle_result`] wrote it: what completing its log needs
/// (upstream's `complete()` reads the job, the code and the message, nothing else of the row).
///
/// Not the whole row read back: a callback batch would otherwise read every column of every log
/// it completes, the trigger message included, only to drop them.
///
/// [`LogStore::apply_handle_result`]: crate::store::LogStore::apply_handle_result
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResult {
    /// The log row.
    pub id: LogId,
    /// Its job.
    pub job_id: JobId,
    /// The stored result time (whole seconds, as the column keeps it).
    pub handle_time: DateTime<Utc>,
    /// The stored code.
    pub handle_code: i32,
    /// The stored message: an earlier one with the result's appended, cut to
    /// [`MAX_HANDLE_MSG_CHARS`].
    pub handle_msg: String,
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
    /// `executor_address LIKE %…%` (jobwheel: the runs of one executor).
    pub executor_address: Option<String>,
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
