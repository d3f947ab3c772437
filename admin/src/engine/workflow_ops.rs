//! Operations on an instance after something went wrong (docs/workflows.md, "Operations"):
//! rerun it from its failed nodes, mark a failed node done with an output, or rerun the whole
//! instance as a new one. Each decides under the instance's row lock, like advancing, so it
//! cannot race a result arriving or another admin's sweep.
//!
//! A rerun or a "mark done" also *revokes* what failed or was skipped below the nodes it
//! touches: such a node is planned again from the new states once its parents are over (and
//! is skipped again if its conditions still do not hold); what succeeded stays done.

use std::sync::Arc;

use serde_json::Value;

use super::EngineError;
use super::workflows::{MAX_CONTEXT, MAX_NODE_OUTPUT, StartError, Workflows};
use crate::domain::TriggerType;
use crate::store::{
    InstanceId, InstanceStatus, InstanceTx, NewInstance, NewRun, RunEnd, RunRow, RunStatus, StartOutcome,
};
use crate::workflow::{Graph, NodeState, node_states};

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
    /// Reruns a failed or stopped instance from its failed nodes: each gets a new first
    /// attempt (with its retries again), nodes skipped because of them are planned again, and
    /// what succeeded stays done. The new runs are fired before this returns.
    pub async fn rerun_failed(self: &Arc<Self>, id: InstanceId) -> Result<(), OpError> {
        let now_ms = self.clock.now_ms();
        let mut tx = self.open_ended(id).await?;
        let runs = tx.runs().await?;
        let graph = Graph::from_json(&tx.instance().graph).unwrap_or_default();
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
        let new_runs: Vec<NewRun> = roots
            .iter()
            .map(|node| NewRun {
                node: (*node).to_owned(),
                attempt: 1,
                status: RunStatus::Due,
                due_ms: now_ms,
                output: None,
                message: Some("rerun from failure".to_owned()),
            })
            .collect();
        revoke_below(&mut *tx, &graph, &roots, &runs).await?;
        let ids = tx.insert_runs(&new_runs).await?;
        let instance = tx.instance().clone();
        tx.set_instance(InstanceStatus::Running, &instance.context, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, nodes = ?roots, "workflow instance rerun from its failed nodes");
        for (run, run_id) in new_runs.into_iter().zip(ids) {
            self.fire(RunRow::due(run_id, id, run)).await?;
        }
        Ok(())
    }

    /// Marks `node`, which failed (or was stopped), done with `output` (JSON text; none: no
    /// output): it counts as succeeded, its output joins the context, and what follows it runs.
    /// Applies to a running instance too (a node that failed while others go on).
    pub async fn mark_done(
        self: &Arc<Self>,
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
        let graph = Graph::from_json(&instance.graph).unwrap_or_default();
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
        };
        revoke_below(&mut *tx, &graph, &[node], &runs).await?;
        tx.insert_runs(std::slice::from_ref(&done)).await?;
        tx.set_instance(InstanceStatus::Running, &context_text, instance.start_ms, 0).await?;
        tx.commit().await?;
        tracing::info!(instance = id.0, node, "workflow node marked done");
        self.advance_and_fire(id).await?;
        Ok(())
    }

    /// Starts a new instance like `id`: the same graph and the same start input (the context
    /// without the nodes' outputs), under the workflow's max instances.
    pub async fn rerun(self: &Arc<Self>, id: InstanceId) -> Result<StartOutcome, StartError> {
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
        let newest =
            runs.iter().filter(|r| r.node == node && r.status != RunStatus::Revoked).max_by_key(|r| r.id.0);
        if let Some(run) =
            newest.filter(|r| matches!(r.status, RunStatus::Skipped | RunStatus::Failed | RunStatus::Stopped))
        {
            let end = RunEnd {
                status: RunStatus::Revoked,
                output: run.output.clone(),
                message: run.message.clone(),
                end_ms: run.end_ms,
            };
            tx.end_run(run.id, run.status, &end).await?;
        }
    }
    Ok(())
}

/// A hand-given output: JSON (anything else is taken as a string), within [`MAX_NODE_OUTPUT`].
fn checked_output(text: &str) -> Result<Value, OpError> {
    if text.len() > MAX_NODE_OUTPUT {
        return Err(OpError::BadOutput(format!("the output is over {MAX_NODE_OUTPUT} bytes")));
    }
    Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())))
}
