//! `/api/v1/workflows/{id}/instances` and `/api/v1/workflow-instances` (jobwheel extension;
//! docs/workflows.md): instances started with a context, listed, read with their node runs,
//! stopped, rerun from their failed nodes or as a whole, and failed nodes marked done. Each needs
//! the workflow's owner group and every node's job group of the graph it acts on — the
//! workflow's for a start, the instance's stored one otherwise (review N2).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::workflow_reach::{Deleted, require_node_groups};
use super::workflows::{permitted, runnable};
use super::{ApiJson, ApiQuery, DEFAULT_LIMIT, MAX_LIMIT};
use crate::engine::{InstanceOp, OpError, StartError};
use crate::http::{ApiError, MgmtState};
use crate::store::{InstanceId, InstanceRow, ItemCounts, Page, RunId, RunRow, StartOutcome};
use crate::workflow::Graph;

/// The body of a start: the instance's context, a JSON object.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct StartBody {
    #[serde(default)]
    context: Option<serde_json::Value>,
}

/// What a start did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartReply {
    /// `STARTED`, `QUEUED` or `SKIPPED`.
    outcome: &'static str,
    instance_id: Option<i64>,
}

/// `POST /api/v1/workflows/{id}/instances`: starts an instance now.
pub(crate) async fn start_instance(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiJson(body): ApiJson<StartBody>,
) -> Result<(StatusCode, Json<StartReply>), ApiError> {
    let row = runnable(&state, &principal, id).await?;
    let context = body.context.map(|c| c.to_string());
    let outcome = state.core.start_workflow(row.id, context.as_deref()).await.map_err(start_error)?;
    Ok(start_reply(outcome))
}

fn start_error(error: StartError) -> ApiError {
    match error {
        StartError::BadContext(m) => ApiError::BadRequest(format!("context: {m}")),
        StartError::NotFound(id) => ApiError::NotFound(format!("workflow {id} not found")),
        StartError::BadGraph(m) => ApiError::internal(anyhow::anyhow!(m)),
        StartError::Engine(e) => e.into(),
    }
}

/// 201 with the new instance, or 409 when max instances skipped it.
fn start_reply(outcome: StartOutcome) -> (StatusCode, Json<StartReply>) {
    let reply = match outcome {
        StartOutcome::Started(i) => StartReply { outcome: "STARTED", instance_id: Some(i.0) },
        StartOutcome::Queued(i) => StartReply { outcome: "QUEUED", instance_id: Some(i.0) },
        StartOutcome::Skipped | StartOutcome::Gone => StartReply { outcome: "SKIPPED", instance_id: None },
    };
    let code = if reply.instance_id.is_some() { StatusCode::CREATED } else { StatusCode::CONFLICT };
    (code, Json(reply))
}

/// What an instance's runs show besides themselves: the child instances of sub-workflow runs
/// and the item counts of map runs, by run.
pub(crate) struct RunExtras {
    children: Vec<(RunId, InstanceId)>,
    items: Vec<(RunId, ItemCounts)>,
}

/// An instance as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InstanceView {
    id: i64,
    workflow_id: i64,
    status: &'static str,
    trigger_type: String,
    /// The instance whose sub-workflow node started this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_instance_id: Option<i64>,
    fire_time: i64,
    start_time: i64,
    end_time: i64,
    context: serde_json::Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    graph: Option<Graph>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<Vec<RunView>>,
}

impl InstanceView {
    /// `runs` with the child instances the runs started (`children`, by run).
    fn of(row: InstanceRow, runs: Option<(Vec<RunRow>, RunExtras)>) -> Self {
        Self {
            id: row.id.0,
            workflow_id: row.workflow_id.0,
            status: row.status.name(),
            trigger_type: row.started_by(),
            parent_instance_id: row.parent_instance.map(|i| i.0),
            fire_time: row.fire_time_ms,
            start_time: row.start_ms,
            end_time: row.end_ms,
            context: serde_json::from_str(&row.context).unwrap_or_default(),
            graph: runs.as_ref().map(|_| Graph::from_json(&row.graph).unwrap_or_default()),
            runs: runs.map(|(runs, extras)| {
                let child = |run: RunId| extras.children.iter().find(|(r, _)| *r == run).map(|(_, c)| c.0);
                let items =
                    |run: RunId| extras.items.iter().find(|(r, _)| *r == run).map(|(_, c)| ItemsView::of(c));
                runs.into_iter()
                    .map(|r| RunView { child_instance_id: child(r.id), items: items(r.id), ..RunView::of(r) })
                    .collect()
            }),
        }
    }
}

