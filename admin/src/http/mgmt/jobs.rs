//! `/api/v1/jobs`: list, add, edit, delete, start, stop, trigger once; `/api/v1/schedule/next`
//! for the form's "next 5 fire times" (upstream `JobInfoController`).

use std::str::FromStr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::dial;
use serde::Deserialize;

use super::auth::{Credential, Principal};
use super::job_days::{self, DaysForm};
use super::job_input::{JobInput, PARAM_MAX, glue_template};
use super::job_view::{JobView, permitted_job, reload};
use super::token_scope::TokenScope;
use super::{ApiJson, ApiQuery, Listed, Paging};
use super::{job_search, job_tags};
use crate::calendar::{DayRules, next_fires};
use crate::cron::{local_time_zone, parse_time_zone};
use crate::domain::{MisfireStrategy, ScheduleType};
use crate::engine::first_fire_time;
use crate::http::{ApiError, MgmtState};
use crate::store::{Job, JobFilter};
use crate::workflow::Graph;

/// Longest address list of a manual trigger (upstream's form limit).
const ADDRESS_LIST_MAX: usize = 512;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobQuery {
    job_group: Option<i32>,
    trigger_status: Option<i16>,
    job_desc: Option<String>,
    executor_handler: Option<String>,
    author: Option<String>,
    /// jobwheel: only jobs with this tag.
    tag: Option<String>,
    /// jobwheel: fuzzy search over description, handler and author, best matches first.
    q: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /api/v1/jobs`.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<JobQuery>,
) -> Result<Json<Listed<JobView>>, ApiError> {
    let page = query.paging.page()?;
    let job_group = principal.group_scope(query.job_group)?;
    let blank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    let filter = JobFilter {
        job_group,
        trigger_status: query.trigger_status.filter(|s| *s >= 0),
        job_desc: blank(query.job_desc),
        executor_handler: blank(query.executor_handler),
        author: blank(query.author),
        tag: blank(query.tag).map(|t| t.to_lowercase()),
    };
    let paged = match blank(query.q) {
        Some(q) => job_search::search(&state, &filter, &q, page).await?,
        None => state.store.page_jobs(&filter, page).await?,
    };
    let mut items: Vec<JobView> = paged.rows.into_iter().map(JobView::from).collect();
    job_tags::attach(&state, &mut items).await?;
    job_days::attach(&state, &mut items).await?;
    super::job_view::attach_alarms(&state, &mut items).await?;
    Ok(Json(Listed { total: paged.total, items }))
}

/// `GET /api/v1/jobs/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<JobView>, ApiError> {
    let row = permitted_job(&state, &principal, id).await?;
    Ok(Json(reload(&state, row.id).await?))
}

/// `?dryRun=true` on a job's create or update: check everything, save nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WriteQuery {
    #[serde(default)]
    dry_run: Option<String>,
}

impl WriteQuery {
    fn dry(&self) -> bool {
        matches!(self.dry_run.as_deref().map(str::trim), Some("true" | "1"))
    }
}

/// What a dry run answers: the form passed every check; `next` is the job's next fire time
/// (a running job; an edit of its schedule recomputes it when saved).
fn dry_answer(next: Option<i64>) -> Response {
    let msg = "dry run: the job passed every check; nothing was saved";
    Json(serde_json::json!({"dryRun": true, "valid": true, "msg": msg, "triggerNextTime": next}))
        .into_response()
}

/// `POST /api/v1/jobs` as routed: [`create`], or with `?dryRun=true` only its checks.
pub(crate) async fn create_route(
    state: State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<WriteQuery>,
    input: ApiJson<JobInput>,
) -> Result<Response, ApiError> {
    if query.dry() {
        input.0.check(&state, &principal, None).await?;
        return Ok(dry_answer(None));
    }
    Ok(create(state, principal, input).await?.into_response())
}

/// `PUT /api/v1/jobs/{id}` as routed: [`update`], or with `?dryRun=true` only its checks.
pub(crate) async fn update_route(
    state: State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiQuery(query): ApiQuery<WriteQuery>,
    input: ApiJson<JobInput>,
) -> Result<Response, ApiError> {
    if query.dry() {
        let current = permitted_job(&state, &principal, id).await?;
        if input.0.settings.glue_type != current.job.glue_type {
            return Err(ApiError::BadRequest("glueType: cannot change after the job was created".to_owned()));
        }
        input.0.check(&state, &principal, Some(current.id)).await?;
        return Ok(dry_answer((current.job.trigger_status == 1).then_some(current.job.trigger_next_time)));
    }
    Ok(update(state, principal, Path(id), input).await?.into_response())
}

