//! PostgreSQL: jobs and their GLUE history.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{Postgres, QueryBuilder};

use super::PgStore;
use crate::store::support::like;
use crate::store::time::{opt_secs, secs};
use crate::store::{
    GlueHistoryRow, HISTORY_KEPT_PER_JOB, Job, JobFilter, JobId, JobRow, JobStore, NewGlueHistory, Page,
    Paged, StoreError,
};

const INSERT_JOB: &str = "INSERT INTO xxl_job_info (job_group, job_desc, add_time, update_time, \
    author, alarm_email, schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, \
    executor_handler, executor_param, executor_block_strategy, executor_timeout, \
    executor_fail_retry_count, glue_type, glue_source, glue_remark, glue_updatetime, child_jobid, \
    trigger_status, trigger_last_time, trigger_next_time) VALUES ($1, $2, to_timestamp($3), \
    to_timestamp($4), $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, to_timestamp($19), \
    $20, $21, $22, $23) RETURNING id";
const UPDATE_JOB: &str = "UPDATE xxl_job_info SET job_group = $1, job_desc = $2, \
    update_time = to_timestamp($3), author = $4, alarm_email = $5, schedule_type = $6, \
    schedule_conf = $7, misfire_strategy = $8, executor_route_strategy = $9, executor_handler = $10, \
    executor_param = $11, executor_block_strategy = $12, executor_timeout = $13, \
    executor_fail_retry_count = $14, glue_type = $15, glue_source = $16, glue_remark = $17, \
    glue_updatetime = to_timestamp($18), child_jobid = $19, trigger_status = $20, \
    trigger_last_time = $21, trigger_next_time = $22 WHERE id = $23";
/// The job with its jobwheel time zone (`jobwheel_job_zone` has no column named like one of
/// `xxl_job_info`'s, so the unqualified column list stays unambiguous).
const LOAD_JOB: &str = concat!(
    "SELECT ",
    job_columns!(),
    ", z.time_zone FROM xxl_job_info LEFT JOIN jobwheel_job_zone z ON z.job_id = xxl_job_info.id \
     WHERE id = $1"
);
const START_JOB: &str = "UPDATE xxl_job_info SET trigger_status = 1, trigger_last_time = 0, \
    trigger_next_time = $1, update_time = to_timestamp($2) WHERE id = $3";
/// Upserts the zone only for an existing job (`INSERT … SELECT`), so no orphan row is left.
const SET_JOB_ZONE: &str = "INSERT INTO jobwheel_job_zone (job_id, time_zone) \
    SELECT id, $1 FROM xxl_job_info WHERE id = $2 ON CONFLICT (job_id) DO UPDATE SET time_zone = EXCLUDED.time_zone";
const CLEAR_JOB_ZONE: &str = "DELETE FROM jobwheel_job_zone WHERE job_id = $1";
const STOP_JOB: &str = "UPDATE xxl_job_info SET trigger_status = 0, trigger_last_time = 0, \
    trigger_next_time = 0, update_time = to_timestamp($1) WHERE id = $2";
/// Upstream deletes a job's logs and GLUE history with it; our tables follow.
const DELETE_JOB: [&str; 6] = [
    "DELETE FROM xxl_job_log WHERE job_id = $1",
    "DELETE FROM xxl_job_logglue WHERE job_id = $1",
    "DELETE FROM jobwheel_wasm_version WHERE job_id = $1",
    "DELETE FROM jobwheel_ring_claim WHERE job_id = $1",
    "DELETE FROM jobwheel_job_zone WHERE job_id = $1",
    "DELETE FROM xxl_job_info WHERE id = $1",
];

const INSERT_GLUE: &str = "INSERT INTO xxl_job_logglue \
    (job_id, glue_type, glue_source, glue_remark, add_time, update_time) \
    VALUES ($1, $2, $3, $4, to_timestamp($5), to_timestamp($6)) RETURNING id";
const TRIM_GLUE: &str = "DELETE FROM xxl_job_logglue WHERE job_id = $1 AND id NOT IN \
    (SELECT id FROM xxl_job_logglue WHERE job_id = $2 ORDER BY update_time DESC, id DESC LIMIT $3)";
const LIST_GLUE: &str = "SELECT id, job_id, glue_type, glue_source, glue_remark, \
    CAST(EXTRACT(EPOCH FROM add_time) AS BIGINT) AS add_time, CAST(EXTRACT(EPOCH FROM update_time) AS BIGINT) AS update_time \
    FROM xxl_job_logglue WHERE job_id = $1 ORDER BY id DESC";

fn push_job_filter(qb: &mut QueryBuilder<'_, Postgres>, filter: &JobFilter) {
    qb.push(" WHERE 1 = 1");
    if let Some(group) = filter.job_group {
        qb.push(" AND job_group = ").push_bind(group);
    }
    if let Some(status) = filter.trigger_status {
        qb.push(" AND trigger_status = ").push_bind(status);
    }
    // ILIKE: upstream's MySQL collation compares case-insensitively.
    if let Some(desc) = &filter.job_desc {
        qb.push(" AND job_desc ILIKE ").push_bind(like(desc));
    }
    if let Some(handler) = &filter.executor_handler {
        qb.push(" AND executor_handler ILIKE ").push_bind(like(handler));
    }
    if let Some(author) = &filter.author {
        qb.push(" AND author ILIKE ").push_bind(like(author));
    }
}

