//! `/api/v1/calendars`: named calendars (jobwheel extension; `docs/scheduling.md`). Every
//! signed-in user reads them (the job form offers them); administrators create, change, import
//! and delete them, since one calendar serves jobs of every group.
//!
//! Changing a calendar's days moves the next fire time of every running job that refers to it
//! (as upstream does when a job's schedule is edited), so no job fires on a day its calendar
//! no longer allows.

use std::sync::Arc;

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::{ApiJson, ApiQuery};
use crate::calendar::{CalendarDays, MAX_ICS_BYTES, read_ics, rules_by_job};
use crate::engine::{FIX_DELAY_PARKED, first_fire_time};
use crate::http::{ApiError, MgmtState};
use crate::store::{CalendarId, CalendarRow, NewCalendar, TriggerTimeUpdate};

/// Characters of a calendar's name (`varchar(64)`) and description (`varchar(255)`).
const NAME_MAX: usize = 64;
const DESCRIPTION_MAX: usize = 255;

/// A calendar as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CalendarView {
    pub(crate) id: i64,
    name: String,
    description: String,
    #[serde(flatten)]
    days: CalendarDays,
    update_time: i64,
}

impl CalendarView {
    pub(crate) fn of(row: CalendarRow) -> Result<Self, ApiError> {
        let days = serde_json::from_str(&row.calendar.days).map_err(|e| {
            ApiError::internal(anyhow::anyhow!("calendar {} is stored unreadable: {e}", row.id))
        })?;
        Ok(Self {
            id: row.id.0,
            name: row.calendar.name,
            description: row.calendar.description,
            days,
            update_time: row.calendar.update_ms,
        })
    }
}

/// The calendar form.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CalendarInput {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(flatten)]
    pub(crate) days: CalendarDays,
}

/// The stored row of a form, after its checks.
fn checked(name: &str, description: &str, days: &CalendarDays, now_ms: i64) -> Result<NewCalendar, ApiError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::BadRequest("name: required".to_owned()));
    }
    if name.chars().count() > NAME_MAX {
        return Err(ApiError::BadRequest(format!("name: at most {NAME_MAX} characters")));
    }
    if description.chars().count() > DESCRIPTION_MAX {
        return Err(ApiError::BadRequest(format!("description: at most {DESCRIPTION_MAX} characters")));
    }
    if days.is_empty() {
        return Err(ApiError::BadRequest(
            "a calendar needs at least one day: weekdays, yearly, dates or ranges".to_owned(),
        ));
    }
    let (normalized, _) = days.normalize().map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let days = serde_json::to_string(&normalized).map_err(ApiError::internal)?;
    Ok(NewCalendar {
        name: name.to_owned(),
        description: description.trim().to_owned(),
        days,
        update_ms: now_ms,
    })
}

async fn name_taken(state: &MgmtState, name: &str, except: Option<CalendarId>) -> Result<(), ApiError> {
    match state.store.find_calendar(name).await? {
        Some(other) if Some(other.id) != except => {
            Err(ApiError::Conflict(format!("name: a calendar named {name:?} exists already")))
        }
        _ => Ok(()),
    }
}

async fn load(state: &MgmtState, id: i64) -> Result<CalendarRow, ApiError> {
    state
        .store
        .load_calendar(CalendarId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("calendar {id} not found")))
}

/// `GET /api/v1/calendars`: every calendar, by name.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    _principal: Principal,
) -> Result<Json<Vec<CalendarView>>, ApiError> {
    let rows = state.store.list_calendars().await?;
    Ok(Json(rows.into_iter().map(CalendarView::of).collect::<Result<_, _>>()?))
}

/// `GET /api/v1/calendars/{id}`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    _principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<CalendarView>, ApiError> {
    Ok(Json(CalendarView::of(load(&state, id).await?)?))
}

/// `POST /api/v1/calendars` (administrators).
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<CalendarInput>,
) -> Result<(StatusCode, Json<CalendarView>), ApiError> {
    principal.require_admin()?;
    let calendar = checked(&input.name, &input.description, &input.days, state.clock.now_ms())?;
    name_taken(&state, &calendar.name, None).await?;
    let id = state.store.add_calendar(&calendar).await?;
    Ok((StatusCode::CREATED, Json(CalendarView::of(load(&state, id.0).await?)?)))
}

/// `PUT /api/v1/calendars/{id}` (administrators): new name, description and days; the running
/// jobs that refer to it are rescheduled.
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    ApiJson(input): ApiJson<CalendarInput>,
) -> Result<Json<CalendarView>, ApiError> {
    principal.require_admin()?;
    let current = load(&state, id).await?;
    let calendar = checked(&input.name, &input.description, &input.days, state.clock.now_ms())?;
    name_taken(&state, &calendar.name, Some(current.id)).await?;
    state.store.update_calendar(current.id, &calendar).await?;
    reschedule_users(&state, current.id).await?;
    Ok(Json(CalendarView::of(load(&state, id).await?)?))
}

