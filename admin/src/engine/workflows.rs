//! The `Workflows` role: instances of workflows (docs/workflows.md) — the commands users and
//! the API give (start, stop, rerun from failure, mark a node done, rerun as a new instance)
//! and the sweep. Running an instance's nodes is its [`InstanceRunner`]'s
//! (`workflow_runner.rs`); the once-a-second sweep with the alarms of ended instances is its
//! [`WorkflowSweep`]'s (`workflow_sweep.rs`).
//!
//! Exactly once: a run is fired by taking it (`DUE` → `FIRED`, guarded) in the transaction
//! that inserts its log row, so of two admins one fires it; what runs next is decided under the
//! instance's row lock, from the stored states, so a join is planned once however its parents'
//! results arrive. The hand-off is event driven — the admin that stores a parent's result
//! plans and fires the children at once — and the sweep is only the safety net.
//!
//! The operations after something went wrong (docs/workflows.md, "Operations") decide under
//! the instance's row lock too, so they cannot race a result arriving or another admin's sweep.
//! A rerun or a "mark done" also *revokes* what failed or was skipped below the nodes it
//! touches: such a node is planned again from the new states once its parents are over (and is
//! skipped again if its conditions still do not hold); what succeeded stays done.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::task::TaskTracker;

use super::EngineError;
use super::trigger::TriggerPath;
use super::workflow_children::finish_parent;
use super::workflow_runner::InstanceRunner;
use super::workflow_sweep::{SweepReport, WorkflowSweep};
use crate::clock::Clock;
use crate::domain::{Overflow, TriggerType};
use crate::store::{
    Admission, InstanceId, InstanceStatus, InstanceTx, LogId, NewInstance, NewRun, NewWorkflow, RunEnd,
    RunId, RunRow, RunStatus, StartOutcome, Store, WorkflowId,
};
use crate::workflow::{Graph, MAX_CONTEXT, MAX_NODE_OUTPUT, NodeKind, NodeState, OnDeadline, node_states};

/// Instances of workflows: the commands, with the runner and the sweep they hand work to.
pub struct Workflows {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    runner: Arc<InstanceRunner>,
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

/// An operation on an instance that changes its runs in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceOp {
    /// [`Workflows::rerun_failed`].
    RerunFailed,
    /// [`Workflows::mark_done`] with the output's JSON text.
    MarkDone {
        /// The node.
        node: String,
        /// Its output.
        output: Option<String>,
    },
    /// [`Workflows::decide`]: an approval's decision.
    Decide {
        /// The approval node.
        node: String,
        /// Approved (else rejected).
        approve: bool,
        /// Who decided (a user name).
        by: String,
        /// Why, if they said.
        comment: Option<String>,
    },
}

