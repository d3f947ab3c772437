//! The `Workflows` role: instances of workflows (docs/workflows.md) — the commands users and
//! the API give (start, stop, rerun as a new instance, and through its [`InstanceOps`] rerun from
//! failure, mark a node done and an approval's decision: `workflow_ops.rs`) and the sweep.
//! Running an instance's nodes is its [`InstanceRunner`]'s (`workflow_runner.rs`); the
//! once-a-second sweep with the alarms of ended instances is its [`WorkflowSweep`]'s
//! (`workflow_sweep.rs`); sub-workflows' children start and end in `workflow_children.rs`.
//!
//! Exactly once: a run is fired by taking it (`DUE` → `FIRED`, guarded) in the transaction
//! that inserts its log row, so of two admins one fires it; what runs next is decided under the
//! instance's row lock, from the stored states, so a join is planned once however its parents'
//! results arrive. The hand-off is event driven — the admin that stores a parent's result
//! plans and fires the children at once — and the sweep is only the safety net.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::task::TaskTracker;

use super::EngineError;
use super::trigger::TriggerPath;
use super::workflow_children::finish_parent;
use super::workflow_ops::{InstanceOps, OpError};
use super::workflow_runner::InstanceRunner;
use super::workflow_sweep::{SweepReport, WorkflowSweep};
use crate::clock::Clock;
use crate::domain::{Overflow, TriggerType};
use crate::store::{
    Admission, InstanceId, InstanceStatus, LogId, NewInstance, NewWorkflow, RunEnd, RunId, RunStatus,
    StartOutcome, Store, WorkflowId,
};
use crate::workflow::{Graph, MAX_CONTEXT, OnDeadline};

/// Instances of workflows: the commands, with the runner and the sweep they hand work to.
pub struct Workflows {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    runner: Arc<InstanceRunner>,
    ops: InstanceOps,
    sweep: WorkflowSweep,
}

