//! Backfills (`jobwheel_backfill`) and the scheduled times they handed out
//! (`jobwheel_backfill_fire`): docs/backfill.md.

use super::{GroupId, InstanceId, LogId};

/// What a backfill runs the schedule of (`jobwheel_backfill.target_kind`, by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BackfillKind {
    /// A job: each time is a trigger of it.
    Job,
    /// A workflow: each time is an instance of it.
    Workflow,
}

impl BackfillKind {
    /// The stored and API name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Job => "JOB",
            Self::Workflow => "WORKFLOW",
        }
    }

    /// The kind a stored name names.
    pub fn of(name: &str) -> Option<Self> {
        match name {
            "JOB" => Some(Self::Job),
            "WORKFLOW" => Some(Self::Workflow),
            _ => None,
        }
    }
}

/// A backfill's state (`jobwheel_backfill.status`), stored as its code. The SQL that selects
/// by state writes the codes as literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum BackfillStatus {
    /// Times are still being handed out, or runs it started are not over.
    Running = 0,
    /// Every time of the range was handed out (or skipped) and every run is over.
    Done = 1,
    /// Cancelled: no further time is handed out.
    Cancelled = 2,
    /// Its target is gone or its schedule has no times any more.
    Failed = 3,
}

impl BackfillStatus {
    /// The API's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "RUNNING",
            Self::Done => "DONE",
            Self::Cancelled => "CANCELLED",
            Self::Failed => "FAILED",
        }
    }
}

/// A backfill as requested.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NewBackfill {
    /// `JOB` or `WORKFLOW` ([`BackfillKind`]).
    pub target_kind: String,
    /// The job's or workflow's id.
    pub target_id: i64,
    /// The target's group (what rights on it are checked against).
    pub job_group: GroupId,
    /// The range's first scheduled time, epoch ms (inclusive).
    pub from_ms: i64,
    /// The range's last scheduled time, epoch ms (inclusive).
    pub to_ms: i64,
    /// At most this many of its runs at once.
    pub parallelism: i32,
    /// Times that already ran are run again (else skipped).
    pub rerun_existing: i16,
    /// Where it is.
    pub status: BackfillStatus,
    /// Every scheduled time up to this one was handed out (starts at `from_ms - 1`).
    pub cursor_ms: i64,
    /// The scheduled times in the range, counted when it was requested.
    pub total: i32,
    /// Times handed out (run).
    pub handed: i32,
    /// Times skipped because they already ran.
    pub skipped: i32,
    /// Why it failed, if it did.
    pub message: Option<String>,
    /// Who asked.
    pub author: String,
    /// When, epoch ms.
    pub created_ms: i64,
    /// When it ended (0 while running).
    pub end_ms: i64,
}

/// A stored backfill.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct BackfillRow {
    /// Primary key.
    pub id: i64,
    /// The columns.
    #[sqlx(flatten)]
    pub backfill: NewBackfill,
}

impl BackfillRow {
    /// What it runs, if this admin knows the kind.
    pub fn kind(&self) -> Option<BackfillKind> {
        BackfillKind::of(&self.backfill.target_kind)
    }
}

/// How the runs a backfill started stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackfillProgress {
    /// Handed out and not over yet (or not sent yet).
    pub running: i64,
    /// Over and succeeded.
    pub succeeded: i64,
    /// Over and failed (or stopped).
    pub failed: i64,
}

/// A scheduled time handed out but not sent (its admin died between the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct UnsentFire {
    /// `jobwheel_backfill_fire.id`.
    pub id: i64,
    /// Its backfill.
    pub backfill_id: i64,
    /// The time it runs.
    pub scheduled_ms: i64,
    /// When it was claimed for sending.
    pub claimed_ms: i64,
}

/// What ran a scheduled time: a job's first log row or a workflow's instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FireRun {
    /// A job's trigger.
    Log(LogId),
    /// A workflow's instance.
    Instance(InstanceId),
    /// Nothing ran (its target went away): stored as log row 0, counted as failed.
    Nothing,
}