/// `POST /api/v1/jobs`: a new, stopped job.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<JobInput>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let checked = input.check(&state, &principal, None).await?;
    let now = state.clock.now();
    let glue_source = input
        .glue_source
        .clone()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| glue_template(checked.glue_type).map(str::to_owned));
    let remark = input.settings.glue_remark.clone();
    let mut job = Job {
        job_group: checked.group,
        job_desc: String::new(),
        add_time: Some(now),
        update_time: Some(now),
        author: None,
        alarm_email: None,
        schedule_type: checked.schedule_type.into(),
        schedule_conf: None,
        misfire_strategy: MisfireStrategy::DoNothing.into(),
        executor_route_strategy: None,
        executor_handler: None,
        executor_param: None,
        executor_block_strategy: None,
        executor_timeout: 0,
        executor_fail_retry_count: 0,
        glue_type: checked.glue_type.into(),
        glue_source: if checked.glue_type.carries_source() { glue_source } else { None },
        glue_remark: Some(remark.unwrap_or_else(|| "GLUE code init".to_owned())),
        glue_updatetime: Some(now),
        child_jobid: None,
        trigger_status: 0,
        trigger_last_time: 0,
        trigger_next_time: 0,
    };
    input.apply(&checked, &mut job);
    let id = state.store.add_job(&job).await?;
    checked.store_beside(state.store.as_ref(), id).await?;
    Ok((StatusCode::CREATED, Json(reload(&state, id).await?)))
}

/// `PUT /api/v1/jobs/{id}`. The GLUE type is fixed at creation (upstream's form disables it);
/// GLUE sources change through `/glue`, modules through `/wasm`.
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<JobInput>,
) -> Result<Json<JobView>, ApiError> {
    let current = permitted_job(&state, &principal, id).await?;
    if input.settings.glue_type != current.job.glue_type {
        return Err(ApiError::BadRequest("glueType: cannot change after the job was created".to_owned()));
    }
    let checked = input.check(&state, &principal, Some(current.id)).await?;
    let mut job = current.job.clone();
    input.apply(&checked, &mut job);
    job.update_time = Some(state.clock.now());
    let days_changed = checked.days.as_ref().is_some_and(|days| days.changed);
    let schedule_changed = job.schedule_type != current.job.schedule_type
        || job.schedule_conf != current.job.schedule_conf
        || checked.time_zone != current.time_zone
        || days_changed;
    if job.trigger_status == 1 && schedule_changed {
        // Upstream: a running job's next fire is recomputed from now + the pre-read window.
        let rules = match &checked.days {
            Some(days) => days.rules.clone(),
            None => job_days::rules_of(&state, current.id).await?,
        };
        job.trigger_next_time = first_fire(&job, checked.time_zone.as_deref(), &rules, state.clock.now_ms())?;
    }
    state.store.update_job(current.id, &job).await?;
    checked.store_beside(state.store.as_ref(), current.id).await?;
    Ok(Json(reload(&state, current.id).await?))
}

/// `DELETE /api/v1/jobs/{id}`.
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<StatusCode, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    // A workflow keeps its nodes' job ids: deleted under it, a node would run whatever job a
    // database later gives that id (MySQL 5.7 re-derives AUTO_INCREMENT at restart; review N2),
    // so the workflow is edited first, as a calendar in use is unlinked first.
    let users: Vec<String> = state
        .store
        .list_workflows(None)
        .await?
        .into_iter()
        .filter(|w| {
            Graph::from_json(&w.workflow.graph).is_ok_and(|g| g.job_nodes().any(|n| n.job_id == job.id.0))
        })
        .map(|w| format!("{:?} (id {})", w.workflow.name, w.id.0))
        .collect();
    if !users.is_empty() {
        return Err(ApiError::Conflict(format!(
            "job {id} is a node of workflow {}; remove it from the workflow first",
            users.join(", ")
        )));
    }
    state.store.delete_job(job.id).await?;
    super::alarm_routes::forget(&state, crate::store::route_scope::JOB, i64::from(job.id.0)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/jobs/{id}/start`.
pub(crate) async fn start(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<JobView>, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    let rules = job_days::rules_of(&state, job.id).await?;
    let next = first_fire(&job.job, job.time_zone.as_deref(), &rules, state.clock.now_ms())?;
    state.store.start_job(job.id, next, state.clock.now()).await?;
    Ok(Json(reload(&state, job.id).await?))
}

/// `POST /api/v1/jobs/{id}/stop`.
pub(crate) async fn stop(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<JobView>, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    state.store.stop_job(job.id, state.clock.now()).await?;
    Ok(Json(reload(&state, job.id).await?))
}

/// The first fire time of a job being started, in its zone under its rules (the engine's rule).
fn first_fire(job: &Job, time_zone: Option<&str>, rules: &DayRules, now_ms: i64) -> Result<i64, ApiError> {
    Ok(first_fire_time(job, zone(time_zone)?, rules, now_ms)?)
}

/// A job's zone: its own, else the admin's.
pub(crate) fn zone(name: Option<&str>) -> Result<chrono_tz::Tz, ApiError> {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        Some(name) => parse_time_zone(name).map_err(|e| ApiError::BadRequest(format!("timeZone: {e}"))),
        None => Ok(local_time_zone()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TriggerBody {
    #[serde(default)]
    executor_param: Option<String>,
    #[serde(default)]
    address_list: Option<String>,
}

impl TriggerBody {
    pub(crate) fn new(executor_param: Option<String>, address_list: Option<String>) -> Self {
        Self { executor_param, address_list }
    }
}

/// `POST /api/v1/jobs/{id}/trigger`: run once now, optionally with another parameter or on
/// given executors.
pub(crate) async fn trigger(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(mut body): ApiJson<TriggerBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    // A `run` token runs what a writer set up: for `commandJobHandler`, script GLUE and
    // `httpJobHandler` the parameter is code or a request, so choosing it is changing what runs
    // (review N3). The job's own parameter, sent back unchanged, is not an override.
    if matches!(principal.credential, Credential::Token(TokenScope::Run)) {
        let own = job.job.executor_param.clone().unwrap_or_default();
        if body.executor_param.as_deref().is_some_and(|p| p != own) {
            return Err(ApiError::Forbidden(
                "executorParam: a run token triggers a job with its own parameter; choosing another needs a write token"
                    .to_owned(),
            ));
        }
        // Left out, a manual trigger runs with an empty parameter (upstream's UI sends ""); a
        // run token's runs with the job's own.
        body.executor_param = Some(own);
    }
    if body.executor_param.as_ref().is_some_and(|p| p.chars().count() > PARAM_MAX) {
        return Err(ApiError::BadRequest(format!("executorParam: at most {PARAM_MAX} characters")));
    }
    let addresses = match body.address_list.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
        None => None,
        Some(list) if list.chars().count() > ADDRESS_LIST_MAX => {
            return Err(ApiError::BadRequest(format!("addressList: at most {ADDRESS_LIST_MAX} characters")));
        }
        Some(list) => {
            let addresses: Vec<String> =
                list.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect();
            // A dial-out executor's address (`dial://app/instance`) names it as well; the
            // engine still requires every address to be one of the group's executors.
            let usable = |a: &String| {
                a.starts_with("http://") || a.starts_with("https://") || dial::dial_app(a).is_some()
            };
            if let Some(bad) = addresses.iter().find(|a| !usable(a)) {
                return Err(ApiError::BadRequest(format!(
                    "addressList: {bad:?} must start with http:// or https:// (or be a dial-out executor's dial:// address)"
                )));
            }
            Some(addresses)
        }
    };
    state.core.trigger(job.id, body.executor_param, addresses).await?;
    Ok(Json(serde_json::json!({"triggered": true})))
}

