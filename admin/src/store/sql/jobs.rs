//! Jobs (`xxl_job_info`), their time zones and their GLUE history (`xxl_job_logglue`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::store::db::{Arg, QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::support::like;
use crate::store::time::{opt_secs, secs};
use crate::store::{
    GlueHistoryRow, HISTORY_KEPT_PER_JOB, Job, JobFilter, JobFollowUp, JobId, JobRow, JobStore,
    NewGlueHistory, Page, Paged, RetryBackoff, StoreError,
};

/// The columns a job write sets, in [`job_values`] order (`add_time` is the insert's alone).
macro_rules! job_write_columns {
    () => {
        "job_group, JOB_NAME, update_time, author, alarm_email, schedule_type, schedule_conf, \
         misfire_strategy, executor_route_strategy, executor_handler, executor_param, \
         executor_block_strategy, executor_timeout, executor_fail_retry_count, glue_type, \
         glue_source, glue_remark, glue_updatetime, child_jobid, trigger_status, \
         trigger_last_time, trigger_next_time"
    };
}
static INSERT_JOB: Sql = Sql::new(concat!(
    "INSERT INTO xxl_job_info (add_time, ",
    job_write_columns!(),
    ") VALUES (TS(?), ?, ?, TS(?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, TS(?), ?, ?, ?, ?) RETURNING id"
));
static UPDATE_JOB: Sql = Sql::new(
    "UPDATE xxl_job_info SET job_group = ?, JOB_NAME = ?, \
    update_time = TS(?), author = ?, alarm_email = ?, schedule_type = ?, \
    schedule_conf = ?, misfire_strategy = ?, executor_route_strategy = ?, executor_handler = ?, \
    executor_param = ?, executor_block_strategy = ?, executor_timeout = ?, \
    executor_fail_retry_count = ?, glue_type = ?, glue_source = ?, glue_remark = ?, \
    glue_updatetime = TS(?), child_jobid = ?, trigger_status = ?, \
    trigger_last_time = ?, trigger_next_time = ? WHERE id = ?",
);

/// A job's values for [`job_write_columns`], after `before` and followed by `after`.
fn job_values<'a>(before: Option<Arg<'a>>, job: &'a Job, after: Option<Arg<'a>>) -> Vec<Arg<'a>> {
    let values = args![
        job.job_group,
        &job.job_desc,
        opt_secs(job.update_time),
        &job.author,
        &job.alarm_email,
        &job.schedule_type,
        &job.schedule_conf,
        &job.misfire_strategy,
        &job.executor_route_strategy,
        &job.executor_handler,
        &job.executor_param,
        &job.executor_block_strategy,
        job.executor_timeout,
        job.executor_fail_retry_count,
        &job.glue_type,
        &job.glue_source,
        &job.glue_remark,
        opt_secs(job.glue_updatetime),
        &job.child_jobid,
        job.trigger_status,
        job.trigger_last_time,
        job.trigger_next_time,
    ];
    before.into_iter().chain(values).chain(after).collect()
}

