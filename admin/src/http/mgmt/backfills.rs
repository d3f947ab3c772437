//! `/api/v1/backfills` (jobwheel extension; docs/backfill.md): run a job's or a workflow's
//! schedule over a past range — requested, listed, read with its progress, and cancelled. The
//! engine's `Backfills` role hands the times out; this edge checks the request and the rights:
//! a job's group for a job (as a trigger), and for a workflow what starting it needs (its group
//! and every job it reaches, `workflow_reach.rs`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::job_view::permitted_job;
use super::jobs::zone;
use super::workflows::{permitted, runnable};
use super::{ApiJson, ApiQuery};
use crate::calendar::{ScheduleWalk, rules_by_job};
use crate::cron::Schedule;
use crate::domain::ScheduleType;
use crate::http::{ApiError, MgmtState};
use crate::store::{
    BackfillKind, BackfillProgress, BackfillRow, BackfillStatus, GroupId, JobId, NewBackfill, WorkflowId,
};
use crate::workflow::WorkflowDays;

/// The most scheduled times one backfill may cover; a larger range is refused (split it).
pub(crate) const MAX_TIMES: i32 = 100_000;
/// The most runs of one backfill at once.
pub(crate) const MAX_PARALLELISM: i32 = 50;
/// Backfills one list answers at most.
const LIST_MAX: u32 = 100;

/// A backfill request: `jobId` or `workflowId`, the range (epoch ms, both ends included).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackfillInput {
    #[serde(default)]
    job_id: Option<i32>,
    #[serde(default)]
    workflow_id: Option<i64>,
    from: i64,
    to: i64,
    #[serde(default = "one")]
    parallelism: i32,
    /// `SKIP` (default): times that already ran are skipped; `RERUN`: they run again.
    #[serde(default)]
    existing: Option<String>,
}

fn one() -> i32 {
    1
}

/// A backfill as the API shows it, with how its runs stand.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BackfillView {
    id: i64,
    target_kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    job_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    workflow_id: Option<i64>,
    job_group: i32,
    from: i64,
    to: i64,
    parallelism: i32,
    existing: &'static str,
    status: &'static str,
    /// Scheduled times in the range.
    total: i32,
    /// Times handed out (run) so far.
    handed: i32,
    /// Times skipped because they already ran.
    skipped: i32,
    running: i64,
    succeeded: i64,
    failed: i64,
    message: Option<String>,
    author: String,
    create_time: i64,
    end_time: i64,
}

impl BackfillView {
    fn of(row: BackfillRow, progress: BackfillProgress) -> Self {
        let b = row.backfill;
        let (job_id, workflow_id) = match BackfillKind::of(&b.target_kind) {
            Some(BackfillKind::Job) => (Some(b.target_id), None),
            _ => (None, Some(b.target_id)),
        };
        Self {
            id: row.id,
            target_kind: b.target_kind,
            job_id,
            workflow_id,
            job_group: b.job_group.0,
            from: b.from_ms,
            to: b.to_ms,
            parallelism: b.parallelism,
            existing: if b.rerun_existing == 0 { "SKIP" } else { "RERUN" },
            status: b.status.name(),
            total: b.total,
            handed: b.handed,
            skipped: b.skipped,
            running: progress.running,
            succeeded: progress.succeeded,
            failed: progress.failed,
            message: b.message,
            author: b.author,
            create_time: b.created_ms,
            end_time: b.end_ms,
        }
    }
}

/// `POST /api/v1/backfills`: 201 with the backfill, running.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<BackfillInput>,
) -> Result<(StatusCode, Json<BackfillView>), ApiError> {
    let now_ms = state.clock.now_ms();
    let rerun = match input.existing.as_deref().unwrap_or("SKIP") {
        "SKIP" => 0,
        "RERUN" => 1,
        _ => return Err(ApiError::BadRequest("existing: SKIP or RERUN".to_owned())),
    };
    if !(1..=MAX_PARALLELISM).contains(&input.parallelism) {
        return Err(ApiError::BadRequest(format!("parallelism: 1 to {MAX_PARALLELISM}")));
    }
    if input.from > input.to {
        return Err(ApiError::BadRequest("from: must not be after to".to_owned()));
    }
    if input.to > now_ms {
        return Err(ApiError::BadRequest(
            "to: a backfill runs past times; to must not be in the future".to_owned(),
        ));
    }
    let (kind, target, group, walk) = match (input.job_id, input.workflow_id) {
        (Some(id), None) => {
            let job = permitted_job(&state, &principal, id).await?;
            let rules = rules_by_job(&state.store.job_days(&[JobId(id)]).await?)
                .remove(&JobId(id))
                .unwrap_or_default();
            let schedule = backfillable(job.job.schedule_type.known(), job.job.schedule_conf.as_deref())?;
            let walk = ScheduleWalk::new(schedule, zone(job.time_zone.as_deref())?, rules);
            (BackfillKind::Job, i64::from(id), job.job.job_group, walk)
        }
        (None, Some(id)) => {
            let row = runnable(&state, &principal, id).await?;
            let w = row.workflow;
            let rules = WorkflowDays::from_stored(&w.days).rules(&*state.store).await?;
            let schedule = backfillable(w.schedule_type.known(), w.schedule_conf.as_deref())?;
            let walk = ScheduleWalk::new(schedule, zone(w.time_zone.as_deref())?, rules);
            (BackfillKind::Workflow, id, w.job_group, walk)
        }
        _ => return Err(ApiError::BadRequest("name either jobId or workflowId".to_owned())),
    };
    let total = count_times(&walk, input.from, input.to)?;
    let new = NewBackfill {
        target_kind: kind.name().to_owned(),
        target_id: target,
        job_group: group,
        from_ms: input.from,
        to_ms: input.to,
        parallelism: input.parallelism,
        rerun_existing: rerun,
        status: BackfillStatus::Running,
        cursor_ms: input.from - 1,
        total,
        handed: 0,
        skipped: 0,
        message: None,
        author: principal.user.user.username.clone(),
        created_ms: now_ms,
        end_ms: 0,
    };
    let id = state.store.add_backfill(&new).await?;
    Ok((StatusCode::CREATED, Json(view(&state, id).await?)))
}

