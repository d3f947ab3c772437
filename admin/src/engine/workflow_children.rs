//! Sub-workflows (docs/workflows.md, "Sub-workflows"): a `WORKFLOW` node starts an instance of
//! another workflow and waits (its run `WAITING`) until that child instance is over.
//!
//! - **Start**: the child is inserted in the transaction that inserts the parent's waiting run,
//!   so a crash leaves both or neither; its input is the parent's context as it is then. It is
//!   not counted against the child workflow's `maxInstances` (the parent is already admitted:
//!   queueing or skipping it would leave the parent waiting on nothing).
//! - **End**: whoever ends the child (its last result, a stop) then ends the parent's run in
//!   the parent's transaction — succeeded with the child's node outputs as its output, or failed
//!   naming the child — and advances the parent. The sweep finishes the children whose admin
//!   died in between (`ended_children`). The parent's run is ended guarded (`WAITING` → …), so
//!   this happens once.
//! - Stop and rerun from failure reach into the child (`workflows.rs`).

use serde_json::{Map, Value};

use super::EngineError;
use super::instance_context::InstanceContext;
use crate::domain::TriggerType;
use crate::store::{
    InstanceId, InstanceRow, InstanceStatus, InstanceTx, NewInstance, RunEnd, RunId, RunRow, RunStatus, Store,
};
use crate::workflow::schema::mismatch;
use crate::workflow::{Graph, MAX_CONTEXT, MAX_NODE_OUTPUT, Node, NodeState, newest_runs, node_states};

/// The deepest sub-workflows nest at run time. A cycle is refused when a workflow is saved;
/// this bounds one that two edits racing each other could still make.
pub const MAX_DEPTH: usize = 8;

/// Starts the child instance of sub-workflow `node`, whose run `run` this transaction just
/// inserted waiting, with `context` as its input: the child's id, or why it cannot start (the
/// caller fails the run with that message).
pub(super) async fn start_child(
    tx: &mut dyn InstanceTx,
    node: &Node,
    run: RunId,
    context: &Map<String, Value>,
    now_ms: i64,
) -> Result<Result<InstanceId, String>, EngineError> {
    let Some(id) = node.workflow_id else { return Ok(Err("the node names no workflow".to_owned())) };
    let Some(row) = tx.load_workflow(crate::store::WorkflowId(id)).await? else {
        return Ok(Err(format!("workflow {id} no longer exists")));
    };
    let graph = match Graph::from_json(&row.workflow.graph) {
        Ok(graph) => graph,
        Err(error) => return Ok(Err(format!("workflow {id}'s graph cannot be read by this admin: {error}"))),
    };
    let input = Value::Object(context.clone());
    if let Some(why) = graph.input_schema.as_ref().and_then(|schema| mismatch(schema, &input)) {
        return Ok(Err(format!("the context does not match workflow {id}'s inputSchema {why}")));
    }
    if tx.depth(MAX_DEPTH).await? >= MAX_DEPTH {
        return Ok(Err(format!("sub-workflows nest deeper than {MAX_DEPTH}: is there a cycle?")));
    }
    let new = NewInstance {
        workflow_id: row.id,
        trigger_type: TriggerType::Workflow,
        rerun_of: None,
        fire_time_ms: now_ms,
        graph: row.workflow.graph,
        context: input.to_string(),
    };
    let child = tx.start_child(&new, run, now_ms).await?;
    tracing::info!(parent = tx.instance().id.0, node = node.name, child = child.0, "child workflow started");
    Ok(Ok(child))
}

