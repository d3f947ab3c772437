//! Workflows (jobwheel; xxl-job has only child jobs): a DAG of nodes, each running an existing
//! job (or a switch choosing a branch), with edges that carry a condition on the parent's
//! outcome and, optionally, one on data (`expr`). This module is the pure model — the graph as stored
//! and edited ([`Graph`]), its validation ([`Graph::check`]), and the planner
//! ([`plan`]) that says, from the states of an instance's nodes, which nodes run next, which are
//! skipped, and when the instance is over. The engine's `Workflows` role stores and fires what
//! the planner decides (docs/workflows.md).

mod days;
pub mod expr;
mod expr_data;
mod expr_fast;
mod graph;
pub mod map;
mod node;
mod plan;
pub mod schema;
mod settle;

pub use days::{DaysError, MAX_WORKFLOW_CALENDARS, WorkflowDays};
pub use graph::{Graph, GraphError, MAX_NODE_NAME, MAX_NODES, MAX_RETRIES, valid_name};
pub use node::{Condition, Edge, Node, NodeKind, OnDeadline};
pub use plan::{
    Decision, NodeState, PlanInput, Planned, branch_output, branches, newest_runs, node_states, plan,
};
pub use settle::settle;

/// The largest output one node may add to the context, in bytes of JSON.
pub const MAX_NODE_OUTPUT: usize = jobwheel_protocol::MAX_WORKFLOW_OUTPUT;
/// The largest context an instance may hold (start input and outputs), in bytes of JSON.
pub const MAX_CONTEXT: usize = 1024 * 1024;

/// Puts `value` into the context under `node` if the context stays within [`MAX_CONTEXT`];
/// whether it did (a node's output, a switch's branch, a child workflow's outputs).
pub fn join_output(
    context: &mut serde_json::Map<String, serde_json::Value>,
    node: &str,
    value: serde_json::Value,
) -> bool {
    context.insert(node.to_owned(), value);
    if serde_json::to_vec(&context).map_or(usize::MAX, |bytes| bytes.len()) > MAX_CONTEXT {
        context.remove(node);
        return false;
    }
    true
}

/// An instance's stored context as a JSON object; anything else (never written by the engine,
/// but a hand-edited row could hold it) reads as an empty one, so a bad row cannot stop an
/// instance from advancing.
pub fn context_map(stored: &str) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::from_str(stored) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    }
}
