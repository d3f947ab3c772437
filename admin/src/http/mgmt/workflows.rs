//! `/api/v1/workflows` (jobwheel extension; docs/workflows.md): workflows as the API and the
//! editor exchange them, and their schedule switched on and off like a job's. Instances are in
//! `workflow_instances.rs`.
//!
//! A workflow belongs to its owner group: who may use that group may read, edit, start and
//! stop it, and every node's job must be one the writer may use as well, so a workflow never
//! runs a job its author could not trigger by hand.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::alarm_routes::{self, AlarmForm, AlarmView};
use super::auth::Principal;
use super::jobs::zone;
use super::workflow_reach::{Deleted, check_children, require_node_groups};
use super::{ApiJson, ApiQuery, MAX_LIMIT};
use crate::calendar::DayRules;
use crate::domain::{MisfireStrategy, Named, Overflow, ScheduleType};
use crate::engine;
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, JobId, NewWorkflow, Page, ScheduleStatus, WorkflowId, WorkflowRow, route_scope};
use crate::workflow::schema::mismatch;
use crate::workflow::{DaysError, Graph, WorkflowDays};

/// Characters of a workflow's name (`varchar(255)`).
const NAME_MAX: usize = 255;
/// Characters of a workflow's alarm addresses (`varchar(255)`).
const ALARM_EMAIL_MAX: usize = 255;
/// The most instances of one workflow that may run at once.
const MAX_INSTANCES: i32 = 100;

/// A workflow as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkflowView {
    pub(crate) id: i64,
    name: String,
    job_group: i32,
    schedule_type: Named<ScheduleType>,
    schedule_conf: Option<String>,
    time_zone: Option<String>,
    misfire_strategy: Named<MisfireStrategy>,
    max_instances: i32,
    overflow: Named<Overflow>,
    /// 1 while its schedule runs.
    trigger_status: i32,
    trigger_next_time: i64,
    author: String,
    update_time: i64,
    alarm_email: String,
    /// `onlyOn`, `neverOn`, `exclusionWindows`.
    #[serde(flatten)]
    days: WorkflowDays,
    /// `alarmChannels`, `doneWithin` (docs/alarms.md).
    #[serde(flatten)]
    alarms: AlarmView,
    graph: Graph,
}

impl WorkflowView {
    pub(crate) fn of(row: WorkflowRow) -> Self {
        let w = row.workflow;
        Self {
            id: row.id.0,
            graph: Graph::from_json(&w.graph).unwrap_or_default(),
            name: w.name,
            job_group: w.job_group.0,
            schedule_type: w.schedule_type,
            schedule_conf: w.schedule_conf,
            time_zone: w.time_zone,
            misfire_strategy: w.misfire_strategy,
            max_instances: w.max_instances,
            overflow: w.overflow,
            trigger_status: w.status.code(),
            trigger_next_time: w.trigger_next_time,
            author: w.author,
            update_time: w.update_ms,
            days: WorkflowDays::from_stored(&w.days),
            alarm_email: w.alarm_email,
            alarms: AlarmView::default(),
        }
    }
}

/// The view of `row` with its alarm fields.
async fn shown(state: &MgmtState, row: WorkflowRow) -> Result<WorkflowView, ApiError> {
    let alarms =
        alarm_routes::views(state, route_scope::WORKFLOW, &[row.id.0]).await?.pop().unwrap_or_default();
    Ok(WorkflowView { alarms, ..WorkflowView::of(row) })
}

fn default_schedule() -> Named<ScheduleType> {
    ScheduleType::None.into()
}
fn default_misfire() -> Named<MisfireStrategy> {
    MisfireStrategy::DoNothing.into()
}
fn default_max() -> i32 {
    1
}
fn default_overflow() -> Named<Overflow> {
    Overflow::Skip.into()
}