/// Why a start was refused.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No such workflow.
    #[error("workflow {0} not found")]
    NotFound(i64),
    /// The context is not a JSON object or is too large.
    #[error("{0}")]
    BadContext(String),
    /// The stored graph cannot be read.
    #[error("the workflow's graph cannot be read: {0}")]
    BadGraph(String),
    /// The store failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl Workflows {
    pub(super) fn new(
        triggers: Arc<TriggerPath>,
        tracker: TaskTracker,
        time_zone: chrono_tz::Tz,
        desk: Arc<super::AlarmDesk>,
    ) -> Arc<Self> {
        let runner = InstanceRunner::new(Arc::clone(&triggers), tracker.clone());
        Arc::new(Self {
            store: Arc::clone(&triggers.store),
            clock: Arc::clone(&triggers.clock),
            sweep: WorkflowSweep::new(Arc::clone(&runner), time_zone, desk, tracker),
            ops: InstanceOps::new(
                Arc::clone(&triggers.store),
                Arc::clone(&triggers.clock),
                Arc::clone(&runner),
            ),
            runner,
        })
    }

    /// One sweep at `now_ms` (`workflow_sweep.rs`), then the approvals whose deadline passed,
    /// decided as their node's `onDeadline` says.
    pub async fn sweep(&self, now_ms: i64) -> Result<SweepReport, EngineError> {
        let mut report = self.sweep.pass(now_ms).await?;
        for (run, instance) in self.store.overdue_approvals(now_ms, 100).await? {
            let Some(row) = self.store.load_instance(instance).await? else { continue };
            let runs = self.store.instance_runs(instance).await?;
            let Some(node) = runs.into_iter().find(|r| r.id == run).map(|r| r.node) else { continue };
            let Ok(graph) = Graph::from_json(&row.graph) else { continue };
            let approve = graph.node(&node).and_then(|n| n.on_deadline) == Some(OnDeadline::Approve);
            match self.decide(instance, &node, approve, "the deadline", None).await {
                Ok(()) => report.deadlines += 1,
                // Decided by a user (or another admin) meanwhile.
                Err(OpError::Conflict(_) | OpError::NotFound(_)) => {}
                Err(OpError::Engine(error)) => return Err(error),
                Err(OpError::BadOutput(_)) => {}
            }
        }
        Ok(report)
    }

    /// Results were stored for `logs`: advances the instances of those that belong to node
    /// runs, in the background (the callback's answer does not wait; the sweep covers a crash).
    pub(crate) fn on_results(&self, logs: Vec<LogId>) {
        self.runner.on_results(logs);
    }

    /// Starts an instance of `workflow` now with `context` (a JSON object; `None`: empty), as
    /// a user or the API asks; its root nodes are fired before this returns.
    pub async fn start(
        &self,
        workflow: WorkflowId,
        context: Option<&str>,
        trigger_type: TriggerType,
    ) -> Result<StartOutcome, StartError> {
        let now_ms = self.clock.now_ms();
        let row = self.store.load_workflow(workflow).await.map_err(EngineError::from)?;
        let row = row.ok_or(StartError::NotFound(workflow.0))?;
        let context = start_context(context)?;
        let graph = Graph::from_json(&row.workflow.graph).map_err(|e| StartError::BadGraph(e.to_string()))?;
        if let Some(schema) = &graph.input_schema {
            let value: Value = serde_json::from_str(&context).unwrap_or(Value::Null);
            if let Some(why) = crate::workflow::schema::mismatch(schema, &value) {
                return Err(StartError::BadContext(format!(
                    "the context does not match the workflow's inputSchema {why}"
                )));
            }
        }
        let new = NewInstance {
            workflow_id: workflow,
            trigger_type,
            rerun_of: None,
            fire_time_ms: now_ms,
            graph: row.workflow.graph.clone(),
            context,
        };
        Ok(self.admit(&new, &row.workflow, now_ms).await?)
    }

    /// Starts an instance of `workflow` for a backfill's scheduled time `fire_time_ms`
    /// (docs/backfill.md): `BACKFILL`, with a scheduled start's input (`{}`), outside the
    /// workflow's max instances (the backfill's parallelism bounds its instances). `None` if
    /// the workflow is gone.
    pub async fn start_backfill(
        &self,
        workflow: WorkflowId,
        fire_time_ms: i64,
    ) -> Result<Option<InstanceId>, EngineError> {
        let now_ms = self.clock.now_ms();
        let Some(row) = self.store.load_workflow(workflow).await? else { return Ok(None) };
        let new = NewInstance {
            workflow_id: workflow,
            trigger_type: TriggerType::Backfill,
            rerun_of: None,
            fire_time_ms,
            graph: row.workflow.graph,
            context: "{}".to_owned(),
        };
        let admission = Admission { max: i32::MAX, queue: false, advance: None, now_ms, keep_missed: false };
        match self.store.start_instance(&new, admission).await? {
            StartOutcome::Started(id) => {
                self.runner.advance_and_fire(id).await?;
                Ok(Some(id))
            }
            _ => Ok(None),
        }
    }

    /// Starts `new` under `workflow`'s max instances (queued or skipped beyond them) and fires
    /// its first runs if it started.
    async fn admit(
        &self,
        new: &NewInstance,
        workflow: &NewWorkflow,
        now_ms: i64,
    ) -> Result<StartOutcome, EngineError> {
        let admission = Admission {
            max: workflow.max_instances.max(1),
            queue: Overflow::of(&workflow.overflow) == Overflow::Queue,
            advance: None,
            now_ms,
            keep_missed: false,
        };
        let outcome = self.store.start_instance(new, admission).await?;
        if let StartOutcome::Started(id) = outcome {
            self.runner.advance_and_fire(id).await?;
        }
        Ok(outcome)
    }

    /// Stops a running or queued instance: due runs are dropped, fired runs are marked stopped
    /// and their executors asked to kill them, the child instances its sub-workflow nodes wait
    /// for are stopped too; a stopped child fails its parent's node. False if it was already
    /// over.
    pub async fn stop(&self, id: InstanceId) -> Result<bool, EngineError> {
        self.stop_tree(id).await
    }

    /// [`Self::stop`], boxed: it stops the children through itself.
    fn stop_tree(
        &self,
        id: InstanceId,
    ) -> Pin<Box<dyn Future<Output = Result<bool, EngineError>> + Send + '_>> {
        Box::pin(async move {
            let waiting = match self.stop_one(id).await? {
                Some(waiting) => waiting,
                None => return Ok(false),
            };
            if !waiting.is_empty() {
                for (run, child) in self.store.children(id).await? {
                    if waiting.contains(&run) {
                        self.stop_tree(child).await?;
                    }
                }
            }
            if let Some(parent) = finish_parent(self.store.as_ref(), id, self.clock.now_ms()).await? {
                self.runner.advance_and_fire(parent).await?;
            }
            Ok(true)
        })
    }

    /// Stops `id` itself: the runs that waited (for an approval or a child), or `None` if it was
    /// already over.
    async fn stop_one(&self, id: InstanceId) -> Result<Option<Vec<RunId>>, EngineError> {
        let now_ms = self.clock.now_ms();
        let Some(mut tx) = self.store.begin_instance(id).await? else { return Ok(None) };
        let instance = tx.instance().clone();
        if instance.status != InstanceStatus::Running && instance.status != InstanceStatus::Queued {
            return Ok(None);
        }
        let runs = tx.runs().await?;
        let end = RunEnd {
            status: RunStatus::Stopped,
            output: None,
            message: Some("stopped".into()),
            end_ms: now_ms,
        };
        let (mut fired, mut waiting, mut item_logs) = (Vec::new(), Vec::new(), Vec::new());
        for run in
            runs.iter().filter(|r| matches!(r.status, RunStatus::Due | RunStatus::Fired | RunStatus::Waiting))
        {
            if tx.end_run(run.id, run.status, &end).await? {
                match run.status {
                    RunStatus::Fired => fired.push(run.id),
                    RunStatus::Waiting => {
                        waiting.push(run.id);
                        // A map's items stop with it (a run of another kind has none).
                        item_logs.extend(tx.stop_items(run.id, now_ms).await?);
                    }
                    _ => {}
                }
            }
        }
        let logs = tx.run_logs(&fired).await?;
        tx.set_instance(InstanceStatus::Stopped, instance.start_ms, now_ms).await?;
        tx.commit().await?;
        self.runner.triggers().metrics.workflow_instance_ended("stopped");
        for log in logs.iter().filter(|l| !l.is_over()).map(|l| l.log_id).chain(item_logs) {
            self.runner.kill_log(log).await;
        }
        Ok(Some(waiting))
    }

    /// Reruns a failed or stopped instance from its failed nodes (`workflow_ops.rs`): each gets a
    /// new first attempt, the children of failed sub-workflow nodes rerun their own failed nodes,
    /// and what succeeded stays done. The new runs are fired before this returns.
    pub async fn rerun_failed(&self, id: InstanceId) -> Result<(), OpError> {
        self.ops.rerun_failed(id).await
    }

    /// Marks failed `node` done with `output` (JSON text; none: no output), `workflow_ops.rs`.
    pub async fn mark_done(&self, id: InstanceId, node: &str, output: Option<&str>) -> Result<(), OpError> {
        self.ops.mark_done(id, node, output).await
    }

    /// Decides the waiting approval `node` (`workflow_ops.rs`); `by` who decided.
    pub async fn decide(
        &self,
        id: InstanceId,
        node: &str,
        approve: bool,
        by: &str,
        comment: Option<&str>,
    ) -> Result<(), OpError> {
        self.ops.decide(id, node, approve, by, comment).await
    }

    /// Starts a new instance like `id`: the same graph and the same start input (the context
    /// without the nodes' outputs), under the workflow's max instances.
    pub async fn rerun(&self, id: InstanceId) -> Result<StartOutcome, StartError> {
        let now_ms = self.clock.now_ms();
        let old = self.store.load_instance(id).await.map_err(EngineError::from)?;
        let old = old.ok_or(StartError::NotFound(id.0))?;
        let row = self.store.load_workflow(old.workflow_id).await.map_err(EngineError::from)?;
        let row = row.ok_or(StartError::NotFound(old.workflow_id.0))?;
        let graph = Graph::from_json(&old.graph).map_err(|e| StartError::BadGraph(e.to_string()))?;
        let mut input = crate::workflow::context_map(&old.context);
        input.retain(|key, _| graph.node(key).is_none());
        let new = NewInstance {
            workflow_id: old.workflow_id,
            trigger_type: TriggerType::Rerun,
            rerun_of: Some(id),
            fire_time_ms: now_ms,
            graph: old.graph,
            context: Value::Object(input).to_string(),
        };
        Ok(self.admit(&new, &row.workflow, now_ms).await?)
    }
}

/// The stored start context: a JSON object (`{}` when none is given), within [`MAX_CONTEXT`].
fn start_context(context: Option<&str>) -> Result<String, StartError> {
    let Some(text) = context.filter(|t| !t.trim().is_empty()) else { return Ok("{}".to_owned()) };
    if text.len() > MAX_CONTEXT {
        return Err(StartError::BadContext(format!("the context is over {MAX_CONTEXT} bytes")));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value.to_string()),
        Ok(_) => Err(StartError::BadContext("the context must be a JSON object".to_owned())),
        Err(e) => Err(StartError::BadContext(format!("the context is not JSON: {e}"))),
    }
}