/// An engine refusal as the API answers it.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NextQuery {
    schedule_type: String,
    #[serde(default)]
    schedule_conf: String,
    #[serde(default)]
    time_zone: Option<String>,
    /// Comma-separated calendar ids.
    #[serde(default)]
    only_on: Option<String>,
    /// Comma-separated calendar ids.
    #[serde(default)]
    never_on: Option<String>,
    /// Comma-separated `HH:MM-HH:MM` windows.
    #[serde(default)]
    exclusion_windows: Option<String>,
    /// How many fire times (1–100, default 5).
    #[serde(default)]
    count: Option<String>,
}

/// A comma-separated list of calendar ids.
fn id_list(field: &str, text: Option<&str>) -> Result<Option<Vec<i64>>, ApiError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else { return Ok(None) };
    text.split(',')
        .map(|id| {
            id.trim()
                .parse::<i64>()
                .map_err(|_| ApiError::BadRequest(format!("{field}: {id:?} is not a calendar id")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `GET /api/v1/schedule/next`: the next five fire times of a schedule (the form's preview),
/// under the calendars and windows given.
pub(crate) async fn next_times(
    State(state): State<Arc<MgmtState>>,
    _principal: Principal,
    ApiQuery(query): ApiQuery<NextQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let schedule_type = ScheduleType::from_str(&query.schedule_type).map_err(|_| {
        ApiError::BadRequest("scheduleType: must be NONE, CRON, FIX_RATE or FIX_DELAY".to_owned())
    })?;
    let tz = zone(query.time_zone.as_deref())?;
    let only_on = id_list("onlyOn", query.only_on.as_deref())?;
    let never_on = id_list("neverOn", query.never_on.as_deref())?;
    let windows: Option<Vec<String>> = query
        .exclusion_windows
        .as_deref()
        .map(|w| w.split(',').map(str::trim).filter(|w| !w.is_empty()).map(str::to_owned).collect());
    let form = DaysForm {
        only_on: only_on.as_deref(),
        never_on: never_on.as_deref(),
        exclusion_windows: windows.as_deref(),
    };
    let rules = job_days::check(&state, &form, None).await?.map(|d| d.rules).unwrap_or_default();
    let now_ms = state.clock.now_ms();
    let count = match query.count.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        None => 5,
        Some(text) => text.parse::<usize>().ok().filter(|c| (1..=100).contains(c)).ok_or_else(|| {
            ApiError::BadRequest(format!("count: {text:?} is not a whole number from 1 to 100"))
        })?,
    };
    let times = next_fires(schedule_type, query.schedule_conf.trim(), tz, &rules, now_ms, count)
        .map_err(|e| ApiError::BadRequest(format!("scheduleConf: {e}")))?;
    Ok(Json(serde_json::json!({"times": times})))
}