/// CRON and FIX_RATE have times of their own; FIX_DELAY's depend on runs, NONE has none. The
/// schedule parsed, or why not.
fn backfillable(schedule: Option<ScheduleType>, conf: Option<&str>) -> Result<Schedule, ApiError> {
    match schedule {
        Some(s @ (ScheduleType::Cron | ScheduleType::FixRate)) => {
            Schedule::parse(s, conf.unwrap_or_default())
                .map_err(|e| ApiError::BadRequest(format!("the schedule cannot be read: {e}")))
        }
        _ => Err(ApiError::BadRequest(
            "only a CRON or FIX_RATE schedule has past times to backfill (FIX_DELAY's depend on its runs)"
                .to_owned(),
        )),
    }
}

/// The scheduled times in `from..=to` under the walk, refused past [`MAX_TIMES`] or at none.
/// Counted by walking (memory does not grow with the range).
fn count_times(walk: &ScheduleWalk, from: i64, to: i64) -> Result<i32, ApiError> {
    let (mut at, mut total) = (from - 1, 0);
    while let Some(t) = walk.next(at, to) {
        at = t;
        total += 1;
        if total > MAX_TIMES {
            return Err(ApiError::BadRequest(format!(
                "the range holds more than {MAX_TIMES} scheduled times; split it into smaller backfills"
            )));
        }
    }
    if total == 0 {
        return Err(ApiError::BadRequest(
            "no scheduled time falls in the range (calendars applied)".to_owned(),
        ));
    }
    Ok(total)
}

async fn view(state: &MgmtState, id: i64) -> Result<BackfillView, ApiError> {
    let row = state
        .store
        .load_backfill(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("backfill {id} not found")))?;
    let progress = state.store.backfill_progress(id).await?;
    Ok(BackfillView::of(row, progress))
}

/// The backfill, if the principal may use its target's group (403 otherwise, 404 if absent).
async fn permitted_backfill(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
) -> Result<BackfillRow, ApiError> {
    let row = state
        .store
        .load_backfill(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("backfill {id} not found")))?;
    principal.require_group(row.backfill.job_group)?;
    Ok(row)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    #[serde(default)]
    job_id: Option<i32>,
    #[serde(default)]
    workflow_id: Option<i64>,
}

/// `GET /api/v1/backfills`: newest first (at most 100), of one job or workflow when asked, of
/// the groups the caller may use.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Vec<BackfillView>>, ApiError> {
    let target = match (query.job_id, query.workflow_id) {
        (Some(job), _) => {
            Some((BackfillKind::Job, i64::from(permitted_job(&state, &principal, job).await?.id.0)))
        }
        (None, Some(workflow)) => {
            Some((BackfillKind::Workflow, permitted(&state, &principal, workflow).await?.id.0))
        }
        (None, None) => None,
    };
    let groups: Option<Vec<GroupId>> =
        (!principal.is_admin()).then(|| principal.groups().into_iter().collect());
    let rows = state.store.list_backfills(target, groups.as_deref(), LIST_MAX).await?;
    let mut views = Vec::with_capacity(rows.len());
    for row in rows {
        let progress = state.store.backfill_progress(row.id).await?;
        views.push(BackfillView::of(row, progress));
    }
    Ok(Json(views))
}

/// `GET /api/v1/backfills/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<BackfillView>, ApiError> {
    permitted_backfill(&state, &principal, id).await?;
    Ok(Json(view(&state, id).await?))
}

/// `POST /api/v1/backfills/{id}/cancel`: no further time is handed out (runs already started
/// finish); needs what requesting it needed. 409 if it is over.
pub(crate) async fn cancel(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<BackfillView>, ApiError> {
    let row = permitted_backfill(&state, &principal, id).await?;
    match row.kind() {
        Some(BackfillKind::Job) => {
            permitted_job(&state, &principal, i32::try_from(row.backfill.target_id).unwrap_or(0)).await?;
        }
        Some(BackfillKind::Workflow) => {
            runnable(&state, &principal, WorkflowId(row.backfill.target_id).0).await?;
        }
        None => {}
    }
    if !state.store.cancel_backfill(id, state.clock.now_ms()).await? {
        return Err(ApiError::Conflict(format!("backfill {id} is not running")));
    }
    Ok(Json(view(&state, id).await?))
}
