//! Calendars (`jobwheel_calendar`) and what jobs and workflows hold of them: calendar
//! references and exclusion windows.

use super::{CalendarId, JobId};

/// The values of `jobwheel_job_calendar.mode`, and the mode of a [`JobDayRow`] carrying windows.
pub mod day_mode {
    /// The job fires only on the calendar's days.
    pub const ONLY: &str = "ONLY";
    /// The job never fires on the calendar's days.
    pub const NEVER: &str = "NEVER";
    /// Not a stored mode: the row carries the job's exclusion windows.
    pub const WINDOWS: &str = "WINDOWS";
}

/// A calendar without its id.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NewCalendar {
    /// Unique name; jobs, exports and imports refer to the calendar by it.
    pub name: String,
    /// Free text.
    pub description: String,
    /// The days as JSON (`crate::calendar::CalendarDays`, normalized by the caller).
    pub days: String,
    /// Last change, epoch ms.
    pub update_ms: i64,
}

/// A stored calendar.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CalendarRow {
    /// Primary key.
    pub id: CalendarId,
    /// The columns.
    #[sqlx(flatten)]
    pub calendar: NewCalendar,
}

/// One of a job's day rules as the scheduler reads them: a calendar reference with the
/// calendar's days, or (mode [`day_mode::WINDOWS`]) the job's windows.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct JobDayRow {
    /// The job.
    pub job_id: JobId,
    /// The calendar; `None` for windows.
    pub calendar_id: Option<i64>,
    /// [`day_mode`].
    pub mode: String,
    /// The calendar's days (JSON), or the windows joined by commas.
    pub value: String,
}

/// What a job or a workflow is given: its calendar references and its windows (stored form:
/// `jobwheel_job_calendar` and `jobwheel_job_window`, `jobwheel_workflow_calendar` and
/// `jobwheel_workflow_window`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayRefs {
    /// "Only on" calendars.
    pub only_on: Vec<CalendarId>,
    /// "Never on" calendars.
    pub never_on: Vec<CalendarId>,
    /// Exclusion windows joined by commas; empty for none.
    pub windows: String,
}

impl DayRefs {
    /// Each calendar reference with its stored mode ([`day_mode::ONLY`], then
    /// [`day_mode::NEVER`]).
    pub fn refs(&self) -> impl Iterator<Item = (&'static str, CalendarId)> + '_ {
        let only = self.only_on.iter().map(|c| (day_mode::ONLY, *c));
        only.chain(self.never_on.iter().map(|c| (day_mode::NEVER, *c)))
    }
}
