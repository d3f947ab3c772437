//! A job's calendars and exclusion windows through the job API: the form's `onlyOn`,
//! `neverOn` (calendar ids) and `exclusionWindows` (`HH:MM-HH:MM`), their checks, the rules
//! the next fire time is computed under, and what a job view shows of them.
//!
//! Each of the three fields left out of a form keeps what the job has, like `tags`, so a client
//! that does not know calendars does not clear them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::job_view::JobView;
use crate::calendar::{
    CalendarDays, DayRules, DaySet, Window, join_windows, parse_stored_windows, parse_windows, rules_by_job,
};
use crate::http::{ApiError, MgmtState};
use crate::store::{CalendarId, DayRefs, JobId, day_mode};

/// Calendars one job may refer to (both kinds together).
pub(crate) const MAX_JOB_CALENDARS: usize = 16;

/// The day fields of a job form; `None` keeps the job's.
#[derive(Debug, Clone, Default)]
pub(crate) struct DaysForm<'a> {
    pub(crate) only_on: Option<&'a [i64]>,
    pub(crate) never_on: Option<&'a [i64]>,
    pub(crate) exclusion_windows: Option<&'a [String]>,
}

/// What a checked form gives: the rows to store and the rules they make.
pub(crate) struct CheckedDays {
    pub(crate) days: DayRefs,
    pub(crate) rules: DayRules,
    /// Whether `days` differ from what the job has stored (always true for a new job).
    pub(crate) changed: bool,
}

/// Checks the form's day fields against existing calendars and merges them with what `job`
/// has. `None` when the form names none of them (nothing to store).
pub(crate) async fn check(
    state: &MgmtState,
    form: &DaysForm<'_>,
    job: Option<JobId>,
) -> Result<Option<CheckedDays>, ApiError> {
    if form.only_on.is_none() && form.never_on.is_none() && form.exclusion_windows.is_none() {
        return Ok(None);
    }
    let current = match job {
        Some(id) => stored(state, id).await?,
        None => DayRefs::default(),
    };
    let ids = |given: Option<&[i64]>, kept: &[CalendarId]| -> Vec<CalendarId> {
        let mut out: Vec<CalendarId> =
            given.map_or_else(|| kept.to_vec(), |g| g.iter().copied().map(CalendarId).collect());
        out.sort();
        out.dedup();
        out
    };
    let only_on = ids(form.only_on, &current.only_on);
    let never_on = ids(form.never_on, &current.never_on);
    if only_on.len() + never_on.len() > MAX_JOB_CALENDARS {
        return Err(ApiError::BadRequest(format!("onlyOn, neverOn: at most {MAX_JOB_CALENDARS} calendars")));
    }
    if let Some(both) = only_on.iter().find(|id| never_on.contains(id)) {
        return Err(ApiError::BadRequest(format!("neverOn: calendar {both} is also in onlyOn")));
    }
    let windows = match form.exclusion_windows {
        Some(texts) => parse_windows(texts).map_err(|e| ApiError::BadRequest(e.to_string()))?,
        None => parse_stored_windows(&current.windows).unwrap_or_default(),
    };
    let compiled = compile(state, only_on.iter().chain(&never_on), |id| {
        let field = if only_on.contains(&id) { "onlyOn" } else { "neverOn" };
        ApiError::BadRequest(format!("{field}: calendar {id} does not exist"))
    })
    .await?;
    let pick =
        |ids: &[CalendarId]| -> Vec<Arc<DaySet>> { ids.iter().map(|id| compiled[id].clone()).collect() };
    let rules = DayRules::new(pick(&only_on), pick(&never_on), windows.clone());
    let days = DayRefs { only_on, never_on, windows: join_windows(&windows) };
    let changed = job.is_none() || days != current;
    Ok(Some(CheckedDays { days, rules, changed }))
}

/// Loads and compiles calendars; `missing` builds the error for an id that does not exist.
pub(crate) async fn compile<'a>(
    state: &MgmtState,
    ids: impl Iterator<Item = &'a CalendarId>,
    missing: impl Fn(CalendarId) -> ApiError,
) -> Result<HashMap<CalendarId, Arc<DaySet>>, ApiError> {
    let mut compiled = HashMap::new();
    for id in ids {
        let row = state.store.load_calendar(*id).await?.ok_or_else(|| missing(*id))?;
        let set = CalendarDays::compile_stored(&row.calendar.days)
            .map_err(|e| ApiError::internal(anyhow::anyhow!("calendar {id}: {e}")))?;
        compiled.insert(*id, Arc::new(set));
    }
    Ok(compiled)
}

/// What `jobs` have stored, by job.
async fn stored_of(state: &MgmtState, jobs: &[JobId]) -> Result<BTreeMap<i32, DayRefs>, ApiError> {
    let mut by_job: BTreeMap<i32, DayRefs> = BTreeMap::new();
    for row in state.store.job_days(jobs).await? {
        let days = by_job.entry(row.job_id.0).or_default();
        match row.mode.as_str() {
            day_mode::ONLY => days.only_on.push(CalendarId(row.calendar_id.unwrap_or_default())),
            day_mode::NEVER => days.never_on.push(CalendarId(row.calendar_id.unwrap_or_default())),
            _ => days.windows = row.value,
        }
    }
    // Sorted like a checked form's, so the two compare equal when nothing changed.
    for days in by_job.values_mut() {
        days.only_on.sort();
        days.never_on.sort();
    }
    Ok(by_job)
}

/// What one job has stored.
async fn stored(state: &MgmtState, job: JobId) -> Result<DayRefs, ApiError> {
    Ok(stored_of(state, &[job]).await?.remove(&job.0).unwrap_or_default())
}

/// The rules a stored job's next fire time is computed under.
pub(crate) async fn rules_of(state: &MgmtState, job: JobId) -> Result<DayRules, ApiError> {
    Ok(rules_by_job(&state.store.job_days(&[job]).await?).remove(&job).unwrap_or_default())
}

/// Fills in the calendars and windows of `views` (one query for all of them).
pub(crate) async fn attach(state: &MgmtState, views: &mut [JobView]) -> Result<(), ApiError> {
    let ids: Vec<JobId> = views.iter().map(|v| JobId(v.id)).collect();
    let mut by_job = stored_of(state, &ids).await?;
    for view in views {
        let days = by_job.remove(&view.id).unwrap_or_default();
        view.only_on = days.only_on.iter().map(|c| c.0).collect();
        view.never_on = days.never_on.iter().map(|c| c.0).collect();
        let windows = parse_stored_windows(&days.windows).unwrap_or_default();
        view.exclusion_windows = windows.iter().map(Window::to_string).collect();
    }
    Ok(())
}