/// One node run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunView {
    id: i64,
    node: String,
    attempt: i32,
    status: &'static str,
    due_time: i64,
    fired_time: i64,
    end_time: i64,
    shards: i32,
    log_id: Option<i64>,
    output: Option<serde_json::Value>,
    message: Option<String>,
    /// The instance a sub-workflow node's run started.
    #[serde(skip_serializing_if = "Option::is_none")]
    child_instance_id: Option<i64>,
    /// A map node's run: how many of its items are in each state.
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<ItemsView>,
}

/// A map run's progress.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemsView {
    total: i64,
    succeeded: i64,
    failed: i64,
    running: i64,
    due: i64,
    stopped: i64,
}

impl ItemsView {
    fn of(c: &ItemCounts) -> Self {
        Self {
            total: c.total,
            succeeded: c.succeeded,
            failed: c.failed,
            running: c.running,
            due: c.due,
            stopped: c.stopped,
        }
    }
}

impl RunView {
    fn of(row: RunRow) -> Self {
        let status = row.status.name();
        Self {
            id: row.id.0,
            node: row.node,
            attempt: row.attempt,
            status,
            due_time: row.due_ms,
            fired_time: row.fired_ms,
            end_time: row.end_ms,
            shards: row.shards,
            log_id: row.log_id.map(|l| l.0),
            output: row.output.and_then(|o| serde_json::from_str(&o).ok()),
            message: row.message,
            child_instance_id: None,
            items: None,
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct PageQuery {
    #[serde(default)]
    offset: u32,
    #[serde(default)]
    limit: Option<u32>,
}

/// A page of instances.
#[derive(Debug, Serialize)]
pub(crate) struct InstancePage {
    total: u64,
    rows: Vec<InstanceView>,
}

/// `GET /api/v1/workflows/{id}/instances`: newest first.
pub(crate) async fn instances(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> Result<Json<InstancePage>, ApiError> {
    let row = permitted(&state, &principal, id).await?;
    let page = Page { offset: query.offset, limit: query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) };
    let found = state.store.page_instances(row.id, page).await?;
    Ok(Json(InstancePage {
        total: found.total,
        rows: found.rows.into_iter().map(|r| InstanceView::of(r, None)).collect(),
    }))
}

/// An instance the principal may see and act on: through its workflow's group, and every node's
/// group of the graph the instance runs (its own, stored at its start: a rerun runs it again).
pub(super) async fn permitted_instance(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
    deleted: Deleted,
) -> Result<InstanceRow, ApiError> {
    let row = state
        .store
        .load_instance(InstanceId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("workflow instance {id} not found")))?;
    permitted(state, principal, row.workflow_id.0).await?;
    require_node_groups(state, principal, &row.graph, deleted).await?;
    Ok(row)
}

/// `GET /api/v1/workflow-instances/{id}`: with its graph and every node run.
pub(crate) async fn instance(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Allowed).await?;
    let runs = with_extras(&state, &row).await?;
    Ok(Json(InstanceView::of(row, Some(runs))))
}

/// `POST /api/v1/workflow-instances/{id}/stop`.
pub(crate) async fn stop_instance(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Allowed).await?;
    if !state.core.stop_workflow_instance(row.id).await? {
        return Err(ApiError::Conflict(format!("workflow instance {id} is not running")));
    }
    full_instance(&state, &principal, id).await
}

/// The instance with its graph and runs, as it is now.
async fn full_instance(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(state, principal, id, Deleted::Allowed).await?;
    let runs = with_extras(state, &row).await?;
    Ok(Json(InstanceView::of(row, Some(runs))))
}

