//! The dashboard report (`xxl_job_log_report`) and log deletion (manual clear and retention).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::support::CLEAR_BATCH;
use crate::store::time::secs;
use crate::store::{
    LogClear, LogCounts, LogId, LogReport, LogReportRow, LogReportStore, LogReportTotals, StoreError,
};

// `I64(…)`: SUM is DECIMAL on MySQL and NUMERIC-prone on PostgreSQL; the rows are `i64`.
static LOG_COUNTS: Sql = Sql::new(
    "SELECT COUNT(handle_code), \
    I64(COALESCE(SUM(CASE WHEN trigger_code IN (0, 200) AND handle_code = 0 THEN 1 ELSE 0 END), 0)), \
    I64(COALESCE(SUM(CASE WHEN handle_code = 200 THEN 1 ELSE 0 END), 0)) FROM xxl_job_log \
    WHERE trigger_time BETWEEN TS(?) AND TS(?)",
);
/// Moves the log epoch (`0030_log_epoch`) after logs were deleted: any of the report
/// monitor's kept slices may have changed, so every admin recounts them (engine/report.rs).
pub(super) static BUMP_LOG_EPOCH: Sql =
    Sql::new("UPDATE jobwheel_log_epoch SET epoch = epoch + 1 WHERE id = 1");
static LOG_EPOCH: Sql = Sql::new("SELECT epoch FROM jobwheel_log_epoch WHERE id = 1");
static TOP_LOG_ID: Sql = Sql::new("SELECT I64(COALESCE(MAX(id), 0)) FROM xxl_job_log");
/// The distinct trigger seconds of the rows above an id: a short range of the primary key (the
/// rows inserted since the last pass), whatever their trigger times. (`DISTINCT` of the bare
/// column in a subquery made SQLite walk all of `I_trigger_time` instead.)
static TRIGGER_SECS_AFTER: Sql =
    Sql::new("SELECT DISTINCT EPOCH(trigger_time) FROM xxl_job_log WHERE id > ?");
static UPSERT_REPORT: Sql = Sql::new(
    "INSERT INTO xxl_job_log_report (trigger_day, running_count, suc_count, fail_count, update_time) \
    VALUES (TS(?), ?, ?, ?, TS(?)) \
    ON CONFLICT (trigger_day) DO UPDATE SET running_count = excluded.running_count, \
    suc_count = excluded.suc_count, fail_count = excluded.fail_count, \
    update_time = excluded.update_time",
);
static REPORTS: Sql = Sql::new(
    "SELECT id, EPOCH(trigger_day) AS trigger_day, running_count, \
    suc_count, fail_count, EPOCH(update_time) AS update_time FROM xxl_job_log_report \
    WHERE trigger_day BETWEEN TS(?) AND TS(?) ORDER BY trigger_day ASC",
);
static REPORT_TOTALS: Sql = Sql::new(
    "SELECT I64(COALESCE(SUM(running_count), 0)), I64(COALESCE(SUM(suc_count), 0)), \
    I64(COALESCE(SUM(fail_count), 0)) FROM xxl_job_log_report",
);

/// `AND job_group = ? AND job_id = ?` for the filters that are set.
fn push_owner(q: &mut QueryBuf<'_>, clear: &LogClear) {
    if let Some(group) = clear.job_group {
        q.push(" AND job_group = ").bind(group);
    }
    if let Some(job) = clear.job_id {
        q.push(" AND job_id = ").bind(job);
    }
}

#[async_trait]
impl LogReportStore for SqlStore {
    async fn clear_logs(&self, clear: &LogClear) -> Result<u64, StoreError> {
        let mut deleted = 0;
        loop {
            // Upstream `findClearLogIds`, then `clearLog(ids)`, until nothing is left.
            let mut find = QueryBuf::new("SELECT id FROM xxl_job_log WHERE 1 = 1");
            push_owner(&mut find, clear);
            if let Some(before) = clear.trigger_before {
                find.push(" AND trigger_time <= TS(").bind(secs(before)).push(")");
            }
            if clear.keep_newest > 0 {
                // MySQL refuses LIMIT directly inside IN (…); a derived table is accepted.
                find.push(" AND id NOT IN (SELECT id FROM (SELECT id FROM xxl_job_log WHERE 1 = 1");
                push_owner(&mut find, clear);
                find.push(" ORDER BY trigger_time DESC NULLS LAST, id DESC LIMIT ")
                    .bind(i64::from(clear.keep_newest))
                    .push(") AS newest)");
            }
            // A row staged for a pending claim is a run about to start, not history: its trigger
            // would otherwise go out with a log id that no longer exists.
            find.push(
                " AND id NOT IN (SELECT log_id FROM jobwheel_ring_claim WHERE status = 0 AND log_id IS NOT NULL)",
            );
            find.push(" ORDER BY id ASC LIMIT ").bind(i64::from(CLEAR_BATCH));
            let ids: Vec<LogId> = self.ex().fetch_column(&find, find.args()).await?;
            if ids.is_empty() {
                return Ok(deleted);
            }
            // Their shipped lines first: a piece never outlives its log row.
            let mut pieces = QueryBuf::new("DELETE FROM jobwheel_log_piece WHERE log_id IN (");
            pieces.bind_list(ids.iter().copied()).push(")");
            self.ex().execute(&pieces, pieces.args()).await?;
            let mut flights = QueryBuf::new("DELETE FROM jobwheel_log_flight WHERE log_id IN (");
            flights.bind_list(ids.iter().copied()).push(")");
            self.ex().execute(&flights, flights.args()).await?;
            let mut delete = QueryBuf::new("DELETE FROM xxl_job_log WHERE id IN (");
            delete.bind_list(ids).push(")");
            let gone = self.ex().execute(&delete, delete.args()).await?;
            if gone > 0 {
                self.ex().execute(&BUMP_LOG_EPOCH, &args![]).await?;
            }
            deleted += gone;
        }
    }

    async fn log_counts(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<LogCounts, StoreError> {
        let (total, running, success) =
            self.ex().fetch_one(&LOG_COUNTS, &args![secs(from), secs(to)]).await?;
        Ok(LogCounts { total, running, success })
    }

    async fn log_epoch(&self) -> Result<i64, StoreError> {
        Ok(self.ex().fetch_value::<i64>(&LOG_EPOCH, &args![]).await?.unwrap_or(0))
    }

    async fn top_log_id(&self) -> Result<LogId, StoreError> {
        Ok(LogId(self.ex().fetch_value::<i64>(&TOP_LOG_ID, &args![]).await?.unwrap_or(0)))
    }

    async fn trigger_secs_after(&self, id: LogId) -> Result<Vec<i64>, StoreError> {
        let secs: Vec<Option<i64>> = self.ex().fetch_column(&TRIGGER_SECS_AFTER, &args![id]).await?;
        Ok(secs.into_iter().flatten().collect())
    }

    async fn upsert_log_report(&self, report: &LogReport) -> Result<(), StoreError> {
        let args = args![
            secs(report.trigger_day),
            report.running_count,
            report.suc_count,
            report.fail_count,
            secs(report.update_time)
        ];
        self.ex().execute(&UPSERT_REPORT, &args).await?;
        Ok(())
    }

    async fn log_reports(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<LogReportRow>, StoreError> {
        self.ex().fetch_all(&REPORTS, &args![secs(from), secs(to)]).await
    }

    async fn log_report_totals(&self) -> Result<LogReportTotals, StoreError> {
        let (running, success, failed) = self.ex().fetch_one(&REPORT_TOTALS, &[]).await?;
        Ok(LogReportTotals { running, success, failed })
    }
}