/// The workflow form.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkflowInput {
    pub(crate) name: String,
    pub(crate) job_group: i32,
    #[serde(default = "default_schedule")]
    pub(crate) schedule_type: Named<ScheduleType>,
    #[serde(default)]
    pub(crate) schedule_conf: Option<String>,
    #[serde(default)]
    pub(crate) time_zone: Option<String>,
    #[serde(default = "default_misfire")]
    pub(crate) misfire_strategy: Named<MisfireStrategy>,
    #[serde(default = "default_max")]
    pub(crate) max_instances: i32,
    #[serde(default = "default_overflow")]
    pub(crate) overflow: Named<Overflow>,
    /// Where its alarms are mailed (comma-separated addresses).
    #[serde(default)]
    pub(crate) alarm_email: Option<String>,
    /// `onlyOn`, `neverOn`, `exclusionWindows` (calendar ids and `HH:MM-HH:MM` windows).
    #[serde(flatten)]
    pub(crate) days: WorkflowDays,
    /// `alarmChannels`, `doneWithin`; absent keeps them.
    #[serde(flatten)]
    pub(crate) alarms: AlarmForm,
    pub(crate) graph: Graph,
}

/// The first start of `workflow`'s schedule from now under `rules` (the engine's rule) in its
/// zone; an error names what is wrong with it.
fn first_start(workflow: &NewWorkflow, rules: &DayRules, now_ms: i64) -> Result<Option<i64>, ApiError> {
    let tz = zone(workflow.time_zone.as_deref())?;
    Ok(engine::first_workflow_start(workflow, tz, rules, now_ms)?)
}

/// The stored form of an input, after every check; `author` is the writer.
async fn checked(
    state: &MgmtState,
    principal: &Principal,
    input: WorkflowInput,
    author: &str,
    saving: Option<WorkflowId>,
) -> Result<NewWorkflow, ApiError> {
    let name = input.name.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(ApiError::BadRequest(format!("name: 1 to {NAME_MAX} characters")));
    }
    let group = GroupId(input.job_group);
    if state.store.load_group(group).await?.is_none() {
        return Err(ApiError::BadRequest(format!("jobGroup: group {} does not exist", group.0)));
    }
    principal.require_group(group)?;
    let days = input.days.clone().checked().map_err(days_error)?;
    let rules = days.checked_rules(&*state.store).await.map_err(days_error)?;
    let alarm_email = input.alarm_email.as_deref().map(str::trim).unwrap_or_default().to_owned();
    super::job_input::check_alarm_email(Some(&alarm_email), ALARM_EMAIL_MAX)?;
    if input.misfire_strategy.known().is_none() {
        return Err(ApiError::BadRequest("misfireStrategy: DO_NOTHING or FIRE_ONCE_NOW".to_owned()));
    }
    if !(1..=MAX_INSTANCES).contains(&input.max_instances) {
        return Err(ApiError::BadRequest(format!("maxInstances: 1 to {MAX_INSTANCES}")));
    }
    if input.overflow.known().is_none() {
        return Err(ApiError::BadRequest("overflow: SKIP or QUEUE".to_owned()));
    }
    input.graph.check().map_err(|e| ApiError::BadRequest(format!("graph: {e}")))?;
    // A scheduled start's input is `{}`: a start schema that refuses it would fail every one.
    if input.schedule_type.known().is_some_and(|t| t != ScheduleType::None)
        && let Some(why) = input.graph.input_schema.as_ref().and_then(|s| mismatch(s, &serde_json::json!({})))
    {
        return Err(ApiError::BadRequest(format!(
            "graph: inputSchema: a scheduled start's input is {{}}, which the schema refuses {why}"
        )));
    }
    let ids: BTreeSet<i32> = input.graph.job_nodes().map(|n| n.job_id).collect();
    let mut usable = BTreeSet::new();
    for id in ids {
        if let Some(job) = state.store.load_job(JobId(id)).await? {
            if !principal.may_use(job.job.job_group) {
                return Err(ApiError::Forbidden(format!("graph: job {id} is in a group you may not use")));
            }
            usable.insert(id);
        }
    }
    input
        .graph
        .check_jobs(|id| usable.contains(&id))
        .map_err(|e| ApiError::BadRequest(format!("graph: {e}")))?;
    // Sub-workflows: they exist, form no cycle, and the writer may run all they reach.
    check_children(state, &input.graph, saving).await?;
    require_node_groups(state, principal, &input.graph.to_json(), Deleted::Refused).await?;
    let workflow = NewWorkflow {
        name: name.to_owned(),
        job_group: group,
        schedule_type: input.schedule_type,
        schedule_conf: input.schedule_conf.filter(|c| !c.trim().is_empty()),
        time_zone: input.time_zone.filter(|z| !z.trim().is_empty()),
        misfire_strategy: input.misfire_strategy,
        max_instances: input.max_instances,
        overflow: input.overflow,
        graph: input.graph.to_json(),
        status: ScheduleStatus::Stopped,
        trigger_last_time: 0,
        trigger_next_time: 0,
        author: author.to_owned(),
        update_ms: state.clock.now_ms(),
        days: days.to_stored(),
        alarm_email,
    };
    first_start(&workflow, &rules, state.clock.now_ms())?;
    Ok(workflow)
}

