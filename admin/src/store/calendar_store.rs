//! The store's calendar area: named calendars and what jobs hold of them.

use async_trait::async_trait;

use super::{CalendarId, CalendarRow, DayRefs, JobDayRow, JobId, NewCalendar, StoreError, WorkflowId};

/// Calendars (`jobwheel_calendar`), job calendar references (`jobwheel_job_calendar`) and
/// exclusion windows (`jobwheel_job_window`).
#[async_trait]
pub trait CalendarStore: Send + Sync {
    /// Inserts a calendar; a duplicate name is a [`StoreError::Database`] unique violation.
    async fn add_calendar(&self, calendar: &NewCalendar) -> Result<CalendarId, StoreError>;
    /// Rewrites a calendar; false if it does not exist.
    async fn update_calendar(&self, id: CalendarId, calendar: &NewCalendar) -> Result<bool, StoreError>;
    /// Deletes a calendar that no job or workflow refers to; false if it is absent or still
    /// referred to.
    async fn delete_calendar(&self, id: CalendarId) -> Result<bool, StoreError>;
    /// One calendar.
    async fn load_calendar(&self, id: CalendarId) -> Result<Option<CalendarRow>, StoreError>;
    /// One calendar by exact name.
    async fn find_calendar(&self, name: &str) -> Result<Option<CalendarRow>, StoreError>;
    /// Every calendar, by name.
    async fn list_calendars(&self) -> Result<Vec<CalendarRow>, StoreError>;
    /// The workflows referring to a calendar, by id.
    async fn calendar_workflows(&self, id: CalendarId) -> Result<Vec<WorkflowId>, StoreError>;
    /// The jobs referring to a calendar, by id.
    async fn calendar_jobs(&self, id: CalendarId) -> Result<Vec<JobId>, StoreError>;
    /// The day rules of `jobs` — each calendar reference with the calendar's days, and each
    /// job's windows — ordered by job; what the scheduler and the job reads use.
    async fn job_days(&self, jobs: &[JobId]) -> Result<Vec<JobDayRow>, StoreError>;
    /// Replaces a job's calendar references and windows (one transaction); nothing is stored
    /// for a job that does not exist.
    async fn set_job_days(&self, job: JobId, days: &DayRefs) -> Result<(), StoreError>;
}
