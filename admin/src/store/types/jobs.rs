//! Row and input types for jobs, their GLUE history and the durable ring claims.

use chrono::{DateTime, Utc};

use super::{ClaimId, GroupId, JobId, LogId};
use crate::domain::{
    BlockStrategy, DeliveryMode, ExecutorRouteStrategy, GlueType, MisfireStrategy, Named, Priority,
    ScheduleType,
};

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
    pub schedule_type: Named<ScheduleType>,
    /// Cron expression or seconds.
    pub schedule_conf: Option<String>,
    /// `DO_NOTHING` or `FIRE_ONCE_NOW`.
    pub misfire_strategy: Named<MisfireStrategy>,
    /// Routing strategy.
    pub executor_route_strategy: Option<Named<ExecutorRouteStrategy>>,
    /// BEAN handler name.
    pub executor_handler: Option<String>,
    /// Job parameter.
    pub executor_param: Option<String>,
    /// Block strategy.
    pub executor_block_strategy: Option<Named<BlockStrategy>>,
    /// Timeout in seconds, 0 = none.
    pub executor_timeout: i32,
    /// Retries after a failure.
    pub executor_fail_retry_count: i32,
    /// GLUE type.
    pub glue_type: Named<GlueType>,
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

/// The two columns of a job that completing one of its runs reads (upstream's `complete()`):
/// its child jobs, and whether a FIX_DELAY job is parked waiting for this run.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobFollowUp {
    /// The job.
    pub id: JobId,
    /// `child_jobid`: comma-separated ids to trigger after a success.
    pub child_jobid: Option<String>,
    /// `trigger_next_time`, epoch ms.
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
    /// jobwheel extension: the job's IANA time zone from `jobwheel_job_zone`, `None` when the
    /// job has none (the engine's zone applies). Read by `load_job` and `due_jobs`, the two
    /// queries the scheduler uses; the job list leaves it `None` (the column is absent there).
    #[sqlx(default)]
    pub time_zone: Option<String>,
    /// jobwheel extension: from `jobwheel_job_priority` (no row: normal). Read by `load_job`
    /// and `load_jobs` (the trigger path); normal elsewhere.
    #[sqlx(default, try_from = "Option<String>")]
    pub priority: Priority,
    /// jobwheel extension: from `jobwheel_job_delivery` (no row: at most once). Read by
    /// `load_job` and `load_jobs` (the trigger path); at most once elsewhere.
    #[sqlx(default, try_from = "Option<String>")]
    pub delivery: DeliveryMode,
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
    /// jobwheel: jobs carrying this tag (lower-case, as stored).
    pub tag: Option<String>,
}

/// What the fuzzy job search matches a query against.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobSearchKey {
    /// The job.
    pub id: JobId,
    /// `job_desc`.
    pub job_desc: String,
    /// `executor_handler`.
    pub executor_handler: Option<String>,
    /// `author`.
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

/// A ring claim's state (`jobwheel_ring_claim.status`), stored as its code. The statements
/// that select and move claims (`store/sql/schedule.rs`, `store/sql/batch.rs`) write the codes
/// as literals: PostgreSQL plans the hot ones on them (see `batch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i16)]
pub enum ClaimStatus {
    /// Taken from `xxl_job_info` by a pre-read, not fired yet.
    Pending = 0,
    /// Fired: its log row exists (`log_id`).
    Fired = 1,
    /// Dropped without firing (e.g. the job was deleted).
    Discarded = 2,
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
    /// Its state.
    pub status: ClaimStatus,
    /// The log row the claim turned into, once fired.
    pub log_id: Option<LogId>,
    /// `"index/total"` when the claim is one shard of a broadcast trigger (see
    /// [`ScheduleStore::split_claim`](crate::store::ScheduleStore::split_claim)); `None` for a
    /// whole trigger.
    pub shard: Option<String>,
    /// The admin whose shared pre-read took the claim (its node name in
    /// `jobwheel_scheduler`); `None` when taken under the exclusive schedule lock.
    pub node: Option<String>,
}