/// A day-rules fault as the API's 400 (a store failure stays a 500).
fn days_error(error: DaysError) -> ApiError {
    match error {
        DaysError::Invalid(message) => ApiError::BadRequest(message),
        DaysError::Store(e) => e.into(),
    }
}

/// A workflow the principal may use and run: its owner group and every node's (N2), or
/// 404/403/409.
pub(super) async fn runnable(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
) -> Result<WorkflowRow, ApiError> {
    let row = permitted(state, principal, id).await?;
    require_node_groups(state, principal, &row.workflow.graph, Deleted::Refused).await?;
    Ok(row)
}

/// A workflow the principal may use, or 404/403.
pub(super) async fn permitted(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
) -> Result<WorkflowRow, ApiError> {
    let row = state
        .store
        .load_workflow(WorkflowId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("workflow {id} not found")))?;
    principal.require_group(row.workflow.job_group)?;
    Ok(row)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    #[serde(default)]
    job_group: Option<i32>,
}

/// `GET /api/v1/workflows`: the workflows of the groups the principal may use.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Vec<WorkflowView>>, ApiError> {
    // Unlike the job list (upstream's), no group chosen means every group the caller may use.
    let groups: Option<Vec<GroupId>> = match query.job_group {
        Some(group) => {
            principal.require_group(GroupId(group))?;
            Some(vec![GroupId(group)])
        }
        None if principal.is_admin() => None,
        None => Some(principal.groups().into_iter().collect()),
    };
    let rows = state.store.list_workflows(groups.as_deref()).await?;
    let ids: Vec<i64> = rows.iter().map(|r| r.id.0).collect();
    let alarms = alarm_routes::views(&state, route_scope::WORKFLOW, &ids).await?;
    Ok(Json(
        rows.into_iter()
            .zip(alarms)
            .map(|(row, alarms)| WorkflowView { alarms, ..WorkflowView::of(row) })
            .collect(),
    ))
}

/// `GET /api/v1/workflows/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<WorkflowView>, ApiError> {
    Ok(Json(shown(&state, permitted(&state, &principal, id).await?).await?))
}

/// `POST /api/v1/workflows`: created with its schedule off.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<WorkflowInput>,
) -> Result<(StatusCode, Json<WorkflowView>), ApiError> {
    let alarms = input.alarms.check(&state, route_scope::WORKFLOW).await?;
    let workflow = checked(&state, &principal, input, &principal.user.user.username, None).await?;
    let id = state.store.add_workflow(&workflow).await?;
    alarms.store(state.store.as_ref(), route_scope::WORKFLOW, id.0).await?;
    Ok((StatusCode::CREATED, Json(shown(&state, permitted(&state, &principal, id.0).await?).await?)))
}