/// An instance's runs with their child instances and item counts.
async fn with_extras(state: &MgmtState, row: &InstanceRow) -> Result<(Vec<RunRow>, RunExtras), ApiError> {
    let runs = state.store.instance_runs(row.id).await?;
    let children = state.store.children(row.id).await?;
    // Only waiting runs and those of map nodes can have items; a read of the others is none.
    let graph = Graph::from_json(&row.graph).unwrap_or_default();
    let maps: Vec<RunId> = runs
        .iter()
        .filter(|r| graph.node(&r.node).is_some_and(|n| n.kind == crate::workflow::NodeKind::Map))
        .map(|r| r.id)
        .collect();
    let items = state.store.item_counts(&maps).await?;
    Ok((runs, RunExtras { children, items }))
}

fn op_error(error: OpError) -> ApiError {
    match error {
        OpError::NotFound(m) => ApiError::NotFound(m),
        OpError::Conflict(m) => ApiError::Conflict(m),
        OpError::BadOutput(m) => ApiError::BadRequest(format!("output: {m}")),
        OpError::Engine(e) => e.into(),
    }
}

/// `POST /api/v1/workflow-instances/{id}/rerun-failed`: its failed nodes run again.
pub(crate) async fn rerun_failed(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Refused).await?;
    state.core.workflow_instance_op(row.id, InstanceOp::RerunFailed).await.map_err(op_error)?;
    full_instance(&state, &principal, id).await
}

/// The body of a "mark done": the node's output (any JSON; none: no output).
#[derive(Debug, Deserialize, Default)]
pub(crate) struct DoneBody {
    #[serde(default)]
    output: Option<serde_json::Value>,
}

/// `POST /api/v1/workflow-instances/{id}/nodes/{name}/done`: a failed node counts as
/// succeeded, with the given output, and what follows it runs.
pub(crate) async fn mark_done(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, node)): Path<(i64, String)>,
    ApiJson(body): ApiJson<DoneBody>,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Refused).await?;
    let output = body.output.map(|o| o.to_string());
    let op = InstanceOp::MarkDone { node, output };
    state.core.workflow_instance_op(row.id, op).await.map_err(op_error)?;
    full_instance(&state, &principal, id).await
}

/// The body of an approval's decision: why, optionally (at most [`COMMENT_MAX`] characters).
#[derive(Debug, Deserialize, Default)]
pub(crate) struct DecisionBody {
    #[serde(default)]
    comment: Option<String>,
}

/// The longest comment on an approval's decision.
const COMMENT_MAX: usize = 1000;

/// `POST /api/v1/workflow-instances/{id}/nodes/{name}/approve`: the waiting approval succeeds.
pub(crate) async fn approve(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, node)): Path<(i64, String)>,
    ApiJson(body): ApiJson<DecisionBody>,
) -> Result<Json<InstanceView>, ApiError> {
    decide(&state, &principal, (id, node), true, body).await
}

/// `POST /api/v1/workflow-instances/{id}/nodes/{name}/reject`: the waiting approval fails.
pub(crate) async fn reject(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, node)): Path<(i64, String)>,
    ApiJson(body): ApiJson<DecisionBody>,
) -> Result<Json<InstanceView>, ApiError> {
    decide(&state, &principal, (id, node), false, body).await
}

/// A decision needs the rights every instance operation needs: the workflow's group and every
/// node's job's group (`permitted_instance`); the decider's name is recorded in the run.
async fn decide(
    state: &Arc<MgmtState>,
    principal: &Principal,
    (id, node): (i64, String),
    approve: bool,
    body: DecisionBody,
) -> Result<Json<InstanceView>, ApiError> {
    let row = permitted_instance(state, principal, id, Deleted::Refused).await?;
    let comment = body.comment.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty());
    if comment.as_ref().is_some_and(|c| c.chars().count() > COMMENT_MAX) {
        return Err(ApiError::BadRequest(format!("comment: at most {COMMENT_MAX} characters")));
    }
    let by = principal.user.user.username.clone();
    let op = InstanceOp::Decide { node, approve, by, comment };
    state.core.workflow_instance_op(row.id, op).await.map_err(op_error)?;
    full_instance(state, principal, id).await
}

/// `POST /api/v1/workflow-instances/{id}/rerun`: a new instance with the same graph and start
/// input.
pub(crate) async fn rerun(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<(StatusCode, Json<StartReply>), ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Refused).await?;
    let outcome = state.core.rerun_workflow_instance(row.id).await.map_err(start_error)?;
    Ok(start_reply(outcome))
}
