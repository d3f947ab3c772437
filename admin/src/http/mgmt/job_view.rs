//! A job as the management API shows it ([`JobView`]: its settings and what the admin keeps
//! about it) and the access rule every job endpoint starts with ([`permitted_job`]); the job
//! handlers (`jobs.rs`), its GLUE, Wasm versions, grants, export and xxl-job 3.5's OpenAPI use
//! both, so they live apart from any one of them.

use serde::Serialize;

use super::alarm_routes::{self, AlarmView};
use super::auth::Principal;
use super::job_retry::RetryForm;
use super::job_settings::JobSettings;
use super::{job_days, job_tags, ms};
use crate::domain::{DeliveryMode, Priority};
use crate::http::{ApiError, MgmtState};
use crate::store::{JobId, JobRow, route_scope};

/// A job as the API shows it: its settings and what the admin keeps about it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobView {
    pub(crate) id: i32,
    job_group: i32,
    #[serde(flatten)]
    pub(crate) settings: JobSettings,
    glue_updatetime: Option<i64>,
    child_job_id: Option<String>,
    /// jobwheel: the job's tags (lower-case).
    pub(crate) tags: Vec<String>,
    /// jobwheel: `HIGH`, `NORMAL` or `LOW` (on single-job reads; `NORMAL` in the list).
    priority: Priority,
    /// jobwheel: `AT_MOST_ONCE` or `EXACTLY_ONCE` (on single-job reads; `AT_MOST_ONCE` in the
    /// list).
    delivery_mode: DeliveryMode,
    /// jobwheel: ids of the calendars the job fires only on.
    pub(crate) only_on: Vec<i64>,
    /// jobwheel: ids of the calendars the job never fires on.
    pub(crate) never_on: Vec<i64>,
    /// jobwheel: daily windows without fires, `HH:MM-HH:MM`.
    pub(crate) exclusion_windows: Vec<String>,
    /// jobwheel: `alarmChannels` and `doneWithin` (docs/alarms.md).
    #[serde(flatten)]
    pub(crate) alarms: AlarmView,
    trigger_status: i16,
    trigger_last_time: i64,
    trigger_next_time: i64,
    add_time: Option<i64>,
    update_time: Option<i64>,
}

impl From<JobRow> for JobView {
    fn from(row: JobRow) -> Self {
        let settings = JobSettings::of(&row);
        let j = row.job;
        Self {
            id: row.id.0,
            job_group: j.job_group.0,
            settings,
            glue_updatetime: ms(j.glue_updatetime),
            child_job_id: j.child_jobid,
            tags: Vec::new(),
            priority: row.priority,
            delivery_mode: row.delivery,
            only_on: Vec::new(),
            never_on: Vec::new(),
            exclusion_windows: Vec::new(),
            alarms: AlarmView::default(),
            trigger_status: j.trigger_status,
            // The scheduler parks FIX_DELAY jobs at i64::MAX while a run is out; show "none".
            trigger_last_time: j.trigger_last_time,
            trigger_next_time: if j.trigger_next_time == i64::MAX { 0 } else { j.trigger_next_time },
            add_time: ms(j.add_time),
            update_time: ms(j.update_time),
        }
    }
}

/// The job `id`, if the caller may manage its group (403 otherwise, 404 if absent).
pub(crate) async fn permitted_job(
    state: &MgmtState,
    principal: &Principal,
    id: i32,
) -> Result<JobRow, ApiError> {
    let job = state
        .store
        .load_job(JobId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job {id} not found")))?;
    principal.require_group(job.job.job_group)?;
    Ok(job)
}

/// The job `id` as `GET /api/v1/jobs/{id}` shows it (with its backoff, tags and calendars).
pub(crate) async fn reload(state: &MgmtState, id: JobId) -> Result<JobView, ApiError> {
    let row =
        state.store.load_job(id).await?.ok_or_else(|| ApiError::NotFound(format!("job {id} not found")))?;
    let retry = RetryForm::from_stored(state.store.job_retry_backoff(id).await?);
    let mut view = [JobView::from(row)];
    view[0].settings.retry = retry;
    job_tags::attach(state, &mut view).await?;
    job_days::attach(state, &mut view).await?;
    attach_alarms(state, &mut view).await?;
    let [view] = view;
    Ok(view)
}

/// Fills the alarm fields of `views` (one read).
pub(crate) async fn attach_alarms(state: &MgmtState, views: &mut [JobView]) -> Result<(), ApiError> {
    let ids: Vec<i64> = views.iter().map(|v| i64::from(v.id)).collect();
    for (view, alarms) in views.iter_mut().zip(alarm_routes::views(state, route_scope::JOB, &ids).await?) {
        view.alarms = alarms;
    }
    Ok(())
}

/// A job as `GET /api/v1/jobs/{id}` shows it, for the audit log.
pub(crate) struct JobSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for JobSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        match reload(state, JobId(id)).await {
            Ok(view) => Ok(Some(super::audit::to_json(view)?)),
            Err(ApiError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