/// The job with its jobwheel time zone and priority (neither side table has a column named like
/// one of `xxl_job_info`'s, so the unqualified column list stays unambiguous): what the trigger
/// path, the pre-read (whose rows a trigger fires with while the job epoch stands) and single-job
/// reads load.
macro_rules! job_full {
    () => {
        concat!(
            "SELECT ",
            job_columns!(),
            ", z.time_zone, p.priority, d.mode AS delivery FROM xxl_job_info \
             LEFT JOIN jobwheel_job_zone z ON z.job_id = xxl_job_info.id \
             LEFT JOIN jobwheel_job_priority p ON p.job_id = xxl_job_info.id \
             LEFT JOIN jobwheel_job_delivery d ON d.job_id = xxl_job_info.id"
        )
    };
}
pub(super) use job_full;
static LOAD_JOB: Sql = Sql::new(concat!(job_full!(), " WHERE id = ?"));
static SET_JOB_PRIORITY: Sql = Sql::new(
    "INSERT INTO jobwheel_job_priority (job_id, priority) SELECT id, ? FROM xxl_job_info WHERE id = ? \
    ON CONFLICT (job_id) DO UPDATE SET priority = excluded.priority",
);
static CLEAR_JOB_PRIORITY: Sql = Sql::new("DELETE FROM jobwheel_job_priority WHERE job_id = ?");
static SET_JOB_DELIVERY: Sql = Sql::new(
    "INSERT INTO jobwheel_job_delivery (job_id, mode) SELECT id, ? FROM xxl_job_info WHERE id = ? \
    ON CONFLICT (job_id) DO UPDATE SET mode = excluded.mode",
);
static CLEAR_JOB_DELIVERY: Sql = Sql::new("DELETE FROM jobwheel_job_delivery WHERE job_id = ?");
static START_JOB: Sql = Sql::new(
    "UPDATE xxl_job_info SET trigger_status = 1, trigger_last_time = 0, \
    trigger_next_time = ?, update_time = TS(?) WHERE id = ?",
);
/// Upserts the zone only for an existing job (`INSERT … SELECT`), so no orphan row is left.
static SET_JOB_ZONE: Sql = Sql::new(
    "INSERT INTO jobwheel_job_zone (job_id, time_zone) SELECT id, ? FROM xxl_job_info WHERE id = ? \
    ON CONFLICT (job_id) DO UPDATE SET time_zone = excluded.time_zone",
);
static CLEAR_JOB_ZONE: Sql = Sql::new("DELETE FROM jobwheel_job_zone WHERE job_id = ?");
static JOB_RETRY: Sql = Sql::new(
    "SELECT I64(backoff_secs), strategy, I64(max_secs), I64(jitter_pct) FROM jobwheel_job_retry WHERE job_id = ?",
);
/// Like [`SET_JOB_ZONE`]: only for an existing job.
static SET_JOB_RETRY: Sql = Sql::new(
    "INSERT INTO jobwheel_job_retry (job_id, backoff_secs, strategy, max_secs, jitter_pct) \
    SELECT id, I64(?), ?, I64(?), I64(?) FROM xxl_job_info WHERE id = ? \
    ON CONFLICT (job_id) DO UPDATE SET backoff_secs = excluded.backoff_secs, strategy = excluded.strategy, \
    max_secs = excluded.max_secs, jitter_pct = excluded.jitter_pct",
);
static CLEAR_JOB_RETRY: Sql = Sql::new("DELETE FROM jobwheel_job_retry WHERE job_id = ?");
static STOP_JOB: Sql = Sql::new(
    "UPDATE xxl_job_info SET trigger_status = 0, trigger_last_time = 0, \
    trigger_next_time = 0, update_time = TS(?) WHERE id = ?",
);
/// Moves the job epoch (`0028_job_epoch`): written after every job edit, so a trigger holding
/// a job row its pre-read read before the edit sees the epoch moved and reads the job again.
static BUMP_JOB_EPOCH: Sql = Sql::new("UPDATE jobwheel_job_epoch SET epoch = epoch + 1 WHERE id = 1");
static JOB_EPOCH: Sql = Sql::new("SELECT epoch FROM jobwheel_job_epoch WHERE id = 1");
/// Upstream deletes a job's logs and GLUE history with it; our tables follow — its grant, its
/// sealed secrets and variables and their history too, so a later job that gets the same id
/// (MySQL re-derives AUTO_INCREMENT after a restart) inherits nothing (review L1).
static DELETE_JOB: [Sql; 18] = [
    // Records have no job column: found through the logs, so they go first.
    Sql::new("DELETE FROM jobwheel_log_flight WHERE log_id IN (SELECT id FROM xxl_job_log WHERE job_id = ?)"),
    Sql::new("DELETE FROM xxl_job_log WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_log_piece WHERE job_id = ?"),
    Sql::new("DELETE FROM xxl_job_logglue WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_wasm_version WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_approval WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_ring_claim WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_zone WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_retry WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_tag WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_priority WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_delivery WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_calendar WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_window WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_job_grant WHERE job_id = ?"),
    Sql::new("DELETE FROM jobwheel_variable WHERE job_id = ? AND group_id = 0"),
    Sql::new("DELETE FROM jobwheel_grant_history WHERE job_id = ? AND group_id = 0"),
    Sql::new("DELETE FROM xxl_job_info WHERE id = ?"),
];