/// `PUT /api/v1/workflows/{id}`: running instances keep the graph they started with; a running
/// schedule restarts from now under the new settings.
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiJson(input): ApiJson<WorkflowInput>,
) -> Result<Json<WorkflowView>, ApiError> {
    let current = permitted(&state, &principal, id).await?;
    let alarms = input.alarms.check(&state, route_scope::WORKFLOW).await?;
    let mut workflow =
        checked(&state, &principal, input, &principal.user.user.username, Some(current.id)).await?;
    if current.workflow.status == ScheduleStatus::Running {
        let rules = WorkflowDays::from_stored(&workflow.days).rules(&*state.store).await?;
        let next = first_start(&workflow, &rules, state.clock.now_ms())?;
        workflow.status = if next.is_some() { ScheduleStatus::Running } else { ScheduleStatus::Stopped };
        workflow.trigger_next_time = next.unwrap_or(0);
        workflow.trigger_last_time = current.workflow.trigger_last_time;
    }
    state.store.update_workflow(current.id, &workflow).await?;
    alarms.store(state.store.as_ref(), route_scope::WORKFLOW, current.id.0).await?;
    Ok(Json(shown(&state, permitted(&state, &principal, id).await?).await?))
}

/// `DELETE /api/v1/workflows/{id}`: refused while an instance runs (stop it first).
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    let current = permitted(&state, &principal, id).await?;
    let page = state.store.page_instances(current.id, Page { offset: 0, limit: MAX_LIMIT }).await?;
    if page.rows.iter().any(|i| !i.status.is_over()) {
        return Err(ApiError::Conflict(format!(
            "workflow {:?} has running or queued instances; stop them first",
            current.workflow.name
        )));
    }
    // A workflow another one starts stays: deleting it would fail that one's node at run time.
    for other in state.store.list_workflows(None).await? {
        let graph = Graph::from_json(&other.workflow.graph).unwrap_or_default();
        if let Some(node) = graph.nodes.iter().find(|n| n.workflow_id == Some(current.id.0)) {
            return Err(ApiError::Conflict(format!(
                "workflow {:?} is started by node {} of workflow {:?}; edit that workflow first",
                current.workflow.name, node.name, other.workflow.name
            )));
        }
    }
    state.store.delete_workflow(current.id).await?;
    alarm_routes::forget(&state, route_scope::WORKFLOW, current.id.0).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/workflows/{id}/start`: its schedule runs from now.
pub(crate) async fn start(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<WorkflowView>, ApiError> {
    let mut row = runnable(&state, &principal, id).await?;
    let w = &mut row.workflow;
    let rules = WorkflowDays::from_stored(&w.days).rules(&*state.store).await?;
    let next = first_start(w, &rules, state.clock.now_ms())?.ok_or_else(|| {
        ApiError::BadRequest("a workflow with scheduleType NONE starts only by hand or API".to_owned())
    })?;
    w.status = ScheduleStatus::Running;
    w.trigger_next_time = next;
    state.store.update_workflow(row.id, &row.workflow).await?;
    Ok(Json(shown(&state, permitted(&state, &principal, id).await?).await?))
}

/// `POST /api/v1/workflows/{id}/stop`: its schedule stops (running instances go on).
pub(crate) async fn stop(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<WorkflowView>, ApiError> {
    let mut row = permitted(&state, &principal, id).await?;
    row.workflow.status = ScheduleStatus::Stopped;
    row.workflow.trigger_next_time = 0;
    state.store.update_workflow(row.id, &row.workflow).await?;
    Ok(Json(shown(&state, permitted(&state, &principal, id).await?).await?))
}

/// The audit log's view of a workflow: what the API shows.
pub(crate) struct WorkflowSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for WorkflowSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let row = state.store.load_workflow(WorkflowId(id)).await?;
        row.map(|r| serde_json::to_value(WorkflowView::of(r)).map_err(ApiError::internal)).transpose()
    }
}
