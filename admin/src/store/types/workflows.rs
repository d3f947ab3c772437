//! Row and input types of workflows (`jobwheel_workflow`), their instances
//! (`jobwheel_workflow_instance`) and node runs (`jobwheel_workflow_run`). The graph and the
//! context are JSON text here; `crate::workflow` gives them meaning.

use super::{DayRefs, GroupId, InstanceId, LogId, RunId, WorkflowId};
use crate::domain::{MisfireStrategy, Named, Overflow, ScheduleType, TriggerType};

/// A workflow's settings, as written.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NewWorkflow {
    /// Shown name.
    pub name: String,
    /// The owner group: who may see, edit and start it.
    pub job_group: GroupId,
    /// `NONE`, `CRON` or `FIX_RATE` (the form refuses the rest; a stored unknown name stops
    /// its schedule).
    pub schedule_type: Named<ScheduleType>,
    /// The cron expression or the rate in seconds.
    pub schedule_conf: Option<String>,
    /// IANA zone of the schedule (`None`: the admin's).
    pub time_zone: Option<String>,
    /// `DO_NOTHING` or `FIRE_ONCE_NOW` ([`MisfireStrategy::of`] reads a stored one).
    pub misfire_strategy: Named<MisfireStrategy>,
    /// Instances running at once, at most.
    pub max_instances: i32,
    /// Beyond it: `SKIP` or `QUEUE` ([`Overflow::of`] reads a stored one).
    pub overflow: Named<Overflow>,
    /// The DAG (`workflow::Graph` as JSON).
    pub graph: String,
    /// Whether its schedule runs.
    pub status: ScheduleStatus,
    /// Epoch ms of the last scheduled start.
    pub trigger_last_time: i64,
    /// Epoch ms of the next scheduled start (0: none).
    pub trigger_next_time: i64,
    /// Who last wrote it.
    pub author: String,
    /// Epoch ms of the last write.
    pub update_ms: i64,
    /// Its calendars and exclusion windows (`jobwheel_workflow_calendar`,
    /// `jobwheel_workflow_window`), written and read with the row.
    #[sqlx(skip)]
    pub days: DayRefs,
    /// Where its alarms are mailed: comma-separated addresses (empty: none).
    pub alarm_email: String,
}

/// A stored workflow.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WorkflowRow {
    /// Its id.
    pub id: WorkflowId,
    /// Its settings.
    #[sqlx(flatten)]
    pub workflow: NewWorkflow,
}

/// Whether a workflow's schedule runs (`jobwheel_workflow.status`), stored as its code (the
/// API's `triggerStatus`, as a job's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum ScheduleStatus {
    /// Started only by hand or API.
    #[default]
    Stopped = 0,
    /// Its schedule starts instances.
    Running = 1,
}

impl ScheduleStatus {
    /// The API's `triggerStatus` code.
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// Instance states (`jobwheel_workflow_instance.status`), stored as their codes. The SQL that
/// selects by state (`store/sql/workflows.rs`) writes the codes as literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum InstanceStatus {
    /// Waiting for a slot under `max_instances` (`QUEUE`).
    Queued = 0,
    /// Nodes are due or running.
    Running = 1,
    /// Every node over, none failed.
    Succeeded = 2,
    /// Every node over, one failed.
    Failed = 3,
    /// Stopped by a user.
    Stopped = 4,
    /// A scheduled start that did not happen (late under `DO_NOTHING`, or at max instances
    /// with `SKIP`): kept so it is seen and alarmed; it never runs.
    Missed = 5,
}

impl InstanceStatus {
    /// The API's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Queued => "QUEUED",
            Self::Running => "RUNNING",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Stopped => "STOPPED",
            Self::Missed => "MISSED",
        }
    }

    /// Whether it has ended (it will not run any more nodes unless rerun).
    pub fn is_over(self) -> bool {
        !matches!(self, Self::Queued | Self::Running)
    }
}

/// Node run states (`jobwheel_workflow_run.status`), stored as their codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum RunStatus {
    /// Waiting to be fired (at `due_ms`).
    Due = 0,
    /// Fired: its log rows exist.
    Fired = 1,
    /// Succeeded.
    Succeeded = 2,
    /// Failed (this attempt).
    Failed = 3,
    /// Its edges' conditions did not hold.
    Skipped = 4,
    /// Disabled: passed as a success.
    Passed = 5,
    /// The instance was stopped before it ended.
    Stopped = 6,
    /// A skip undone by a rerun or a "mark done": the node is planned again.
    Revoked = 7,
    /// An approval node waiting for a user's decision (or its deadline, `deadline_ms`).
    Waiting = 8,
}

impl RunStatus {
    /// The API's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Due => "DUE",
            Self::Fired => "FIRED",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Skipped => "SKIPPED",
            Self::Passed => "PASSED",
            Self::Stopped => "STOPPED",
            Self::Revoked => "REVOKED",
            Self::Waiting => "WAITING",
        }
    }

    /// Whether this attempt is over (neither waiting nor fired).
    pub fn is_over(self) -> bool {
        !matches!(self, Self::Due | Self::Fired)
    }
}

