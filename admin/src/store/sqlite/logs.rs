//! SQLite: trigger logs — insert and trigger update, callbacks, the log list, the fail and lost
//! monitors' queries.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite};

use super::SqliteStore;
use crate::store::support::{append_handle_msg, truncate_handle_msg};
use crate::store::time::secs;
use crate::store::{
    HandleOutcome, HandleResult, LogFilter, LogId, LogRow, LogStatusFilter, LogStore, LogTriggerUpdate,
    NewLog, Page, Paged, StoreError,
};

/// Upstream's first insert: codes 0 until the trigger and the callback report.
pub(super) const INSERT_LOG: &str = "INSERT INTO xxl_job_log \
    (job_group, job_id, trigger_time, trigger_code, handle_code) \
    VALUES (?, ?, datetime(?, 'unixepoch'), 0, 0) RETURNING id";
const UPDATE_TRIGGER: &str = "UPDATE xxl_job_log SET trigger_time = datetime(?, 'unixepoch'), \
    trigger_code = ?, trigger_msg = ?, executor_address = ?, executor_handler = ?, \
    executor_param = ?, executor_sharding_param = ?, executor_fail_retry_count = ? WHERE id = ?";
const LOAD_LOG: &str = concat!("SELECT ", log_columns!(), " FROM xxl_job_log WHERE id = ?");
const HANDLE_STATE: &str = "SELECT handle_code, handle_msg FROM xxl_job_log WHERE id = ?";
const UPDATE_HANDLE: &str = "UPDATE xxl_job_log SET handle_time = datetime(?, 'unixepoch'), \
    handle_code = ?, handle_msg = ? WHERE id = ?";
const FAILED_IDS: &str = "SELECT id FROM xxl_job_log \
    WHERE NOT ((trigger_code IN (0, 200) AND handle_code = 0) OR handle_code = 200) \
    AND alarm_status = 0 ORDER BY id ASC LIMIT ?";
const SET_ALARM: &str = "UPDATE xxl_job_log SET alarm_status = ? WHERE id = ? AND alarm_status = ?";
const STALLED_IDS: &str = "SELECT id FROM xxl_job_log \
    WHERE trigger_code = 0 AND handle_code = 0 AND trigger_time <= datetime(?, 'unixepoch') ORDER BY id";
const LOST_IDS: &str = "SELECT t.id FROM xxl_job_log t \
    LEFT JOIN xxl_job_registry t2 ON t.executor_address = t2.registry_value \
    WHERE t.trigger_code = 200 AND t.handle_code = 0 \
    AND t.trigger_time <= datetime(?, 'unixepoch') AND t2.id IS NULL ORDER BY t.id";

fn push_log_filter(qb: &mut QueryBuilder<'_, Sqlite>, filter: &LogFilter) {
    qb.push(" WHERE 1 = 1");
    if let Some(group) = filter.job_group {
        qb.push(" AND job_group = ").push_bind(group);
    }
    if let Some(job) = filter.job_id {
        qb.push(" AND job_id = ").push_bind(job);
    }
    if let Some(from) = filter.trigger_from {
        qb.push(" AND trigger_time >= datetime(").push_bind(secs(from)).push(", 'unixepoch')");
    }
    if let Some(to) = filter.trigger_to {
        qb.push(" AND trigger_time <= datetime(").push_bind(secs(to)).push(", 'unixepoch')");
    }
    qb.push(match filter.status {
        LogStatusFilter::All => "",
        LogStatusFilter::Success => " AND handle_code = 200",
        LogStatusFilter::Failed => " AND (trigger_code NOT IN (0, 200) OR handle_code NOT IN (0, 200))",
        LogStatusFilter::Running => " AND trigger_code = 200 AND handle_code = 0",
    });
}

#[async_trait]
impl LogStore for SqliteStore {
    async fn insert_log(&self, log: &NewLog) -> Result<LogId, StoreError> {
        Ok(sqlx::query_scalar(INSERT_LOG)
            .bind(log.job_group)
            .bind(log.job_id)
            .bind(secs(log.trigger_time))
            .fetch_one(&self.pool)
            .await?)
    }

