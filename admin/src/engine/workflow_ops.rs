//! [`InstanceOps`]: the operations on an instance after something went wrong (docs/workflows.md,
//! "Operations") — rerun from failure (reaching into the children of failed sub-workflow nodes),
//! mark a node done, and an approval's decision. Each decides under the instance's row lock, so it
//! cannot race a result arriving or another admin's sweep; a rerun or a "mark done" also *revokes*
//! what failed or was skipped below the nodes it touches: such a node is planned again from the new
//! states once its parents are over (and is skipped again if its conditions still do not hold);
//! what succeeded stays done. The `Workflows` role (`workflows.rs`) hands these commands here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::EngineError;
use super::instance_context::InstanceContext;
use super::workflow_runner::InstanceRunner;
use crate::clock::Clock;
use crate::store::{InstanceId, InstanceStatus, InstanceTx, NewRun, RunEnd, RunId, RunRow, RunStatus, Store};
use crate::workflow::{Graph, MAX_CONTEXT, MAX_NODE_OUTPUT, NodeKind, NodeState, node_states};

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

/// The operations on instances, with what they need.
pub(super) struct InstanceOps {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    runner: Arc<InstanceRunner>,
}

impl InstanceOps {
    pub(super) fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, runner: Arc<InstanceRunner>) -> Self {
        Self { store, clock, runner }
    }

    /// Reruns a failed or stopped instance from its failed nodes: each gets a new first
    /// attempt (with its retries again), nodes skipped because of them are planned again, and
    /// what succeeded stays done. The new runs are fired before this returns.
    pub(super) async fn rerun_failed(&self, id: InstanceId) -> Result<(), OpError> {
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
        // A map node whose items were stored reruns its items that did not succeed, in a new run
        // (one whose items never started — no array at its pointer — is planned again).
        let mut mapped: Vec<(&str, RunId)> = Vec::new();
        for node in others.iter().copied().filter(|n| graph.node(n).is_some_and(|n| n.kind == NodeKind::Map))
        {
            if let Some(run) = newest_run(&runs, node)
                && tx.item_tally(run.id).await?.total > 0
            {
                mapped.push((node, run.id));
            }
        }
        let others: Vec<&str> = others.into_iter().filter(|n| !mapped.iter().any(|(m, _)| m == n)).collect();
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
        let maps = mapped.iter().map(|(node, _)| {
            new_run(node, RunStatus::Waiting, "rerun from failure: its items that did not succeed run again")
        });
        new_runs.extend(maps.collect::<Vec<_>>());
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
            if let Some((_, old)) = mapped.iter().find(|(node, _)| *node == run.node) {
                tx.rerun_items(*old, *new_id, now_ms).await?;
            }
        }
        let instance = tx.instance().clone();
        tx.set_instance(InstanceStatus::Running, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, nodes = ?roots, "workflow instance rerun from its failed nodes");
        let due = new_runs
            .into_iter()
            .zip(ids)
            .filter(|(run, _)| run.status == RunStatus::Due)
            .map(|(run, run_id)| RunRow::due(run_id, id, run))
            .collect();
        self.runner.fire_runs(due, None).await?;
        if !replan.is_empty() || !mapped.is_empty() {
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
    pub(super) async fn mark_done(
        &self,
        id: InstanceId,
        node: &str,
        output: Option<&str>,
    ) -> Result<(), OpError> {
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
        let mut context = InstanceContext::new();
        if let Some(value) = &output
            && !context.join(&mut *tx, node, value.clone()).await?
        {
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
        context.write(&mut *tx).await?;
        tx.set_instance(InstanceStatus::Running, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, node, "workflow node marked done");
        self.runner.advance_and_fire(id).await?;
        Ok(())
    }

    /// Decides the approval `node` of running instance `id`, waiting since its run was
    /// inserted: approved, it succeeds with `{"approved": true, "by", "comment"}` as its output
    /// (which joins the context); rejected, it fails with who and why in its message. Then the
    /// instance goes on. The deadline decides through here too, `by` "the deadline".
    pub(super) async fn decide(
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
            // Past the context limit the decision stays in the run's output only.
            let mut context = InstanceContext::new();
            context.join(&mut *tx, node, decision).await?;
            context.write(&mut *tx).await?;
        }
        tx.commit().await?;
        tracing::info!(instance = id.0, node, approve, by, "workflow approval decided");
        self.runner.advance_and_fire(id).await?;
        Ok(())
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