#[async_trait]
impl JobStore for PgStore {
    async fn add_job(&self, job: &Job) -> Result<JobId, StoreError> {
        let id = sqlx::query_scalar(INSERT_JOB)
            .bind(job.job_group)
            .bind(&job.job_desc)
            .bind(opt_secs(job.add_time))
            .bind(opt_secs(job.update_time))
            .bind(&job.author)
            .bind(&job.alarm_email)
            .bind(&job.schedule_type)
            .bind(&job.schedule_conf)
            .bind(&job.misfire_strategy)
            .bind(&job.executor_route_strategy)
            .bind(&job.executor_handler)
            .bind(&job.executor_param)
            .bind(&job.executor_block_strategy)
            .bind(job.executor_timeout)
            .bind(job.executor_fail_retry_count)
            .bind(&job.glue_type)
            .bind(&job.glue_source)
            .bind(&job.glue_remark)
            .bind(opt_secs(job.glue_updatetime))
            .bind(&job.child_jobid)
            .bind(job.trigger_status)
            .bind(job.trigger_last_time)
            .bind(job.trigger_next_time)
            .fetch_one(&self.pool)
            .await?;
        Ok(JobId(id))
    }

    async fn update_job(&self, id: JobId, job: &Job) -> Result<bool, StoreError> {
        let done = sqlx::query(UPDATE_JOB)
            .bind(job.job_group)
            .bind(&job.job_desc)
            .bind(opt_secs(job.update_time))
            .bind(&job.author)
            .bind(&job.alarm_email)
            .bind(&job.schedule_type)
            .bind(&job.schedule_conf)
            .bind(&job.misfire_strategy)
            .bind(&job.executor_route_strategy)
            .bind(&job.executor_handler)
            .bind(&job.executor_param)
            .bind(&job.executor_block_strategy)
            .bind(job.executor_timeout)
            .bind(job.executor_fail_retry_count)
            .bind(&job.glue_type)
            .bind(&job.glue_source)
            .bind(&job.glue_remark)
            .bind(opt_secs(job.glue_updatetime))
            .bind(&job.child_jobid)
            .bind(job.trigger_status)
            .bind(job.trigger_last_time)
            .bind(job.trigger_next_time)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_job(&self, id: JobId) -> Result<bool, StoreError> {
        let mut tx = self.begin_tx().await?;
        let mut deleted = 0;
        for sql in DELETE_JOB {
            deleted = sqlx::query(sql).bind(id).execute(&mut *tx).await?.rows_affected();
        }
        tx.commit().await?;
        // The last statement deletes the job itself.
        Ok(deleted > 0)
    }

    async fn load_job(&self, id: JobId) -> Result<Option<JobRow>, StoreError> {
        Ok(sqlx::query_as(LOAD_JOB).bind(id).fetch_optional(&self.pool).await?)
    }

    async fn load_jobs(&self, ids: &[JobId]) -> Result<Vec<JobRow>, StoreError> {
        self.load_jobs_batch(ids).await
    }

    async fn page_jobs(&self, filter: &JobFilter, page: Page) -> Result<Paged<JobRow>, StoreError> {
        let mut count = QueryBuilder::new("SELECT COUNT(*) FROM xxl_job_info");
        push_job_filter(&mut count, filter);
        let total: i64 = count.build_query_scalar().fetch_one(&self.pool).await?;
        let mut rows = QueryBuilder::new(concat!("SELECT ", job_columns!(), " FROM xxl_job_info"));
        push_job_filter(&mut rows, filter);
        rows.push(" ORDER BY id DESC LIMIT ").push_bind(i64::from(page.limit));
        rows.push(" OFFSET ").push_bind(i64::from(page.offset));
        let rows = rows.build_query_as().fetch_all(&self.pool).await?;
        Ok(Paged { rows, total: total.try_into().unwrap_or_default() })
    }

    async fn start_job(&self, id: JobId, next_ms: i64, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let done = sqlx::query(START_JOB).bind(next_ms).bind(secs(now)).bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn stop_job(&self, id: JobId, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let done = sqlx::query(STOP_JOB).bind(secs(now)).bind(id).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn set_job_time_zone(&self, id: JobId, time_zone: Option<&str>) -> Result<(), StoreError> {
        match time_zone {
            Some(zone) => sqlx::query(SET_JOB_ZONE).bind(zone).bind(id).execute(&self.pool).await?,
            None => sqlx::query(CLEAR_JOB_ZONE).bind(id).execute(&self.pool).await?,
        };
        Ok(())
    }

    async fn add_glue_history(&self, glue: &NewGlueHistory) -> Result<i32, StoreError> {
        let mut tx = self.begin_tx().await?;
        let id = sqlx::query_scalar(INSERT_GLUE)
            .bind(glue.job_id)
            .bind(&glue.glue_type)
            .bind(&glue.glue_source)
            .bind(&glue.glue_remark)
            .bind(secs(glue.now))
            .bind(secs(glue.now))
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(TRIM_GLUE)
            .bind(glue.job_id)
            .bind(glue.job_id)
            .bind(i64::from(HISTORY_KEPT_PER_JOB))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn list_glue_history(&self, job_id: JobId) -> Result<Vec<GlueHistoryRow>, StoreError> {
        Ok(sqlx::query_as(LIST_GLUE).bind(job_id).fetch_all(&self.pool).await?)
    }
}
