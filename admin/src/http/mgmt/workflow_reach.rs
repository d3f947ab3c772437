//! What a workflow reaches: the jobs of its nodes and, through its sub-workflow nodes, every
//! workflow (and job) below it. Rights follow the reach (review N2, issue 61 item 7): starting,
//! rerunning or deciding needs the group of every job reachable, so a sub-workflow never runs
//! a job its starter could not trigger by hand. A saved graph's sub-workflows must exist, nest
//! at most `MAX_DEPTH` deep and never lead back to the workflow being saved.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;

use super::auth::Principal;
use crate::engine::MAX_SUBFLOW_DEPTH;
use crate::http::{ApiError, MgmtState};
use crate::store::{JobId, WorkflowId};
use crate::workflow::{Graph, NodeKind};

/// Whether a node whose job (or sub-workflow) was deleted is refused ([`require_node_groups`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Deleted {
    /// Reading or stopping: nothing of the deleted job runs.
    Allowed,
    /// Starting or rerunning: the node would run whatever job later gets its id.
    Refused,
}

/// Whether the principal may act on a workflow (or instance) that runs `graph` (its JSON): rights
/// on the group of every node's job, each job still there (review N2), and the same for every
/// workflow its sub-workflow nodes reach (their owner group too). Starting, rerunning or marking
/// a node done drives those jobs with the principal's input, and an instance shows their
/// outputs, so the owner group alone is not enough. 403 names the node in a group the principal
/// may not use; with `Deleted::Refused`, 409 the node whose job or workflow was deleted (what
/// would run it again), while a finished instance of a deleted job stays readable.
pub(super) async fn require_node_groups(
    state: &MgmtState,
    principal: &Principal,
    graph: &str,
    deleted: Deleted,
) -> Result<(), ApiError> {
    let graph = Graph::from_json(graph).map_err(ApiError::internal)?;
    Reach { state, principal, deleted, seen: BTreeSet::new() }.graph(&graph, "graph").await
}

/// One walk of [`require_node_groups`]: each workflow is read once, so a diamond costs one read
/// and a cycle (refused when saved, but a stored one is possible) ends.
struct Reach<'a> {
    state: &'a MgmtState,
    principal: &'a Principal,
    deleted: Deleted,
    seen: BTreeSet<i64>,
}

impl Reach<'_> {
    /// Checks `graph`'s nodes; `at` says where it is (`graph`, `graph → workflow 7`).
    fn graph<'s>(
        &'s mut self,
        graph: &'s Graph,
        at: &'s str,
    ) -> Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send + 's>> {
        Box::pin(async move {
            for node in graph.job_nodes() {
                match self.state.store.load_job(JobId(node.job_id)).await? {
                    None if self.deleted == Deleted::Allowed => {}
                    None => {
                        return Err(ApiError::Conflict(format!(
                            "{at}: node {} runs job {}, which no longer exists; edit the workflow",
                            node.name, node.job_id
                        )));
                    }
                    Some(job) if !self.principal.may_use(job.job.job_group) => {
                        return Err(ApiError::Forbidden(format!(
                            "{at}: node {} runs job {} of executor group {}, which you may not use",
                            node.name, node.job_id, job.job.job_group.0
                        )));
                    }
                    Some(_) => {}
                }
            }
            for node in graph.nodes.iter().filter(|n| n.kind == NodeKind::Workflow) {
                let Some(id) = node.workflow_id else { continue };
                if !self.seen.insert(id) {
                    continue;
                }
                let Some(row) = self.state.store.load_workflow(WorkflowId(id)).await? else {
                    if self.deleted == Deleted::Allowed {
                        continue;
                    }
                    return Err(ApiError::Conflict(format!(
                        "{at}: node {} starts workflow {id}, which no longer exists; edit the workflow",
                        node.name
                    )));
                };
                if !self.principal.may_use(row.workflow.job_group) {
                    return Err(ApiError::Forbidden(format!(
                        "{at}: node {} starts workflow {id} of executor group {}, which you may not use",
                        node.name, row.workflow.job_group.0
                    )));
                }
                let child = Graph::from_json(&row.workflow.graph).map_err(ApiError::internal)?;
                let here = format!("{at} → workflow {id}");
                self.graph(&child, &here).await?;
            }
            Ok(())
        })
    }
}

/// The sub-workflows of a graph being saved as workflow `saving` (`None`: a new one): each
/// exists, none leads back to `saving` and none nests deeper than `MAX_SUBFLOW_DEPTH`. 400
/// with the chain at fault.
pub(super) async fn check_children(
    state: &MgmtState,
    graph: &Graph,
    saving: Option<WorkflowId>,
) -> Result<(), ApiError> {
    let mut path = Vec::new();
    let mut done = BTreeMap::new();
    walk(state, graph, saving.map(|w| w.0), &mut path, &mut done).await
}

/// Depth first from `graph`, `path` the workflows above it; `done` the ones checked whole, with
/// the depth they were checked at (one reached deeper is checked again, for the depth limit).
fn walk<'a>(
    state: &'a MgmtState,
    graph: &'a Graph,
    saving: Option<i64>,
    path: &'a mut Vec<i64>,
    done: &'a mut BTreeMap<i64, usize>,
) -> Pin<Box<dyn Future<Output = Result<(), ApiError>> + Send + 'a>> {
    Box::pin(async move {
        for node in graph.nodes.iter().filter(|n| n.kind == NodeKind::Workflow) {
            let Some(id) = node.workflow_id else { continue };
            let chain = || {
                let names: Vec<String> = path.iter().chain([&id]).map(|w| format!("workflow {w}")).collect();
                format!("node {} starts {}", node.name, names.join(" → "))
            };
            if Some(id) == saving || path.contains(&id) {
                return Err(ApiError::BadRequest(format!(
                    "graph: {}, which starts this workflow again: sub-workflows may not form a cycle",
                    chain()
                )));
            }
            if path.len() + 1 > MAX_SUBFLOW_DEPTH {
                return Err(ApiError::BadRequest(format!(
                    "graph: {}: sub-workflows nest at most {MAX_SUBFLOW_DEPTH} deep",
                    chain()
                )));
            }
            if done.get(&id).is_some_and(|depth| *depth <= path.len()) {
                continue;
            }
            let Some(row) = state.store.load_workflow(WorkflowId(id)).await? else {
                return Err(ApiError::BadRequest(format!("graph: {}, which does not exist", chain())));
            };
            let child = Graph::from_json(&row.workflow.graph).map_err(ApiError::internal)?;
            path.push(id);
            walk(state, &child, saving, path, done).await?;
            path.pop();
            done.insert(id, path.len());
        }
        Ok(())
    })
}
