//! MySQL/MariaDB: the dashboard report and log deletion (manual clear and retention).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{MySql, QueryBuilder};

use super::MySqlStore;
use crate::store::support::CLEAR_BATCH;
use crate::store::time::secs;
use crate::store::{
    LogClear, LogCounts, LogId, LogReport, LogReportRow, LogReportStore, LogReportTotals, StoreError,
};

// SUM is DECIMAL on MySQL: cast back to BIGINT.
const LOG_COUNTS: &str = "SELECT COUNT(handle_code), CAST(COALESCE(SUM(CASE WHEN \
    trigger_code IN (0, 200) AND handle_code = 0 THEN 1 ELSE 0 END), 0) AS SIGNED), \
    CAST(COALESCE(SUM(CASE WHEN handle_code = 200 THEN 1 ELSE 0 END), 0) AS SIGNED) \
    FROM xxl_job_log \
    WHERE trigger_time BETWEEN FROM_UNIXTIME(?) AND FROM_UNIXTIME(?)";
const UPSERT_REPORT: &str = "INSERT INTO xxl_job_log_report \
    (trigger_day, running_count, suc_count, fail_count, update_time) \
    VALUES (FROM_UNIXTIME(?), ?, ?, ?, FROM_UNIXTIME(?)) \
    ON DUPLICATE KEY UPDATE running_count = VALUES(running_count), \
    suc_count = VALUES(suc_count), fail_count = VALUES(fail_count), \
    update_time = VALUES(update_time)";
const REPORTS: &str = "SELECT id, CAST(UNIX_TIMESTAMP(trigger_day) AS SIGNED) AS trigger_day, running_count, \
    suc_count, fail_count, CAST(UNIX_TIMESTAMP(update_time) AS SIGNED) AS update_time FROM xxl_job_log_report \
    WHERE trigger_day BETWEEN FROM_UNIXTIME(?) AND FROM_UNIXTIME(?) \
    ORDER BY trigger_day ASC";
const REPORT_TOTALS: &str = "SELECT CAST(COALESCE(SUM(running_count), 0) AS SIGNED), \
    CAST(COALESCE(SUM(suc_count), 0) AS SIGNED), CAST(COALESCE(SUM(fail_count), 0) AS SIGNED) \
    FROM xxl_job_log_report";

/// `AND job_group = ? AND job_id = ?` for the filters that are set.
fn push_owner(qb: &mut QueryBuilder<'_, MySql>, clear: &LogClear) {
    if let Some(group) = clear.job_group {
        qb.push(" AND job_group = ").push_bind(group);
    }
    if let Some(job) = clear.job_id {
        qb.push(" AND job_id = ").push_bind(job);
    }
}

#[async_trait]
impl LogReportStore for MySqlStore {
    async fn clear_logs(&self, clear: &LogClear) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            // Upstream `findClearLogIds`, then `clearLog(ids)`, until nothing is left.
            let mut find = QueryBuilder::<MySql>::new("SELECT id FROM xxl_job_log WHERE 1 = 1");
            push_owner(&mut find, clear);
            if let Some(before) = clear.trigger_before {
                find.push(" AND trigger_time <= FROM_UNIXTIME(").push_bind(secs(before)).push(")");
            }
            if clear.keep_newest > 0 {
                // MySQL refuses LIMIT directly inside IN (…); a derived table is accepted.
                find.push(" AND id NOT IN (SELECT id FROM (SELECT id FROM xxl_job_log WHERE 1 = 1");
                push_owner(&mut find, clear);
                find.push(" ORDER BY trigger_time DESC, id DESC LIMIT ")
                    .push_bind(i64::from(clear.keep_newest))
                    .push(") AS newest)");
            }
            find.push(" ORDER BY id ASC LIMIT ").push_bind(i64::from(CLEAR_BATCH));
            let ids: Vec<LogId> = find.build_query_scalar().fetch_all(&self.pool).await?;
            if ids.is_empty() {
                return Ok(deleted);
            }
            let mut delete = QueryBuilder::<MySql>::new("DELETE FROM xxl_job_log WHERE id IN (");
            let mut list = delete.separated(", ");
            for id in ids {
                list.push_bind(id);
            }
            list.push_unseparated(")");
            deleted += delete.build().execute(&self.pool).await?.rows_affected();
        }
    }

    async fn log_counts(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<LogCounts, StoreError> {
        let (total, running, success) =
            sqlx::query_as(LOG_COUNTS).bind(secs(from)).bind(secs(to)).fetch_one(&self.pool).await?;
        Ok(LogCounts { total, running, success })
    }

    async fn upsert_log_report(&self, report: &LogReport) -> Result<(), StoreError> {
        sqlx::query(UPSERT_REPORT)
            .bind(secs(report.trigger_day))
            .bind(report.running_count)
            .bind(report.suc_count)
            .bind(report.fail_count)
            .bind(secs(report.update_time))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn log_reports(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<LogReportRow>, StoreError> {
        Ok(sqlx::query_as(REPORTS).bind(secs(from)).bind(secs(to)).fetch_all(&self.pool).await?)
    }

    async fn log_report_totals(&self) -> Result<LogReportTotals, StoreError> {
        let (running, success, failed) = sqlx::query_as(REPORT_TOTALS).fetch_one(&self.pool).await?;
        Ok(LogReportTotals { running, success, failed })
    }
}