/// Why an operation on an instance was refused.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// No such instance (or node).
    #[error("{0}")]
    NotFound(String),
    /// The instance or node is not in a state the operation applies to.
    #[error("{0}")]
    Conflict(String),
    /// The given output is not acceptable.
    #[error("{0}")]
    BadOutput(String),
    /// The store failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<crate::store::StoreError> for OpError {
    fn from(error: crate::store::StoreError) -> Self {
        Self::Engine(error.into())
    }
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
        let (mut fired, mut waiting) = (Vec::new(), Vec::new());
        for run in
            runs.iter().filter(|r| matches!(r.status, RunStatus::Due | RunStatus::Fired | RunStatus::Waiting))
        {
            if tx.end_run(run.id, run.status, &end).await? {
                match run.status {
                    RunStatus::Fired => fired.push(run.id),
                    RunStatus::Waiting => waiting.push(run.id),
                    _ => {}
                }
            }
        }
        let logs = tx.run_logs(&fired).await?;
        tx.set_instance(InstanceStatus::Stopped, &instance.context, instance.start_ms, now_ms).await?;
        tx.commit().await?;
        self.runner.triggers().metrics.workflow_instance_ended("stopped");
        for log in logs.iter().filter(|l| !l.is_over()) {
            self.runner.kill_log(log.log_id).await;
        }
        Ok(Some(waiting))
    }

    /// Reruns a failed or stopped instance from its failed nodes: each gets a new first
    /// attempt (with its retries again), nodes skipped because of them are planned again, and
    /// what succeeded stays done. The new runs are fired before this returns.
    pub async fn rerun_failed(&self, id: InstanceId) -> Result<(), OpError> {
        // The children of its failed sub-workflow nodes rerun their own failed nodes first, each
        // in its own transaction (SQLite has one writer: no transaction may wait on another).
        let reached = self.rerun_children(id).await?;
        let now_ms = self.clock.now_ms();
        let mut tx = self.open_ended(id).await?;
        let runs = tx.runs().await?;
        let graph = Graph::from_json(&tx.instance().graph).map_err(unreadable)?;
        let failed: Vec<String> = node_states(&runs, &[])
            .into_iter()
            .filter(|(_, state)| *state == NodeState::Failed)
            .map(|(node, _)| node)
            .collect();
        // A failed node below another failed node waits for it: it is planned again, not rerun now.
        let failed_refs: Vec<&str> = failed.iter().map(String::as_str).collect();
        let below = graph.descendants(&failed_refs);
        let roots: Vec<&str> = failed_refs.iter().copied().filter(|n| !below.contains(n)).collect();
        if roots.is_empty() {
            return Err(OpError::Conflict(format!("workflow instance {} has no failed node to rerun", id.0)));
        }
        // A node none of whose runs was ever fired (an `if` with no answer, a switch that could
        // not decide, a rejected approval) is planned again — every run of it taken back — so
        // its condition is asked again rather than bypassed. A node that ran (even if its last
        // attempt was stopped before firing) gets a new first attempt, as before.
        let never_fired = |node: &str| {
            runs.iter().filter(|r| r.node == node && r.status != RunStatus::Revoked).all(|r| r.fired_ms == 0)
        };
        // A sub-workflow node whose child reruns waits for that child again.
        let child_of = |node: &str| {
            let run = newest_run(&runs, node)?.id;
            reached.iter().find(|(r, _)| *r == run).map(|(r, child)| (*r, *child))
        };
        let (reach, others): (Vec<&str>, Vec<&str>) = roots.iter().partition(|node| child_of(node).is_some());
        let (replan, rerun): (Vec<&str>, Vec<&str>) = others.into_iter().partition(|node| never_fired(node));
        let new_run = |node: &str, status, message: &str| NewRun {
            node: node.to_owned(),
            attempt: 1,
            status,
            due_ms: now_ms,
            output: None,
            message: Some(message.to_owned()),
            deadline_ms: 0,
        };
        let mut new_runs: Vec<NewRun> =
            rerun.iter().map(|node| new_run(node, RunStatus::Due, "rerun from failure")).collect();
        let waits: Vec<NewRun> = reach
            .iter()
            .map(|node| new_run(node, RunStatus::Waiting, "rerun from failure: its child instance reruns"))
            .collect();
        new_runs.extend(waits);
        revoke_below(&mut *tx, &graph, &roots, &runs).await?;
        for run in runs.iter().filter(|r| replan.contains(&r.node.as_str()) && r.status != RunStatus::Revoked)
        {
            revoke(&mut *tx, run).await?;
        }
        let ids = tx.insert_runs(&new_runs).await?;
        for (run, new_id) in new_runs.iter().zip(&ids).filter(|(r, _)| r.status == RunStatus::Waiting) {
            if let Some((old, _)) = child_of(&run.node) {
                tx.relink_child(old, *new_id).await?;
            }
        }
        let instance = tx.instance().clone();
        tx.set_instance(InstanceStatus::Running, &instance.context, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, nodes = ?roots, "workflow instance rerun from its failed nodes");
        let due = new_runs
            .into_iter()
            .zip(ids)
            .filter(|(run, _)| run.status == RunStatus::Due)
            .map(|(run, run_id)| RunRow::due(run_id, id, run))
            .collect();
        self.runner.fire_runs(due, None).await?;
        if !replan.is_empty() {
            self.runner.advance_and_fire(id).await?;
        }
        Ok(())
    }

    /// Reruns, from their failed nodes, the children that `id`'s failed sub-workflow nodes
    /// waited for: the runs (with their child) whose child now runs again. A child that cannot
    /// be rerun (nothing in it failed) is left, and its node starts a new child when planned.
    async fn rerun_children(&self, id: InstanceId) -> Result<Vec<(RunId, InstanceId)>, OpError> {
        let Some(row) = self.store.load_instance(id).await? else { return Ok(Vec::new()) };
        let Ok(graph) = Graph::from_json(&row.graph) else { return Ok(Vec::new()) };
        if !matches!(row.status, InstanceStatus::Failed | InstanceStatus::Stopped) {
            return Ok(Vec::new()); // refused by `open_ended`
        }
        let runs = self.store.instance_runs(id).await?;
        let failed: Vec<RunId> = node_states(&runs, &[])
            .into_iter()
            .filter(|(node, state)| {
                *state == NodeState::Failed && graph.node(node).is_some_and(|n| n.kind == NodeKind::Workflow)
            })
            .filter_map(|(node, _)| newest_run(&runs, &node).map(|r| r.id))
            .collect();
        let mut reached = Vec::new();
        if failed.is_empty() {
            return Ok(reached);
        }
        for (run, child) in self.store.children(id).await?.into_iter().filter(|(run, _)| failed.contains(run))
        {
            match self.rerun_boxed(child).await {
                Ok(()) => reached.push((run, child)),
                // Rerun meanwhile by someone else: it runs, so wait for it.
                Err(OpError::Conflict(_)) => {
                    let status = self.store.load_instance(child).await?.map(|c| c.status);
                    if status == Some(InstanceStatus::Running) {
                        reached.push((run, child));
                    }
                }
                Err(error) => return Err(error),
            }
        }
        Ok(reached)
    }

    /// [`Self::rerun_failed`], boxed: it reruns children through itself.
    fn rerun_boxed(&self, id: InstanceId) -> Pin<Box<dyn Future<Output = Result<(), OpError>> + Send + '_>> {
        Box::pin(self.rerun_failed(id))
    }

    /// Marks `node`, which failed (or was stopped), done with `output` (JSON text; none: no
    /// output): it counts as succeeded, its output joins the context, and what follows it runs.
    /// Applies to a running instance too (a node that failed while others go on).
    pub async fn mark_done(&self, id: InstanceId, node: &str, output: Option<&str>) -> Result<(), OpError> {
        let now_ms = self.clock.now_ms();
        let output = output.map(checked_output).transpose()?;
        let mut tx = self.begin(id).await?;
        let instance = tx.instance().clone();
        if instance.status == InstanceStatus::Queued || instance.status == InstanceStatus::Succeeded {
            return Err(OpError::Conflict(format!(
                "workflow instance {} has not failed: nothing to mark done",
                id.0
            )));
        }
        let graph = Graph::from_json(&instance.graph).map_err(unreadable)?;
        if graph.node(node).is_none() {
            return Err(OpError::NotFound(format!("workflow instance {} has no node {node:?}", id.0)));
        }
        let runs = tx.runs().await?;
        if node_states(&runs, &[]).get(node) != Some(&NodeState::Failed) {
            return Err(OpError::Conflict(format!(
                "node {node:?} has not failed: only a failed node can be marked done"
            )));
        }
        let mut context = crate::workflow::context_map(&instance.context);
        if let Some(value) = &output {
            context.insert(node.to_owned(), value.clone());
        }
        let context_text = Value::Object(context).to_string();
        if context_text.len() > MAX_CONTEXT {
            return Err(OpError::BadOutput(format!("the instance context would exceed {MAX_CONTEXT} bytes")));
        }
        let attempt = runs.iter().filter(|r| r.node == node).map(|r| r.attempt).max().unwrap_or(0) + 1;
        let done = NewRun {
            node: node.to_owned(),
            attempt,
            status: RunStatus::Succeeded,
            due_ms: now_ms,
            output: output.as_ref().map(Value::to_string),
            message: Some("marked done".to_owned()),
            deadline_ms: 0,
        };
        revoke_below(&mut *tx, &graph, &[node], &runs).await?;
        tx.insert_runs(std::slice::from_ref(&done)).await?;
        tx.set_instance(InstanceStatus::Running, &context_text, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, node, "workflow node marked done");
        self.runner.advance_and_fire(id).await?;
        Ok(())
    }

    /// Decides the approval `node` of running instance `id`, waiting since its run was
    /// inserted: approved, it succeeds with `{"approved": true, "by", "comment"}` as its output
    /// (which joins the context); rejected, it fails with who and why in its message. Then the
    /// instance goes on. The deadline decides through here too, `by` "the deadline".
    pub async fn decide(
        &self,
        id: InstanceId,
        node: &str,
        approve: bool,
        by: &str,
        comment: Option<&str>,
    ) -> Result<(), OpError> {
        let mut tx = self.begin(id).await?;
        let instance = tx.instance().clone();
        let graph = Graph::from_json(&instance.graph).map_err(unreadable)?;
        if graph.node(node).is_none_or(|n| n.kind != NodeKind::Approval) {
            return Err(OpError::Conflict(format!(
                "node {node:?} of workflow instance {} is not an approval",
                id.0
            )));
        }
        let runs = tx.runs().await?;
        let Some(run) = newest_run(&runs, node).filter(|r| r.status == RunStatus::Waiting) else {
            return Err(OpError::Conflict(format!(
                "node {node:?} of workflow instance {} is not waiting for approval",
                id.0
            )));
        };
        let decision = serde_json::json!({ "approved": approve, "by": by, "comment": comment });
        let said = comment.map(|c| format!(": {c}")).unwrap_or_default();
        let end = RunEnd {
            status: if approve { RunStatus::Succeeded } else { RunStatus::Failed },
            output: Some(decision.to_string()),
            message: Some(format!("{} by {by}{said}", if approve { "approved" } else { "rejected" })),
            end_ms: self.clock.now_ms(),
        };
        if !tx.end_run(run.id, RunStatus::Waiting, &end).await? {
            return Err(OpError::Conflict(format!("node {node:?} was decided meanwhile")));
        }
        if approve {
            let mut context = crate::workflow::context_map(&instance.context);
            context.insert(node.to_owned(), decision);
            let text = Value::Object(context).to_string();
            if text.len() <= MAX_CONTEXT {
                tx.set_instance(instance.status, &text, instance.start_ms, instance.end_ms).await?;
            }
        }
        tx.commit().await?;
        tracing::info!(instance = id.0, node, approve, by, "workflow approval decided");
        self.runner.advance_and_fire(id).await?;
        Ok(())
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

    async fn begin(&self, id: InstanceId) -> Result<Box<dyn InstanceTx>, OpError> {
        self.store
            .begin_instance(id)
            .await?
            .ok_or_else(|| OpError::NotFound(format!("workflow instance {} not found", id.0)))
    }

    /// The instance, locked, if it failed or was stopped.
    async fn open_ended(&self, id: InstanceId) -> Result<Box<dyn InstanceTx>, OpError> {
        let tx = self.begin(id).await?;
        let status = tx.instance().status;
        if status != InstanceStatus::Failed && status != InstanceStatus::Stopped {
            return Err(OpError::Conflict(format!(
                "workflow instance {} is {}: only a failed or stopped instance is rerun from its failed nodes",
                id.0,
                status.name()
            )));
        }
        Ok(tx)
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

/// Revokes the newest run of every node below `roots` that was skipped, failed or stopped, so
/// the planner decides those nodes again once their parents are over. The run keeps its
/// message and times; only its status says it no longer counts.
async fn revoke_below(
    tx: &mut dyn InstanceTx,
    graph: &Graph,
    roots: &[&str],
    runs: &[RunRow],
) -> Result<(), EngineError> {
    let below = graph.descendants(roots);
    for node in below {
        if let Some(run) = newest_run(runs, node)
            .filter(|r| matches!(r.status, RunStatus::Skipped | RunStatus::Failed | RunStatus::Stopped))
        {
            revoke(tx, run).await?;
        }
    }
    Ok(())
}

/// An instance graph this admin cannot read (a newer admin's node kind or field).
fn unreadable(error: serde_json::Error) -> OpError {
    OpError::Conflict(format!("the instance's graph cannot be read by this admin ({error}); upgrade it"))
}

/// The newest run of `node` that counts.
fn newest_run<'a>(runs: &'a [RunRow], node: &str) -> Option<&'a RunRow> {
    runs.iter().filter(|r| r.node == node && r.status != RunStatus::Revoked).max_by_key(|r| r.id.0)
}

/// Takes `run` back: the planner no longer sees it, the instance page still shows it.
async fn revoke(tx: &mut dyn InstanceTx, run: &RunRow) -> Result<(), EngineError> {
    let end = RunEnd {
        status: RunStatus::Revoked,
        output: run.output.clone(),
        message: run.message.clone(),
        end_ms: run.end_ms,
    };
    tx.end_run(run.id, run.status, &end).await?;
    Ok(())
}

/// A hand-given output: JSON (anything else is taken as a string), within [`MAX_NODE_OUTPUT`].
fn checked_output(text: &str) -> Result<Value, OpError> {
    if text.len() > MAX_NODE_OUTPUT {
        return Err(OpError::BadOutput(format!("the output is over {MAX_NODE_OUTPUT} bytes")));
    }
    Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())))
}
