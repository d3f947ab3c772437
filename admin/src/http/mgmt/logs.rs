//! `/api/v1/logs`: the trigger log list, one log, its rolling content from the executor, kill,
//! and upstream's nine "clear log" choices (upstream `JobLogController`). Every endpoint checks
//! the caller's permission on the log's executor group.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::{ApiJson, ApiQuery, Listed, Paging, ms};
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, JobId, LogClearType, LogFilter, LogId, LogRow, LogStatusFilter};

/// A log as the API shows it (`XxlJobLog` plus the job's description).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogView {
    id: i64,
    job_group: i32,
    job_id: i32,
    /// `None` when the job was deleted after the run (its logs normally go with it).
    job_desc: Option<String>,
    executor_address: Option<String>,
    executor_handler: Option<String>,
    executor_param: Option<String>,
    executor_sharding_param: Option<String>,
    executor_fail_retry_count: i32,
    trigger_time: Option<i64>,
    trigger_code: i32,
    trigger_msg: Option<String>,
    handle_time: Option<i64>,
    handle_code: i32,
    handle_msg: Option<String>,
    alarm_status: i16,
}

impl LogView {
    fn new(row: LogRow, job_desc: Option<String>) -> Self {
        Self {
            id: row.id.0,
            job_group: row.job_group.0,
            job_id: row.job_id.0,
            job_desc,
            executor_address: row.executor_address,
            executor_handler: row.executor_handler,
            executor_param: row.executor_param,
            executor_sharding_param: row.executor_sharding_param,
            executor_fail_retry_count: row.executor_fail_retry_count,
            trigger_time: ms(row.trigger_time),
            trigger_code: row.trigger_code,
            trigger_msg: row.trigger_msg,
            handle_time: ms(row.handle_time),
            handle_code: row.handle_code,
            handle_msg: row.handle_msg,
            alarm_status: row.alarm_status,
        }
    }
}

/// Job descriptions, each job loaded once per request.
#[derive(Default)]
struct JobDescs(HashMap<JobId, Option<String>>);

impl JobDescs {
    async fn view(&mut self, state: &MgmtState, row: LogRow) -> Result<LogView, ApiError> {
        let desc = match self.0.get(&row.job_id) {
            Some(desc) => desc.clone(),
            None => {
                let desc = state.store.load_job(row.job_id).await?.map(|j| j.job.job_desc);
                self.0.insert(row.job_id, desc.clone());
                desc
            }
        };
        Ok(LogView::new(row, desc))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogQuery {
    #[serde(default)]
    job_group: Option<i32>,
    #[serde(default)]
    job_id: Option<i32>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    from: Option<i64>,
    #[serde(default)]
    to: Option<i64>,
    /// Part of the executor address (`10.0.0.5`, `:9999`).
    #[serde(default)]
    executor_address: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

fn instant(field: &str, ms: Option<i64>) -> Result<Option<DateTime<Utc>>, ApiError> {
    ms.map(|ms| {
        DateTime::from_timestamp_millis(ms).ok_or_else(|| {
            ApiError::BadRequest(format!("{field}: {ms} is not a valid epoch-millisecond time"))
        })
    })
    .transpose()
}

/// `GET /api/v1/logs`, newest first.
///
/// Normal users name a group (`jobGroup`) or a job (`jobId`, whose group is then used), like
/// upstream's log page, which always has one selected: the store filters by one group, and a
/// list must never mix in groups the caller may not see.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<LogQuery>,
) -> Result<Json<Listed<LogView>>, ApiError> {
    let page = query.paging.page()?;
    let status = match query.status.as_deref().map(str::trim) {
        None | Some("" | "all") => LogStatusFilter::All,
        Some("success") => LogStatusFilter::Success,
        Some("fail") => LogStatusFilter::Failed,
        Some("running") => LogStatusFilter::Running,
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "status: must be all, success, fail or running, not {other:?}"
            )));
        }
    };
    let (trigger_from, trigger_to) = (instant("from", query.from)?, instant("to", query.to)?);
    if let (Some(from), Some(to)) = (trigger_from, trigger_to)
        && from > to
    {
        return Err(ApiError::BadRequest("from: must not be after to".to_owned()));
    }
    let job_id = query.job_id.filter(|id| *id > 0).map(JobId);
    let job_group = match (query.job_group.filter(|g| *g > 0).map(GroupId), job_id) {
        (Some(group), _) => {
            principal.require_group(group)?;
            Some(group)
        }
        (None, _) if principal.is_admin() => None,
        (None, Some(job_id)) => {
            let job = state
                .store
                .load_job(job_id)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("job {job_id} not found")))?;
            principal.require_group(job.job.job_group)?;
            Some(job.job.job_group)
        }
        (None, None) => {
            return Err(ApiError::BadRequest(
                "jobGroup: required (choose one of your executor groups, or give jobId)".to_owned(),
            ));
        }
    };
    let executor_address = query.executor_address.map(|a| a.trim().to_owned()).filter(|a| !a.is_empty());
    let filter = LogFilter { job_group, job_id, status, trigger_from, trigger_to, executor_address };
    let paged = state.store.page_logs(&filter, page).await?;
    let mut descs = JobDescs::default();
    let mut items = Vec::with_capacity(paged.rows.len());
    for row in paged.rows {
        items.push(descs.view(&state, row).await?);
    }
    Ok(Json(Listed { total: paged.total, items }))
}

