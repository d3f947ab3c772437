//! Workflows (jobwheel; xxl-job has only child jobs): a DAG of nodes, each running an existing
//! job, with edges that carry a condition. This module is the pure model — the graph as stored
//! and edited ([`Graph`]), its validation ([`Graph::check`]), and the planner
//! ([`plan`]) that says, from the states of an instance's nodes, which nodes run next, which are
//! skipped, and when the instance is over. The engine's `Workflows` role stores and fires what
//! the planner decides (docs/workflows.md).

mod graph;
mod plan;

pub use graph::{Condition, Edge, Graph, GraphError, MAX_NODE_NAME, MAX_NODES, MAX_RETRIES, Node};
pub use plan::{Decision, NodeState, Planned, plan};
