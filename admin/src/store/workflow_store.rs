//! The store's workflow area: workflows, their instances and node runs, and the link from a
//! node run to the `xxl_job_log` rows that fired it. Every step of an instance that decides
//! what runs next happens in an [`InstanceTx`], which holds the instance's row lock, so two
//! admins finishing two parents of one join at once plan the join exactly once.

use async_trait::async_trait;

use super::{
    GroupId, InstanceId, InstanceRow, InstanceStatus, ItemCounts, ItemLog, ItemRow, JobId, LockedInstance,
    LogId, NewInstance, NewLog, NewRun, NewWorkflow, Page, Paged, RunId, RunLog, RunRow, RunStatus,
    StartOutcome, StoreError, TakenItem, WorkflowId, WorkflowRow,
};

/// Map nodes' items, read outside an instance's transaction (the sweep, the API).
#[async_trait]
pub trait WorkflowItemStore: Send + Sync {
    /// Running instances with a map run that has items due or fired, at most `limit`.
    async fn mapping_instances(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError>;
    /// How many items of each of `runs` (map runs) are in each state; runs without items are left out.
    async fn item_counts(&self, runs: &[RunId]) -> Result<Vec<(RunId, ItemCounts)>, StoreError>;
    /// A page of `run`'s items in index order, of one state if given.
    async fn page_items(
        &self,
        run: RunId,
        status: Option<RunStatus>,
        page: Page,
    ) -> Result<Paged<ItemRow>, StoreError>;
}

/// Sub-workflows: the instances a sub-workflow node started (`parent_instance`, `parent_run`).
#[async_trait]
pub trait WorkflowChildStore: Send + Sync {
    /// The child instances `instance`'s sub-workflow nodes started, each with the run that
    /// started it, by id.
    async fn children(&self, instance: InstanceId) -> Result<Vec<(RunId, InstanceId)>, StoreError>;
    /// Child instances that are over while their parent's run still waits for them (an admin
    /// died between the two), at most `limit`.
    async fn ended_children(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError>;
}

/// How a start is admitted: the workflow's limit, and (scheduled starts) the fire time it
/// moves on from, so of two admins exactly one starts a scheduled instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// `max_instances`.
    pub max: i32,
    /// Queue beyond it (else skip).
    pub queue: bool,
    /// `(expected trigger_next_time, new trigger_last_time, new trigger_next_time, stop)`.
    pub advance: Option<(i64, i64, i64, bool)>,
    /// Now, epoch ms.
    pub now_ms: i64,
    /// A scheduled start that does not happen (skipped, or `max` 0 for a late one) is kept as a
    /// MISSED instance whose alarm waits; false for a time the calendars no longer allow.
    pub keep_missed: bool,
}

/// A due run to take: its first log row and its deadline (0: none).
#[derive(Debug, Clone)]
pub struct RunTake {
    /// The run.
    pub run: RunId,
    /// Its first `xxl_job_log` row.
    pub log: NewLog,
    /// When its node's timeout fails it, epoch ms (0: no timeout).
    pub deadline_ms: i64,
}

/// Workflows (`jobwheel_workflow`), instances, node runs and their log links.
#[async_trait]
pub trait WorkflowStore: Send + Sync {
    /// Inserts a workflow.
    async fn add_workflow(&self, workflow: &NewWorkflow) -> Result<WorkflowId, StoreError>;
    /// Rewrites a workflow; false if absent. Running instances keep the graph they started with.
    async fn update_workflow(&self, id: WorkflowId, workflow: &NewWorkflow) -> Result<bool, StoreError>;
    /// Deletes a workflow with its instances, runs and log links (the log rows stay, as a
    /// deleted job's do); false if absent.
    async fn delete_workflow(&self, id: WorkflowId) -> Result<bool, StoreError>;
    /// One workflow.
    async fn load_workflow(&self, id: WorkflowId) -> Result<Option<WorkflowRow>, StoreError>;
    /// Workflows of `groups` (all when `None`), by id.
    async fn list_workflows(&self, groups: Option<&[GroupId]>) -> Result<Vec<WorkflowRow>, StoreError>;
    /// Scheduled workflows due by `max_next_time_ms`.
    async fn due_workflows(&self, max_next_time_ms: i64) -> Result<Vec<WorkflowRow>, StoreError>;
    /// Starts an instance under the workflow's row lock: moves its schedule on (if asked and
    /// still as expected), then inserts it running, queued or not at all by `admission`.
    async fn start_instance(
        &self,
        new: &NewInstance,
        admission: Admission,
    ) -> Result<StartOutcome, StoreError>;
    /// Starts the oldest queued instance of `workflow` if it is under `max` running.
    async fn admit_queued(
        &self,
        workflow: WorkflowId,
        max: i32,
        now_ms: i64,
    ) -> Result<Option<InstanceId>, StoreError>;
    /// Workflows with queued instances.
    async fn queued_workflows(&self) -> Result<Vec<WorkflowId>, StoreError>;
    /// Opens an instance with its row locked; `None` if absent.
    async fn begin_instance(&self, id: InstanceId) -> Result<Option<Box<dyn InstanceTx>>, StoreError>;
    /// One instance.
    async fn load_instance(&self, id: InstanceId) -> Result<Option<InstanceRow>, StoreError>;
    /// A workflow's instances, newest first.
    async fn page_instances(
        &self,
        workflow: WorkflowId,
        page: Page,
    ) -> Result<Paged<InstanceRow>, StoreError>;
    /// Every run of an instance, by id.
    async fn instance_runs(&self, id: InstanceId) -> Result<Vec<RunRow>, StoreError>;
    /// Takes due runs (each `DUE` → `FIRED`, guarded) and inserts each one's first log row and
    /// link, all in one transaction; per run its log id, or `None` if another admin took it
    /// (or it was stopped).
    async fn take_runs(&self, takes: &[RunTake], now_ms: i64) -> Result<Vec<Option<LogId>>, StoreError>;
    /// Records the log rows a fired run's shards got, and how many shards it has.
    async fn link_logs(&self, run: RunId, logs: &[LogId], shards: i32) -> Result<(), StoreError>;
    /// Stores the outputs workflow node runs reported with their results, before the results
    /// themselves; a log row that has one keeps it.
    async fn store_outputs(&self, outputs: &[(LogId, &str)]) -> Result<(), StoreError>;
    /// The runs (and instances) of these log rows, if any.
    async fn runs_of_logs(&self, logs: &[LogId]) -> Result<Vec<(RunId, InstanceId)>, StoreError>;
    /// Due runs of running instances with `due_ms <= now_ms`, oldest first, at most `limit`.
    async fn due_runs(&self, now_ms: i64, limit: u32) -> Result<Vec<RunRow>, StoreError>;
    /// Fired runs every shard of which is over but which are not yet ended (a result stored by
    /// an admin that died before it ended the run, or a callback that beat the link).
    async fn settled_runs(&self, limit: u32) -> Result<Vec<(RunId, InstanceId)>, StoreError>;
    /// Fired runs past their deadline.
    async fn overdue_runs(&self, now_ms: i64, limit: u32) -> Result<Vec<(RunId, InstanceId)>, StoreError>;
    /// Waiting approvals past their deadline.
    async fn overdue_approvals(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(RunId, InstanceId)>, StoreError>;
    /// Running instances with no due or fired run (started, but not yet planned).
    async fn idle_instances(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError>;
}

/// One instance under its row lock. Dropping it without `commit` rolls back.
#[async_trait]
pub trait InstanceTx: Send {
    /// The instance as locked, without its context.
    fn instance(&self) -> &LockedInstance;
    /// Its context as stored (read now; the row is locked, so it is what this step changes).
    async fn context(&mut self) -> Result<String, StoreError>;
    /// Its runs, by id.
    async fn runs(&mut self) -> Result<Vec<RunRow>, StoreError>;
    /// The log rows of `runs`.
    async fn run_logs(&mut self, runs: &[RunId]) -> Result<Vec<RunLog>, StoreError>;
    /// Ends a run that is in state `from` (guarded); false if it was not.
    async fn end_run(&mut self, run: RunId, from: RunStatus, end: &RunEnd) -> Result<bool, StoreError>;
    /// Inserts runs of this instance; their ids in input order.
    async fn insert_runs(&mut self, runs: &[NewRun]) -> Result<Vec<RunId>, StoreError>;
    /// Writes the instance's status and times.
    async fn set_instance(
        &mut self,
        status: InstanceStatus,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<(), StoreError>;
    /// Writes the instance's context (a JSON object's text).
    async fn set_context(&mut self, context: &str) -> Result<(), StoreError>;
    /// A workflow, read in this transaction (without its calendars).
    async fn load_workflow(&mut self, id: WorkflowId) -> Result<Option<WorkflowRow>, StoreError>;
    /// Inserts a running child instance of this one, started by its run `parent_run`.
    async fn start_child(
        &mut self,
        new: &NewInstance,
        parent_run: RunId,
        now_ms: i64,
    ) -> Result<InstanceId, StoreError>;
    /// How many ancestors this instance has through its parents, counted up to `max`.
    async fn depth(&mut self, max: usize) -> Result<usize, StoreError>;
    /// Hands this instance's child started by run `from` to run `to` (a rerun's new wait);
    /// false if it has none.
    async fn relink_child(&mut self, from: RunId, to: RunId) -> Result<bool, StoreError>;
    /// The group of job `job`, read in this transaction; `None` if the job is gone.
    async fn job_group(&mut self, job: JobId) -> Result<Option<GroupId>, StoreError>;
    /// Map nodes: inserts `run`'s items (JSON each) in index order, due at `now_ms`.
    async fn insert_items(&mut self, run: RunId, items: &[String], now_ms: i64) -> Result<(), StoreError>;
    /// `run`'s fired items with their current log rows, by index.
    async fn fired_items(&mut self, run: RunId) -> Result<Vec<ItemLog>, StoreError>;
    /// Ends fired items (by id, each as its end says; guarded: one no longer fired is left).
    async fn end_items(&mut self, ends: &[(i64, RunEnd)]) -> Result<(), StoreError>;
    /// Makes fired items due at `due_ms` as their next attempts (guarded).
    async fn retry_items(&mut self, items: &[i64], due_ms: i64) -> Result<(), StoreError>;
    /// Takes up to `limit` of `run`'s items due by `now_ms`, in index order: each FIRED with a
    /// new log row like `log`.
    async fn take_items(
        &mut self,
        run: RunId,
        limit: u32,
        log: &NewLog,
        now_ms: i64,
    ) -> Result<Vec<TakenItem>, StoreError>;
    /// Whether `run` has items due or fired.
    async fn items_left(&mut self, run: RunId) -> Result<bool, StoreError>;
    /// `run`'s items' outputs in index order (`None` where an item reported none).
    async fn item_outputs(&mut self, run: RunId) -> Result<Vec<Option<String>>, StoreError>;
    /// `run`'s items: how many, how many failed, and the first failed one's index and message.
    async fn item_tally(&mut self, run: RunId) -> Result<ItemTally, StoreError>;
    /// Gives run `to` the items of `from` for a rerun of the failed ones: those that succeeded
    /// stay succeeded, every other is due at a first attempt.
    async fn rerun_items(&mut self, from: RunId, to: RunId, now_ms: i64) -> Result<(), StoreError>;
    /// Stops `run`'s due and fired items; the log rows of those that were fired.
    async fn stop_items(&mut self, run: RunId, now_ms: i64) -> Result<Vec<LogId>, StoreError>;
    /// Commits.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}

/// A map run's items once none is left: how many, how many failed, and the first failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemTally {
    /// Every item.
    pub total: i64,
    /// Failed after their retries.
    pub failed: i64,
    /// The first failed item's index and message.
    pub first_failure: Option<(i32, Option<String>)>,
}

/// How a run ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnd {
    /// The new state.
    pub status: RunStatus,
    /// Output (JSON).
    pub output: Option<String>,
    /// Message.
    pub message: Option<String>,
    /// When.
    pub end_ms: i64,
}

/// What the workflow sweep reads to raise the alarms of instances that ended failed or missed.
#[async_trait]
pub trait WorkflowAlarmStore: Send + Sync {
    /// Instances in `status` that ended after `after` (end time, then id), oldest end first, at
    /// most `limit`.
    async fn ended_instances(
        &self,
        status: InstanceStatus,
        after: (i64, InstanceId),
        limit: u32,
    ) -> Result<Vec<InstanceRow>, StoreError>;
}
