//! SQLite: the dashboard report and log deletion (manual clear and retention).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Sqlite};

use super::SqliteStore;
use crate::store::support::CLEAR_BATCH;
use crate::store::time::secs;
use crate::store::{
    LogClear, LogCounts, LogId, LogReport, LogReportRow, LogReportStore, LogReportTotals, StoreError,
};

const LOG_COUNTS: &str = "SELECT COUNT(handle_code), \
    COALESCE(SUM(CASE WHEN trigger_code IN (0, 200) AND handle_code = 0 THEN 1 ELSE 0 END), 0), \
    COALESCE(SUM(CASE WHEN handle_code = 200 THEN 1 ELSE 0 END), 0) FROM xxl_job_log \
    WHERE trigger_time BETWEEN datetime(?, 'unixepoch') AND datetime(?, 'unixepoch')";
const UPSERT_REPORT: &str = "INSERT INTO xxl_job_log_report \
    (trigger_day, running_count, suc_count, fail_count, update_time) \
    VALUES (datetime(?, 'unixepoch'), ?, ?, ?, datetime(?, 'unixepoch')) \
    ON CONFLICT (trigger_day) DO UPDATE SET running_count = excluded.running_count, \
    suc_count = excluded.suc_count, fail_count = excluded.fail_count, \
    update_time = excluded.update_time";
const REPORTS: &str = "SELECT id, unixepoch(trigger_day) AS trigger_day, running_count, \
    suc_count, fail_count, unixepoch(update_time) AS update_time FROM xxl_job_log_report \
    WHERE trigger_day BETWEEN datetime(?, 'unixepoch') AND datetime(?, 'unixepoch') \
    ORDER BY trigger_day ASC";
const REPORT_TOTALS: &str = "SELECT COALESCE(SUM(running_count), 0), \
    COALESCE(SUM(suc_count), 0), COALESCE(SUM(fail_count), 0) FROM xxl_job_log_report";

/// `AND job_group = ? AND job_id = ?` for the filters that are set.
fn push_owner(qb: &mut QueryBuilder<'_, Sqlite>, clear: &LogClear) {
    if let Some(group) = clear.job_group {
        qb.push(" AND job_group = ").push_bind(group);
    }
    if let Some(job) = clear.job_id {
        qb.push(" AND job_id = ").push_bind(job);
    }
}

#[async_trait]
impl LogReportStore for SqliteStore {
    async fn clear_logs(&self, clear: &LogClear) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            // Upstream `findClearLogIds`, then `clearLog(ids)`, until nothing is left.
            let mut find = QueryBuilder::<Sqlite>::new("SELECT id FROM xxl_job_log WHERE 1 = 1");
            push_owner(&mut find, clear);
            if let Some(before) = clear.trigger_before {
                find.push(" AND trigger_time <= datetime(").push_bind(secs(before)).push(", 'unixepoch')");
            }
            if clear.keep_newest > 0 {
                find.push(" AND id NOT IN (SELECT id FROM xxl_job_log WHERE 1 = 1");
                push_owner(&mut find, clear);
                find.push(" ORDER BY trigger_time DESC, id DESC LIMIT ")
                    .push_bind(i64::from(clear.keep_newest))
                    .push(")");
            }
            find.push(" ORDER BY id ASC LIMIT ").push_bind(i64::from(CLEAR_BATCH));
            let ids: Vec<LogId> = find.build_query_scalar().fetch_all(&self.pool).await?;
            if ids.is_empty() {
                return Ok(deleted);
            }
            let mut delete = QueryBuilder::<Sqlite>::new("DELETE FROM xxl_job_log WHERE id IN (");
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