static INSERT_GLUE: Sql = Sql::new(
    "INSERT INTO xxl_job_logglue (job_id, glue_type, glue_source, glue_remark, add_time, update_time) \
    VALUES (?, ?, ?, ?, TS(?), TS(?)) RETURNING id",
);
/// MySQL refuses `LIMIT` directly inside `IN (…)`; a derived table is accepted everywhere.
static TRIM_GLUE: Sql = Sql::new(
    "DELETE FROM xxl_job_logglue WHERE job_id = ? AND id NOT IN \
    (SELECT id FROM (SELECT id FROM xxl_job_logglue WHERE job_id = ? \
    ORDER BY update_time DESC, id DESC LIMIT ?) AS newest)",
);
static LIST_GLUE: Sql = Sql::new(
    "SELECT id, job_id, glue_type, glue_source, glue_remark, \
    EPOCH(add_time) AS add_time, EPOCH(update_time) AS update_time \
    FROM xxl_job_logglue WHERE job_id = ? ORDER BY id DESC",
);

/// ` WHERE …` of the job list. `ILIKE`: upstream's MySQL collation compares case-insensitively.
pub(super) fn push_job_filter<'a>(q: &mut QueryBuf<'a>, filter: &'a JobFilter) {
    q.push(" WHERE 1 = 1");
    if let Some(group) = filter.job_group {
        q.push(" AND job_group = ").bind(group);
    }
    if let Some(status) = filter.trigger_status {
        q.push(" AND trigger_status = ").bind(status);
    }
    if let Some(desc) = &filter.job_desc {
        q.push(" AND JOB_NAME ILIKE ").bind(like(desc));
    }
    if let Some(handler) = &filter.executor_handler {
        q.push(" AND executor_handler ILIKE ").bind(like(handler));
    }
    if let Some(author) = &filter.author {
        q.push(" AND author ILIKE ").bind(like(author));
    }
    if let Some(tag) = &filter.tag {
        q.push(" AND id IN (SELECT job_id FROM jobwheel_job_tag WHERE tag = ").bind(tag.as_str()).push(")");
    }
}

#[async_trait]
impl JobStore for SqlStore {
    async fn add_job(&self, job: &Job) -> Result<JobId, StoreError> {
        let args = job_values(Some(opt_secs(job.add_time).into()), job, None);
        Ok(JobId(self.ex().insert_id(&INSERT_JOB, &args).await?))
    }

    async fn update_job(&self, id: JobId, job: &Job) -> Result<bool, StoreError> {
        let args = job_values(None, job, Some(id.into()));
        let updated = self.ex().execute(&UPDATE_JOB, &args).await? > 0;
        self.bump_job_epoch().await?;
        Ok(updated)
    }