/// The log `id`, if the caller may see its group (403 otherwise, 404 if absent).
pub(super) async fn permitted_log(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
) -> Result<LogRow, ApiError> {
    let log = state
        .store
        .load_log(LogId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("log {id} not found")))?;
    principal.require_group(log.job_group)?;
    Ok(log)
}

/// `GET /api/v1/logs/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<LogDetail>, ApiError> {
    let log = permitted_log(&state, &principal, id).await?;
    let flight = super::log_replay::flight_view(&state, log.id).await?;
    Ok(Json(LogDetail { log: JobDescs::default().view(&state, log).await?, flight }))
}

/// One log with what the log page needs beyond the row.
#[derive(Serialize)]
pub(crate) struct LogDetail {
    #[serde(flatten)]
    log: LogView,
    /// The run's flight record, when it was recorded (docs/replay.md).
    flight: Option<super::log_replay::FlightView>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContentQuery {
    #[serde(default = "first_line")]
    from_line: i32,
}

fn first_line() -> i32 {
    1
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContentView {
    from_line_num: i32,
    to_line_num: i32,
    log_content: String,
    end: bool,
}

/// `GET /api/v1/logs/{id}/content?fromLine=`: one page of the run's log from the executor that
/// ran it (upstream `logDetailCat`). An unreachable or failing executor is 502.
pub(crate) async fn content(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiQuery(query): ApiQuery<ContentQuery>,
) -> Result<Json<ContentView>, ApiError> {
    if query.from_line < 1 {
        return Err(ApiError::BadRequest("fromLine: must be 1 or more".to_owned()));
    }
    let log = permitted_log(&state, &principal, id).await?;
    let result = state.core.read_log(log.id, query.from_line).await?;
    Ok(Json(ContentView {
        from_line_num: result.from_line_num,
        to_line_num: result.to_line_num,
        log_content: result.log_content,
        end: result.is_end,
    }))
}

/// `POST /api/v1/logs/{id}/kill`: stops a running run on its executor; the log is failed with
/// upstream's "killed by operator" note. 400 when the trigger failed or the run has finished.
pub(crate) async fn kill(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let log = permitted_log(&state, &principal, id).await?;
    if log.handle_code > 0 {
        return Err(ApiError::BadRequest(format!(
            "log {id} has already finished (result code {}); there is nothing to kill",
            log.handle_code
        )));
    }
    let msg = state.core.kill(log.id).await?;
    Ok(Json(serde_json::json!({ "msg": msg })))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClearBody {
    #[serde(default)]
    job_group: Option<i32>,
    #[serde(default)]
    job_id: Option<i32>,
    #[serde(rename = "type")]
    kind: i32,
}

/// `POST /api/v1/logs/clear`: deletes logs of a group (or, for administrators, of every group
/// when `jobGroup` is absent or 0), optionally of one job, by upstream's `type` 1–9.
pub(crate) async fn clear(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(body): ApiJson<ClearBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let kind = LogClearType::from_code(body.kind).ok_or_else(|| {
        ApiError::BadRequest(
            "type: must be 1–4 (older than 1/3/6/12 months), 5–8 (keep the newest 1k/10k/30k/100k) or 9 (all)"
                .to_owned(),
        )
    })?;
    let job_group = principal.group_scope(body.job_group)?;
    let job_id = body.job_id.filter(|id| *id > 0).map(JobId);
    let clear = kind.to_clear(state.clock.now(), job_group, job_id);
    let deleted = state.store.clear_logs(&clear).await?;
    Ok(Json(serde_json::json!({ "deleted": deleted })))
}