/// A stored instance.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct InstanceRow {
    /// Its id.
    pub id: InstanceId,
    /// Its workflow.
    pub workflow_id: WorkflowId,
    /// Its state.
    pub status: InstanceStatus,
    /// How it started: `CRON`, `MISFIRE`, `MANUAL`, `API`, `RERUN` or `WORKFLOW` (a parent's
    /// sub-workflow node; a name this admin does not know is kept as read).
    pub trigger_type: Named<TriggerType>,
    /// The instance it reruns (`RERUN` only).
    pub rerun_of: Option<InstanceId>,
    /// The instance whose sub-workflow node started it (`WORKFLOW` only).
    pub parent_instance: Option<InstanceId>,
    /// That node's run, which waits for this instance to end.
    pub parent_run: Option<RunId>,
    /// The scheduled time (or the start request's), epoch ms.
    pub fire_time_ms: i64,
    /// When it began running (0 while queued).
    pub start_ms: i64,
    /// When it ended (0 while not over).
    pub end_ms: i64,
    /// The graph it runs: the workflow's at its start.
    pub graph: String,
    /// The context (a JSON object): the start's input and each node's output by node name.
    pub context: String,
}

impl InstanceRow {
    /// How it started, as the API and alarms tell it: the trigger type's name, a rerun with the
    /// instance it reruns (`RERUN of 12`), a child with its parent (`WORKFLOW of 12`).
    pub fn started_by(&self) -> String {
        match self.rerun_of {
            Some(of) if self.trigger_type.is(TriggerType::Rerun) => format!("RERUN of {}", of.0),
            _ => match self.parent_instance {
                Some(of) if self.trigger_type.is(TriggerType::Workflow) => format!("WORKFLOW of {}", of.0),
                _ => self.trigger_type.as_str().to_owned(),
            },
        }
    }
}

/// An instance as a step under its row lock reads it: all but the context, which the step
/// reads only if it needs it ([`InstanceTx::context`](crate::store::InstanceTx::context)) — a
/// map's items can make it large, and most steps (an item ending) need none of it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LockedInstance {
    /// Its id.
    pub id: InstanceId,
    /// Its state.
    pub status: InstanceStatus,
    /// The instance whose sub-workflow node started it.
    pub parent_instance: Option<InstanceId>,
    /// That node's run, which waits for this instance to end.
    pub parent_run: Option<RunId>,
    /// When it began running (0 while queued).
    pub start_ms: i64,
    /// When it ended (0 while not over).
    pub end_ms: i64,
    /// The graph it runs.
    pub graph: String,
}

/// A new instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInstance {
    /// Its workflow.
    pub workflow_id: WorkflowId,
    /// How it started.
    pub trigger_type: TriggerType,
    /// The instance it reruns (`RERUN` only).
    pub rerun_of: Option<InstanceId>,
    /// The scheduled or requested time.
    pub fire_time_ms: i64,
    /// The graph to run.
    pub graph: String,
    /// The initial context.
    pub context: String,
}

/// A stored node run (one attempt of one node of one instance).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunRow {
    /// Its id.
    pub id: RunId,
    /// Its instance.
    pub instance_id: InstanceId,
    /// The node's name.
    pub node: String,
    /// 1 for the first attempt.
    pub attempt: i32,
    /// Its state.
    pub status: RunStatus,
    /// Not fired before this time.
    pub due_ms: i64,
    /// When it was fired (0: not yet).
    pub fired_ms: i64,
    /// When it ended (0: not yet).
    pub end_ms: i64,
    /// Shards fired (0 until known).
    pub shards: i32,
    /// The first shard's log row.
    pub log_id: Option<LogId>,
    /// What it produced (JSON), merged into the context under its name.
    pub output: Option<String>,
    /// Why it ended so (skipped, stopped, marked done…).
    pub message: Option<String>,
}

impl RunRow {
    /// The stored form of `run`, just inserted as `id` of `instance` and due: what the engine
    /// fires without reading it back.
    pub fn due(id: RunId, instance: InstanceId, run: NewRun) -> Self {
        Self {
            id,
            instance_id: instance,
            node: run.node,
            attempt: run.attempt,
            status: RunStatus::Due,
            due_ms: run.due_ms,
            fired_ms: 0,
            end_ms: 0,
            shards: 0,
            log_id: None,
            output: None,
            message: None,
        }
    }
}

/// A node run to insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// The node's name.
    pub node: String,
    /// Attempt number.
    pub attempt: i32,
    /// `Due`, or a state it is born in (`Skipped`, `Passed`).
    pub status: RunStatus,
    /// Due time (or, born over, the end time).
    pub due_ms: i64,
    /// Output (a pass or a "mark done").
    pub output: Option<String>,
    /// Message.
    pub message: Option<String>,
    /// A waiting approval's deadline, epoch ms (0: none; the others get theirs when fired).
    pub deadline_ms: i64,
}

/// What one log row of a fired run says (`jobwheel_workflow_log` joined to `xxl_job_log`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunLog {
    /// The run.
    pub run_id: RunId,
    /// The log row.
    pub log_id: LogId,
    /// Its trigger code (0 while on its way).
    pub trigger_code: i32,
    /// Its handle code (0 while running).
    pub handle_code: i32,
    /// The executor's message.
    pub handle_msg: Option<String>,
    /// The output a jobwheel executor reported with the result (`jobwheel_workflow_output`).
    pub output: Option<String>,
}

impl RunLog {
    /// Over: a result is stored, or the trigger failed (no callback will come).
    pub fn is_over(&self) -> bool {
        self.handle_code != 0 || (self.trigger_code != 0 && self.trigger_code != 200)
    }

    /// Over and successful.
    pub fn succeeded(&self) -> bool {
        self.handle_code == 200
    }
}

/// How a start went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    /// Running; its first runs (due now) inserted.
    Started(InstanceId),
    /// Queued behind `max_instances`.
    Queued(InstanceId),
    /// `max_instances` reached and the workflow skips.
    Skipped,
    /// The scheduled time had moved (another admin started it), or the workflow is gone.
    Gone,
}
