//! Calendars (`jobwheel_calendar`) and what jobs and workflows hold of them: calendar
//! references (`jobwheel_job_calendar`, `jobwheel_workflow_calendar`) and exclusion windows
//! (`jobwheel_job_window`, `jobwheel_workflow_window`). A workflow's are written and read with
//! its row (`sql/workflows.rs` calls [`set_workflow_days`] in its transaction and fills rows
//! through [`SqlStore::with_days`]).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::{
    CalendarId, CalendarRow, CalendarStore, DayRefs, JobDayRow, JobId, NewCalendar, StoreError, WorkflowId,
    WorkflowRow, day_mode,
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
    (SELECT 1 FROM (SELECT calendar_id FROM jobwheel_job_calendar WHERE calendar_id = ?) r) AND NOT EXISTS \
    (SELECT 1 FROM (SELECT calendar_id FROM jobwheel_workflow_calendar WHERE calendar_id = ?) w)",
);
static WORKFLOWS_OF: Sql =
    Sql::new("SELECT workflow_id FROM jobwheel_workflow_calendar WHERE calendar_id = ? ORDER BY workflow_id");
static CLEAR_WORKFLOW_REFS: Sql = Sql::new("DELETE FROM jobwheel_workflow_calendar WHERE workflow_id = ?");
static CLEAR_WORKFLOW_WINDOWS: Sql = Sql::new("DELETE FROM jobwheel_workflow_window WHERE workflow_id = ?");
/// Only for an existing calendar (the `SELECT` yields no row otherwise).
static ADD_WORKFLOW_REF: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow_calendar (workflow_id, calendar_id, mode) \
    SELECT ?, c.id, ? FROM jobwheel_calendar c WHERE c.id = ?",
);
static ADD_WORKFLOW_WINDOWS: Sql =
    Sql::new("INSERT INTO jobwheel_workflow_window (workflow_id, windows) VALUES (?, ?)");
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
        Ok(self.ex().execute(&DELETE, &args![id, id, id]).await? > 0)
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

    async fn calendar_workflows(&self, id: CalendarId) -> Result<Vec<WorkflowId>, StoreError> {
        let ids: Vec<i64> = self.ex().fetch_column(&WORKFLOWS_OF, &args![id]).await?;
        Ok(ids.into_iter().map(WorkflowId).collect())
    }

    async fn set_job_days(&self, job: JobId, days: &DayRefs) -> Result<(), StoreError> {
        let mut tx = self.db.begin().await?;
        tx.ex().execute(&CLEAR_REFS, &args![job]).await?;
        tx.ex().execute(&CLEAR_WINDOWS, &args![job]).await?;
        for (mode, calendar) in days.refs() {
            tx.ex().execute(&ADD_REF, &args![mode, job, calendar]).await?;
        }
        if !days.windows.is_empty() {
            tx.ex().execute(&ADD_WINDOWS, &args![&days.windows, job]).await?;
        }
        tx.commit().await
    }
}

/// Replaces workflow `id`'s calendar references and windows in `tx` (none: clears them).
pub(super) async fn set_workflow_days(tx: &mut Tx, id: WorkflowId, days: &DayRefs) -> Result<(), StoreError> {
    tx.ex().execute(&CLEAR_WORKFLOW_REFS, &args![id]).await?;
    tx.ex().execute(&CLEAR_WORKFLOW_WINDOWS, &args![id]).await?;
    for (mode, calendar) in days.refs() {
        tx.ex().execute(&ADD_WORKFLOW_REF, &args![id, mode, calendar]).await?;
    }
    if !days.windows.is_empty() {
        tx.ex().execute(&ADD_WORKFLOW_WINDOWS, &args![id, &days.windows]).await?;
    }
    Ok(())
}

impl SqlStore {
    /// `rows` with their calendar references and windows: two reads per chunk of them.
    pub(super) async fn with_days(&self, mut rows: Vec<WorkflowRow>) -> Result<Vec<WorkflowRow>, StoreError> {
        for chunk in rows.chunks_mut(CHUNK) {
            let ids = chunk.iter().map(|r| r.id);
            let mut refs = QueryBuf::new(
                "SELECT I64(workflow_id), I64(calendar_id), mode FROM jobwheel_workflow_calendar WHERE workflow_id IN (",
            );
            refs.bind_list(ids.clone()).push(") ORDER BY workflow_id, calendar_id");
            let mut windows = QueryBuf::new(
                "SELECT I64(workflow_id), windows FROM jobwheel_workflow_window WHERE workflow_id IN (",
            );
            windows.bind_list(ids).push(")");
            let refs: Vec<(i64, i64, String)> = self.ex().fetch_all(&refs, refs.args()).await?;
            let windows: Vec<(i64, String)> = self.ex().fetch_all(&windows, windows.args()).await?;
            for row in chunk.iter_mut() {
                let days = &mut row.workflow.days;
                for (_, calendar, mode) in refs.iter().filter(|(w, ..)| *w == row.id.0) {
                    let list = if mode == day_mode::ONLY { &mut days.only_on } else { &mut days.never_on };
                    list.push(CalendarId(*calendar));
                }
                if let Some((_, text)) = windows.iter().find(|(w, _)| *w == row.id.0) {
                    days.windows.clone_from(text);
                }
            }
        }
        Ok(rows)
    }
}