    async fn delete_job(&self, id: JobId) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        let mut deleted = 0;
        for sql in &DELETE_JOB {
            deleted = tx.ex().execute(sql, &args![id]).await?;
        }
        tx.ex().execute(&BUMP_JOB_EPOCH, &args![]).await?;
        // Its logs went with it: the report's kept counts are recounted.
        tx.ex().execute(&super::reports::BUMP_LOG_EPOCH, &args![]).await?;
        tx.commit().await?;
        // The last statement deletes the job itself.
        Ok(deleted > 0)
    }

    async fn load_job(&self, id: JobId) -> Result<Option<JobRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_JOB, &args![id]).await
    }

    async fn load_jobs(&self, ids: &[JobId]) -> Result<Vec<JobRow>, StoreError> {
        self.load_jobs_batch(ids).await
    }

    async fn job_epoch(&self) -> Result<i64, StoreError> {
        Ok(self.ex().fetch_value::<i64>(&JOB_EPOCH, &args![]).await?.unwrap_or(0))
    }

    async fn follow_ups(&self, ids: &[JobId]) -> Result<Vec<JobFollowUp>, StoreError> {
        self.fetch_by_job_ids(
            "SELECT id, child_jobid, trigger_next_time FROM xxl_job_info WHERE id IN (",
            ids,
        )
        .await
    }

    async fn page_jobs(&self, filter: &JobFilter, page: Page) -> Result<Paged<JobRow>, StoreError> {
        let mut count = QueryBuf::new("SELECT COUNT(*) FROM xxl_job_info");
        push_job_filter(&mut count, filter);
        let total: i64 = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut rows = QueryBuf::new(concat!("SELECT ", job_columns!(), " FROM xxl_job_info"));
        push_job_filter(&mut rows, filter);
        rows.push(" ORDER BY id DESC LIMIT ").bind(i64::from(page.limit));
        rows.push(" OFFSET ").bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&rows, rows.args()).await?;
        Ok(Paged { rows, total: total.try_into().unwrap_or_default() })
    }

    async fn start_job(&self, id: JobId, next_ms: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let started = self.ex().execute(&START_JOB, &args![next_ms, secs(now), id]).await? > 0;
        self.bump_job_epoch().await?;
        Ok(started)
    }

    async fn stop_job(&self, id: JobId, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let stopped = self.ex().execute(&STOP_JOB, &args![secs(now), id]).await? > 0;
        self.bump_job_epoch().await?;
        Ok(stopped)
    }

    async fn set_job_time_zone(&self, id: JobId, time_zone: Option<&str>) -> Result<(), StoreError> {
        match time_zone {
            Some(zone) => self.ex().execute(&SET_JOB_ZONE, &args![zone, id]).await?,
            None => self.ex().execute(&CLEAR_JOB_ZONE, &args![id]).await?,
        };
        self.bump_job_epoch().await
    }

    async fn job_retry_backoff(&self, id: JobId) -> Result<Option<RetryBackoff>, StoreError> {
        let row: Option<(i64, String, i64, i64)> = self.ex().fetch_optional(&JOB_RETRY, &args![id]).await?;
        // A value this version cannot read (a newer admin's strategy, a hand-edited row) falls
        // back to the nearest it can: a fixed wait of the base.
        Ok(row.map(|(base, strategy, max, jitter)| {
            let base_secs = u32::try_from(base).unwrap_or(0);
            match strategy.parse() {
                Ok(strategy) => RetryBackoff {
                    strategy,
                    base_secs,
                    max_secs: u32::try_from(max).unwrap_or(0).max(base_secs),
                    jitter_pct: u8::try_from(jitter.clamp(0, 100)).unwrap_or(0),
                },
                Err(()) => RetryBackoff::fixed(base_secs),
            }
        }))
    }

    async fn set_job_priority(&self, id: JobId, priority: Option<&str>) -> Result<(), StoreError> {
        match priority {
            Some(priority) => self.ex().execute(&SET_JOB_PRIORITY, &args![priority, id]).await?,
            None => self.ex().execute(&CLEAR_JOB_PRIORITY, &args![id]).await?,
        };
        self.bump_job_epoch().await
    }

    async fn set_job_delivery(&self, id: JobId, mode: Option<&str>) -> Result<(), StoreError> {
        match mode {
            Some(mode) => self.ex().execute(&SET_JOB_DELIVERY, &args![mode, id]).await?,
            None => self.ex().execute(&CLEAR_JOB_DELIVERY, &args![id]).await?,
        };
        self.bump_job_epoch().await
    }

    async fn set_job_retry_backoff(
        &self,
        id: JobId,
        backoff: Option<RetryBackoff>,
    ) -> Result<(), StoreError> {
        match backoff {
            Some(b) => {
                let args = args![
                    i64::from(b.base_secs),
                    b.strategy.name(),
                    i64::from(b.max_secs),
                    i64::from(b.jitter_pct),
                    id
                ];
                self.ex().execute(&SET_JOB_RETRY, &args).await?
            }
            None => self.ex().execute(&CLEAR_JOB_RETRY, &args![id]).await?,
        };
        Ok(())
    }

    async fn add_glue_history(&self, glue: &NewGlueHistory) -> Result<i32, StoreError> {
        let mut tx = self.db.begin().await?;
        let insert = args![
            glue.job_id,
            &glue.glue_type,
            &glue.glue_source,
            &glue.glue_remark,
            secs(glue.now),
            secs(glue.now)
        ];
        let id = tx.ex().insert_id(&INSERT_GLUE, &insert).await?;
        let trim = args![glue.job_id, glue.job_id, i64::from(HISTORY_KEPT_PER_JOB)];
        tx.ex().execute(&TRIM_GLUE, &trim).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn list_glue_history(&self, job_id: JobId) -> Result<Vec<GlueHistoryRow>, StoreError> {
        self.ex().fetch_all(&LIST_GLUE, &args![job_id]).await
    }
}

impl SqlStore {
    async fn bump_job_epoch(&self) -> Result<(), StoreError> {
        self.ex().execute(&BUMP_JOB_EPOCH, &args![]).await?;
        Ok(())
    }
}