/// `DELETE /api/v1/calendars/{id}` (administrators); refused while a job refers to it.
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    principal.require_admin()?;
    let current = load(&state, id).await?;
    // The store's delete is guarded against both; these reads only name who holds it.
    let mut workflows = Vec::new();
    for id in state.store.calendar_workflows(current.id).await? {
        if let Some(w) = state.store.load_workflow(id).await? {
            workflows.push(format!("{:?}", w.workflow.name));
        }
    }
    if !workflows.is_empty() {
        return Err(ApiError::Conflict(format!(
            "calendar {:?} is used by workflow(s) {}; remove it from them first",
            current.calendar.name,
            workflows.join(", ")
        )));
    }
    let jobs = state.store.calendar_jobs(current.id).await?;
    if !jobs.is_empty() || !state.store.delete_calendar(current.id).await? {
        let ids: Vec<String> = jobs.iter().map(ToString::to_string).collect();
        return Err(ApiError::Conflict(format!(
            "calendar {:?} is used by job(s) {}; remove it from them first",
            current.calendar.name,
            ids.join(", ")
        )));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
pub(crate) struct ImportQuery {
    name: String,
    #[serde(default)]
    description: Option<String>,
}

/// What an `.ics` import did.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImportReply {
    /// The calendar's id (also in `calendar`; the audit log reads it here).
    id: i64,
    calendar: CalendarView,
    /// True when the calendar was created, false when an existing one's days were replaced.
    created: bool,
    imported: usize,
    skipped: Vec<String>,
}

/// `POST /api/v1/calendars/import?name=&description=` (administrators), the body an iCalendar
/// file: creates the calendar `name` from its events, or replaces that calendar's days.
pub(crate) async fn import(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ImportQuery>,
    body: Body,
) -> Result<Json<ImportReply>, ApiError> {
    principal.require_admin()?;
    let bytes = axum::body::to_bytes(body, MAX_ICS_BYTES).await.map_err(|_| {
        ApiError::PayloadTooLarge(format!("the .ics file is larger than {} MiB", MAX_ICS_BYTES >> 20))
    })?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ApiError::BadRequest("the .ics file is not UTF-8 text".to_owned()))?;
    let ics = read_ics(text).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if ics.imported == 0 {
        return Err(ApiError::BadRequest(format!(
            "the file has no event that could be imported ({} left out: {})",
            ics.skipped.len(),
            ics.skipped.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
        )));
    }
    let existing = state.store.find_calendar(query.name.trim()).await?;
    let description = query
        .description
        .or_else(|| existing.as_ref().map(|c| c.calendar.description.clone()))
        .or(ics.name.clone())
        .unwrap_or_default();
    let calendar = checked(&query.name, &description, &ics.days, state.clock.now_ms())?;
    let id = match &existing {
        Some(row) => {
            state.store.update_calendar(row.id, &calendar).await?;
            reschedule_users(&state, row.id).await?;
            row.id
        }
        None => state.store.add_calendar(&calendar).await?,
    };
    let calendar = CalendarView::of(load(&state, id.0).await?)?;
    let reply = ImportReply {
        id: id.0,
        calendar,
        created: existing.is_none(),
        imported: ics.imported,
        skipped: ics.skipped,
    };
    Ok(Json(reply))
}

/// Moves the next fire time of every running job referring to `calendar` to the first time its
/// rules allow from now + the pre-read window; a job they no longer allow at all is stopped.
async fn reschedule_users(state: &MgmtState, calendar: CalendarId) -> Result<(), ApiError> {
    let now_ms = state.clock.now_ms();
    let users = state.store.calendar_jobs(calendar).await?;
    // One read of the jobs and one of their rules, however many jobs use the calendar.
    let mut rules = rules_by_job(&state.store.job_days(&users).await?);
    let mut updates = Vec::new();
    for job in state.store.load_jobs(&users).await? {
        let id = job.id;
        // A FIX_DELAY run is out; its completion computes the next time under the new days.
        if job.job.trigger_status != 1 || job.job.trigger_next_time == FIX_DELAY_PARKED {
            continue;
        }
        let rules = rules.remove(&id).unwrap_or_default();
        let zone = super::jobs::zone(job.time_zone.as_deref())?;
        let update = match first_fire_time(&job.job, zone, &rules, now_ms) {
            Ok(next) => TriggerTimeUpdate {
                job_id: id,
                trigger_last_time: job.job.trigger_last_time,
                trigger_next_time: next,
                stop: false,
            },
            Err(error) => {
                tracing::warn!(job_id = id.0, %error, "calendar change leaves the job no fire time; stopped");
                TriggerTimeUpdate { job_id: id, trigger_last_time: 0, trigger_next_time: 0, stop: true }
            }
        };
        updates.push(update);
    }
    if !updates.is_empty() {
        // Through the schedule lock, so the update never interleaves with a pre-read.
        let mut tx = state.store.begin_schedule().await?;
        tx.update_trigger_times(&updates).await?;
        tx.commit().await?;
    }
    Ok(())
}

/// A calendar as the API shows it, for the audit log.
pub(crate) struct CalendarSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for CalendarSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        match state.store.load_calendar(crate::store::CalendarId(id)).await? {
            Some(row) => Ok(Some(super::audit::to_json(CalendarView::of(row)?)?)),
            None => Ok(None),
        }
    }
}
