//! Calendars (`jobwheel_calendar`), job calendar references (`jobwheel_job_calendar`) and
//! exclusion windows (`jobwheel_job_window`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::{
    CalendarId, CalendarRow, CalendarStore, JobDayRow, JobDays, JobId, NewCalendar, StoreError, day_mode,
};

/// `IN (…)` lists are cut into chunks of this many ids (two lists per statement).
const CHUNK: usize = 400;

macro_rules! calendar_columns {
    () => {
        "SELECT id, name, description, days, update_ms FROM jobwheel_calendar"
    };
}
static LOAD: Sql = Sql::new(concat!(calendar_columns!(), " WHERE id = ?"));
static FIND: Sql = Sql::new(concat!(calendar_columns!(), " WHERE name = ?"));
static LIST: Sql = Sql::new(concat!(calendar_columns!(), " ORDER BY name"));
static INSERT: Sql = Sql::new(
    "INSERT INTO jobwheel_calendar (name, description, days, update_ms) VALUES (?, ?, ?, ?) RETURNING id",
);
static UPDATE: Sql =
    Sql::new("UPDATE jobwheel_calendar SET name = ?, description = ?, days = ?, update_ms = ? WHERE id = ?");
/// A derived table, because MySQL refuses a subquery on the table being deleted from.
static DELETE: Sql = Sql::new(
    "DELETE FROM jobwheel_calendar WHERE id = ? AND NOT EXISTS \
    (SELECT 1 FROM (SELECT calendar_id FROM jobwheel_job_calendar WHERE calendar_id = ?) r)",
);
static JOBS_OF: Sql =
    Sql::new("SELECT job_id FROM jobwheel_job_calendar WHERE calendar_id = ? ORDER BY job_id");
static CLEAR_REFS: Sql = Sql::new("DELETE FROM jobwheel_job_calendar WHERE job_id = ?");
static CLEAR_WINDOWS: Sql = Sql::new("DELETE FROM jobwheel_job_window WHERE job_id = ?");
/// Only for an existing job and calendar (the `SELECT` yields no row otherwise).
static ADD_REF: Sql = Sql::new(
    "INSERT INTO jobwheel_job_calendar (job_id, calendar_id, mode) \
    SELECT j.id, c.id, ? FROM xxl_job_info j, jobwheel_calendar c WHERE j.id = ? AND c.id = ?",
);
static ADD_WINDOWS: Sql =
    Sql::new("INSERT INTO jobwheel_job_window (job_id, windows) SELECT id, ? FROM xxl_job_info WHERE id = ?");

#[async_trait]
impl CalendarStore for SqlStore {
    async fn add_calendar(&self, c: &NewCalendar) -> Result<CalendarId, StoreError> {
        let args = args![&c.name, &c.description, &c.days, c.update_ms];
        Ok(CalendarId(self.ex().insert_id(&INSERT, &args).await?))
    }

    async fn update_calendar(&self, id: CalendarId, c: &NewCalendar) -> Result<bool, StoreError> {
        let args = args![&c.name, &c.description, &c.days, c.update_ms, id];
        Ok(self.ex().execute(&UPDATE, &args).await? > 0)
    }

    async fn delete_calendar(&self, id: CalendarId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&DELETE, &args![id, id]).await? > 0)
    }

    async fn load_calendar(&self, id: CalendarId) -> Result<Option<CalendarRow>, StoreError> {
        self.ex().fetch_optional(&LOAD, &args![id]).await
    }

    async fn find_calendar(&self, name: &str) -> Result<Option<CalendarRow>, StoreError> {
        self.ex().fetch_optional(&FIND, &args![name]).await
    }

    async fn list_calendars(&self) -> Result<Vec<CalendarRow>, StoreError> {
        self.ex().fetch_all(&LIST, &[]).await
    }

    async fn calendar_jobs(&self, id: CalendarId) -> Result<Vec<JobId>, StoreError> {
        self.ex().fetch_column(&JOBS_OF, &args![id]).await
    }

    async fn job_days(&self, jobs: &[JobId]) -> Result<Vec<JobDayRow>, StoreError> {
        let mut rows = Vec::new();
        for chunk in jobs.chunks(CHUNK) {
            let mut q = QueryBuf::new(
                "SELECT r.job_id, I64(r.calendar_id) AS calendar_id, r.mode, c.days AS value \
                FROM jobwheel_job_calendar r JOIN jobwheel_calendar c ON c.id = r.calendar_id WHERE r.job_id IN (",
            );
            q.bind_list(chunk.iter().copied())
                // 'WINDOWS' is day_mode::WINDOWS, spelled out so every backend types it as text.
                .push(") UNION ALL SELECT w.job_id, NULL, 'WINDOWS', w.windows FROM jobwheel_job_window w WHERE w.job_id IN (")
                .bind_list(chunk.iter().copied())
                .push(") ORDER BY job_id");
            rows.extend(self.ex().fetch_all::<JobDayRow>(&q, q.args()).await?);
        }
        Ok(rows)
    }

    async fn set_job_days(&self, job: JobId, days: &JobDays) -> Result<(), StoreError> {
        let mut tx = self.db.begin().await?;
        tx.ex().execute(&CLEAR_REFS, &args![job]).await?;
        tx.ex().execute(&CLEAR_WINDOWS, &args![job]).await?;
        let refs = days
            .only_on
            .iter()
            .map(|c| (day_mode::ONLY, c))
            .chain(days.never_on.iter().map(|c| (day_mode::NEVER, c)));
        for (mode, calendar) in refs {
            tx.ex().execute(&ADD_REF, &args![mode, job, *calendar]).await?;
        }
        if !days.windows.is_empty() {
            tx.ex().execute(&ADD_WINDOWS, &args![&days.windows, job]).await?;
        }
        tx.commit().await
    }
}