    async fn update_log_trigger(&self, update: &LogTriggerUpdate) -> Result<bool, StoreError> {
        let done = sqlx::query(UPDATE_TRIGGER)
            .bind(secs(update.trigger_time))
            .bind(update.trigger_code)
            .bind(&update.trigger_msg)
            .bind(&update.executor_address)
            .bind(&update.executor_handler)
            .bind(&update.executor_param)
            .bind(&update.executor_sharding_param)
            .bind(update.executor_fail_retry_count)
            .bind(update.log_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn update_log_triggers(&self, updates: &[LogTriggerUpdate]) -> Result<Vec<bool>, StoreError> {
        self.update_log_triggers_batch(updates).await
    }

    async fn apply_handle_results(&self, results: &[HandleResult]) -> Result<Vec<HandleOutcome>, StoreError> {
        self.apply_handle_results_batch(results).await
    }

    async fn load_log(&self, id: LogId) -> Result<Option<LogRow>, StoreError> {
        Ok(sqlx::query_as(LOAD_LOG).bind(id).fetch_optional(&self.pool).await?)
    }

    async fn apply_handle_result(&self, result: &HandleResult) -> Result<HandleOutcome, StoreError> {
        // The write lock makes check-then-update atomic against a concurrent callback.
        let mut tx = self.begin_write().await?;
        let state: Option<(i32, Option<String>)> =
            sqlx::query_as(HANDLE_STATE).bind(result.log_id).fetch_optional(&mut *tx).await?;
        let Some((code, old_msg)) = state else {
            return Ok(HandleOutcome::NotFound);
        };
        if code > 0 {
            return Ok(HandleOutcome::Repeated);
        }
        let msg = append_handle_msg(old_msg.as_deref(), result.handle_msg.as_deref());
        sqlx::query(UPDATE_HANDLE)
            .bind(secs(result.handle_time))
            .bind(result.handle_code)
            .bind(msg)
            .bind(result.log_id)
            .execute(&mut *tx)
            .await?;
        let row: LogRow = sqlx::query_as(LOAD_LOG).bind(result.log_id).fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(HandleOutcome::Applied(Box::new(row)))
    }

    async fn complete_log(&self, result: &HandleResult) -> Result<bool, StoreError> {
        let msg = result.handle_msg.clone().map(truncate_handle_msg);
        let done = sqlx::query(UPDATE_HANDLE)
            .bind(secs(result.handle_time))
            .bind(result.handle_code)
            .bind(msg)
            .bind(result.log_id)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn page_logs(&self, filter: &LogFilter, page: Page) -> Result<Paged<LogRow>, StoreError> {
        let mut count = QueryBuilder::new("SELECT COUNT(*) FROM xxl_job_log");
        push_log_filter(&mut count, filter);
        let total: i64 = count.build_query_scalar().fetch_one(&self.pool).await?;
        let mut rows = QueryBuilder::new(concat!("SELECT ", log_columns!(), " FROM xxl_job_log"));
        push_log_filter(&mut rows, filter);
        rows.push(" ORDER BY id DESC LIMIT ").push_bind(i64::from(page.limit));
        rows.push(" OFFSET ").push_bind(i64::from(page.offset));
        let rows = rows.build_query_as().fetch_all(&self.pool).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn failed_log_ids(&self, limit: u32) -> Result<Vec<LogId>, StoreError> {
        Ok(sqlx::query_scalar(FAILED_IDS).bind(i64::from(limit)).fetch_all(&self.pool).await?)
    }

    async fn claim_alarm(&self, id: LogId) -> Result<bool, StoreError> {
        let done = sqlx::query(SET_ALARM).bind(-1_i16).bind(id).bind(0_i16).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn finish_alarm(&self, id: LogId, new_status: i16) -> Result<bool, StoreError> {
        let done = sqlx::query(SET_ALARM).bind(new_status).bind(id).bind(-1_i16).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn lost_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError> {
        Ok(sqlx::query_scalar(LOST_IDS).bind(secs(trigger_before)).fetch_all(&self.pool).await?)
    }

    async fn stalled_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError> {
        Ok(sqlx::query_scalar(STALLED_IDS).bind(secs(trigger_before)).fetch_all(&self.pool).await?)
    }
}