/// `child` is over: ends its parent's waiting run (succeeded with the child's node outputs, or
/// failed naming it) in the parent's transaction. The parent, for the caller to advance, if
/// this ended its run; `None` if the child has no parent, is not over, or its parent's run was
/// ended already (stopped with the parent, or finished by another admin).
pub(super) async fn finish_parent(
    store: &dyn Store,
    child: InstanceId,
    now_ms: i64,
) -> Result<Option<InstanceId>, EngineError> {
    let Some(row) = store.load_instance(child).await? else { return Ok(None) };
    let (Some(parent), Some(run)) = (row.parent_instance, row.parent_run) else { return Ok(None) };
    if !row.status.is_over() {
        return Ok(None);
    }
    let runs = store.instance_runs(child).await?;
    let Some(mut tx) = store.begin_instance(parent).await? else { return Ok(None) };
    let parent_row = tx.instance().clone();
    let node = tx.runs().await?.into_iter().find(|r| r.id == run).map(|r| r.node);
    let graph = Graph::from_json(&parent_row.graph).unwrap_or_default();
    let declared = node.as_deref().and_then(|n| graph.node(n)).and_then(|n| n.output_schema.clone());
    let mut context = InstanceContext::new();
    let mut end = child_end(&row, &runs, now_ms);
    if end.status == RunStatus::Succeeded
        && let (Some(node), Some(output)) = (node.as_deref(), end.output.as_deref())
    {
        let value: Value = serde_json::from_str(output).unwrap_or(Value::Null);
        if let Some(why) = declared.as_ref().and_then(|schema| mismatch(schema, &value)) {
            end.status = RunStatus::Failed;
            end.message = Some(format!("the output does not match the node's outputSchema {why}"));
        } else if !context.join(&mut *tx, node, value).await? {
            end.status = RunStatus::Failed;
            end.message = Some(format!("the instance context would exceed {MAX_CONTEXT} bytes"));
        }
    }
    if !tx.end_run(run, RunStatus::Waiting, &end).await? {
        return Ok(None);
    }
    if end.status == RunStatus::Succeeded && parent_row.status == InstanceStatus::Running {
        context.write(&mut *tx).await?;
    }
    tx.commit().await?;
    tracing::info!(parent = parent.0, child = child.0, status = ?end.status, "child workflow told its parent");
    Ok(Some(parent))
}

/// How the parent's run ends for `child`, which is over.
fn child_end(child: &InstanceRow, runs: &[RunRow], now_ms: i64) -> RunEnd {
    let id = child.id.0;
    let (status, output, message) = match child.status {
        InstanceStatus::Succeeded => {
            let output = Value::Object(child_outputs(runs)).to_string();
            if output.len() > MAX_NODE_OUTPUT {
                let why = format!(
                    "child workflow instance {id} succeeded, but its outputs are {} bytes, over the node \
                     output limit of {MAX_NODE_OUTPUT}",
                    output.len()
                );
                (RunStatus::Failed, None, why)
            } else {
                (RunStatus::Succeeded, Some(output), format!("child workflow instance {id} succeeded"))
            }
        }
        InstanceStatus::Stopped => {
            (RunStatus::Failed, None, format!("child workflow instance {id} was stopped"))
        }
        _ => {
            let failed: Vec<String> = node_states(runs, &[])
                .into_iter()
                .filter(|(_, state)| *state == NodeState::Failed)
                .map(|(node, _)| node)
                .collect();
            let why = format!("child workflow instance {id} failed (nodes: {})", failed.join(", "));
            (RunStatus::Failed, None, why)
        }
    };
    RunEnd { status, output, message: Some(message), end_ms: now_ms }
}

/// The child's outputs, by node: each node's newest counting run ([`newest_runs`]) that
/// succeeded or passed with an output (a node with none is left out).
fn child_outputs(runs: &[RunRow]) -> Map<String, Value> {
    newest_runs(runs)
        .into_iter()
        .filter(|(_, run)| matches!(run.status, RunStatus::Succeeded | RunStatus::Passed))
        .filter_map(|(node, run)| {
            let output = run.output.as_deref()?;
            Some((node.to_owned(), serde_json::from_str(output).unwrap_or(Value::Null)))
        })
        .collect()
}
