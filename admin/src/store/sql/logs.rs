//! Trigger logs (`xxl_job_log`): insert and trigger update, callbacks, the log list, the fail
//! and lost monitors' queries.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::support::{append_handle_msg, like, stored_result, truncate_handle_msg};
use crate::store::time::secs;
use crate::store::{
    GroupId, HandleOutcome, HandleResult, JobId, LogFilter, LogId, LogRow, LogStatusFilter, LogStore,
    LogTriggerUpdate, NewLog, Page, Paged, StoreError,
};

/// Upstream's first insert: codes 0 until the trigger and the callback report.
pub(super) static INSERT_LOG: Sql = Sql::new(
    "INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, handle_code) \
    VALUES (?, ?, TS(?), 0, 0) RETURNING id",
);
static UPDATE_TRIGGER: Sql = Sql::new(
    "UPDATE xxl_job_log SET trigger_time = TS(?), \
    trigger_code = ?, trigger_msg = ?, executor_address = ?, executor_handler = ?, \
    executor_param = ?, executor_sharding_param = ?, executor_fail_retry_count = ? WHERE id = ?",
);
pub(super) static LOAD_LOG: Sql =
    Sql::new(concat!("SELECT ", log_columns!(), " FROM xxl_job_log WHERE id = ?"));
/// `FOR UPDATE` (PostgreSQL, MySQL; SQLite's write lock does it): concurrent results for one log
/// queue here, and the later one sees the first's code (a locking read sees the latest commit).
static HANDLE_STATE: Sql =
    Sql::new("SELECT job_id, handle_code, handle_msg FROM xxl_job_log WHERE id = ? FOR UPDATE");
static UPDATE_HANDLE: Sql =
    Sql::new("UPDATE xxl_job_log SET handle_time = TS(?), handle_code = ?, handle_msg = ? WHERE id = ?");
/// The fail monitor's scan. Upstream writes the condition as
/// `NOT ((trigger_code IN (0, 200) AND handle_code = 0) OR handle_code = 200)`, which no index
/// can serve: every row with `alarm_status = 0` — every successful run the table keeps — is
/// read at each pass. The same set written as ranges of `handle_code` (a handle code other than
/// 0 and 200, or none yet and a trigger code other than 0 and 200) is served by upstream's own
/// `I_handle_code` index and reads only unfinished and failed rows (docs/benchmarks.md,
/// "Monitor scans"). One branch per range, each bounded on both sides: as one `OR` — or with
/// open ranges — SQLite without statistics (the admin never runs `ANALYZE`) walked the whole
/// table in id order instead, every 10 s.
static FAILED_IDS: Sql = Sql::new(FAILED_IDS_SQL);
const FAILED_IDS_SQL: &str = "SELECT f.id FROM (\
    SELECT id FROM xxl_job_log WHERE handle_code BETWEEN -2147483648 AND -1 AND alarm_status = 0 \
    UNION ALL SELECT id FROM xxl_job_log WHERE handle_code BETWEEN 1 AND 199 AND alarm_status = 0 \
    UNION ALL SELECT id FROM xxl_job_log WHERE handle_code BETWEEN 201 AND 2147483647 AND alarm_status = 0 \
    UNION ALL SELECT id FROM xxl_job_log WHERE handle_code = 0 AND alarm_status = 0 \
    AND (trigger_code < 0 OR (trigger_code > 0 AND trigger_code < 200) OR trigger_code > 200)\
    ) f ORDER BY f.id ASC LIMIT ?";
static SET_ALARM: Sql = Sql::new("UPDATE xxl_job_log SET alarm_status = ? WHERE id = ? AND alarm_status = ?");
static INSERT_DUE: Sql = Sql::new("INSERT INTO jobwheel_retry_due (log_id, due_ms) VALUES (?, ?)");
static DUE_IDS: Sql =
    Sql::new("SELECT log_id FROM jobwheel_retry_due WHERE due_ms <= ? ORDER BY due_ms, log_id LIMIT ?");
static DELETE_DUE: Sql = Sql::new("DELETE FROM jobwheel_retry_due WHERE log_id = ?");
/// `alarm_status` of a failed log parked in `jobwheel_retry_due` (upstream uses 0, −1 and 1–3).
const ALARM_DEFERRED: i16 = -2;
/// A row staged for a claim that is still pending was never sent: claim recovery fires or
/// discards it, so it is not "stalled" however old (all admins down for a while). Nor is a row
/// whose claim was taken after the cut-off: a claim fired late keeps its scheduled second as
/// trigger time, and its `/run` may be on its way (`0029_claim_taken`). Correlated on the
/// claim's job (`i_ring_claim_job`), so only the few candidate rows look at claims.
static STALLED_IDS: Sql = Sql::new(
    "SELECT l.id FROM xxl_job_log l \
    WHERE l.trigger_code = 0 AND l.handle_code = 0 AND l.trigger_time <= TS(?) \
    AND NOT EXISTS (SELECT 1 FROM jobwheel_ring_claim c \
    WHERE c.job_id = l.job_id AND c.log_id = l.id AND (c.status = 0 OR c.taken_at_ms > ?)) \
    ORDER BY l.id",
);
/// A range scan of `i_log_group_running` (migration 0015) over the group's running rows.
static RUNNING_AHEAD: Sql = Sql::new(
    "SELECT I64(COUNT(*)) FROM xxl_job_log \
    WHERE job_group = ? AND handle_code = 0 AND trigger_code IN (0, 200) AND id < ? \
    AND trigger_time <= TS(?)",
);
static LOST_IDS: Sql = Sql::new(
    "SELECT t.id FROM xxl_job_log t \
    LEFT JOIN xxl_job_registry t2 ON t.executor_address = t2.registry_value \
    WHERE t.trigger_code = 200 AND t.handle_code = 0 \
    AND t.trigger_time <= TS(?) AND t2.id IS NULL ORDER BY t.id",
);
static RUNNING_AT: Sql = Sql::new(
    "SELECT id, job_group FROM xxl_job_log \
    WHERE executor_address = ? AND trigger_code = 200 AND handle_code = 0 ORDER BY id",
);

fn push_log_filter(q: &mut QueryBuf<'_>, filter: &LogFilter) {
    q.push(" WHERE 1 = 1");
    if let Some(group) = filter.job_group {
        q.push(" AND job_group = ").bind(group);
    }
    if let Some(job) = filter.job_id {
        q.push(" AND job_id = ").bind(job);
    }
    if let Some(from) = filter.trigger_from {
        q.push(" AND trigger_time >= TS(").bind(secs(from)).push(")");
    }
    if let Some(to) = filter.trigger_to {
        q.push(" AND trigger_time <= TS(").bind(secs(to)).push(")");
    }
    if let Some(address) = &filter.executor_address {
        q.push(" AND executor_address ILIKE ").bind(like(address));
    }
    q.push(match filter.status {
        LogStatusFilter::All => "",
        LogStatusFilter::Success => " AND handle_code = 200",
        LogStatusFilter::Failed => " AND (trigger_code NOT IN (0, 200) OR handle_code NOT IN (0, 200))",
        LogStatusFilter::Running => " AND trigger_code = 200 AND handle_code = 0",
    });
}

#[async_trait]
impl LogStore for SqlStore {
    async fn insert_log(&self, log: &NewLog) -> Result<LogId, StoreError> {
        let args = args![log.job_group, log.job_id, secs(log.trigger_time)];
        Ok(LogId(self.ex().insert_id(&INSERT_LOG, &args).await?))
    }

    async fn update_log_trigger(&self, update: &LogTriggerUpdate) -> Result<bool, StoreError> {
        let args = args![
            secs(update.trigger_time),
            update.trigger_code,
            &update.trigger_msg,
            &update.executor_address,
            &update.executor_handler,
            &update.executor_param,
            &update.executor_sharding_param,
            update.executor_fail_retry_count,
            update.log_id,
        ];
        Ok(self.ex().execute(&UPDATE_TRIGGER, &args).await? > 0)
    }

    async fn update_log_triggers(&self, updates: &[LogTriggerUpdate]) -> Result<Vec<bool>, StoreError> {
        self.update_log_triggers_batch(updates).await
    }

    async fn apply_handle_results(&self, results: &[HandleResult]) -> Result<Vec<HandleOutcome>, StoreError> {
        self.apply_handle_results_batch(results).await
    }

    async fn load_log(&self, id: LogId) -> Result<Option<LogRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_LOG, &args![id]).await
    }

    async fn running_ahead(
        &self,
        group: GroupId,
        before: LogId,
        at: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        let count: Option<i64> =
            self.ex().fetch_value(&RUNNING_AHEAD, &args![group, before, secs(at)]).await?;
        Ok(count.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    async fn log_groups(&self, ids: &[LogId]) -> Result<Vec<(LogId, GroupId)>, StoreError> {
        let mut groups = Vec::with_capacity(ids.len());
        // SQLite allows 32 766 parameters; callback batches are at most 1 000 results.
        for chunk in ids.chunks(500) {
            let mut q = QueryBuf::new("SELECT id, job_group FROM xxl_job_log WHERE id IN (");
            q.bind_list(chunk.iter().copied()).push(")");
            groups.extend(self.ex().fetch_all::<(LogId, GroupId)>(&q, q.args()).await?);
        }
        Ok(groups)
    }

    async fn apply_handle_result(&self, result: &HandleResult) -> Result<HandleOutcome, StoreError> {
        // The write lock (SQLite) or the row lock makes check-then-update atomic against a
        // concurrent callback.
        let mut tx = self.db.begin().await?;
        let state: Option<(JobId, i32, Option<String>)> =
            tx.ex().fetch_optional(&HANDLE_STATE, &args![result.log_id]).await?;
        let Some((job_id, code, old_msg)) = state else {
            return Ok(HandleOutcome::NotFound);
        };
        if code > 0 {
            return Ok(HandleOutcome::Repeated);
        }
        let msg = append_handle_msg(old_msg.as_deref(), result.handle_msg.as_deref());
        let update = args![secs(result.handle_time), result.handle_code, msg.as_str(), result.log_id];
        tx.ex().execute(&UPDATE_HANDLE, &update).await?;
        tx.commit().await?;
        Ok(HandleOutcome::Applied(stored_result(result, job_id, msg)))
    }

    async fn complete_log(&self, result: &HandleResult) -> Result<bool, StoreError> {
        let msg = result.handle_msg.clone().map(truncate_handle_msg);
        let args = args![secs(result.handle_time), result.handle_code, msg.as_deref(), result.log_id];
        Ok(self.ex().execute(&UPDATE_HANDLE, &args).await? > 0)
    }

    async fn page_logs(&self, filter: &LogFilter, page: Page) -> Result<Paged<LogRow>, StoreError> {
        let mut count = QueryBuf::new("SELECT COUNT(*) FROM xxl_job_log");
        push_log_filter(&mut count, filter);
        let total: i64 = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut rows = QueryBuf::new(concat!("SELECT ", log_columns!(), " FROM xxl_job_log"));
        push_log_filter(&mut rows, filter);
        rows.push(" ORDER BY id DESC LIMIT ").bind(i64::from(page.limit));
        rows.push(" OFFSET ").bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&rows, rows.args()).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn failed_log_ids(&self, limit: u32) -> Result<Vec<LogId>, StoreError> {
        self.ex().fetch_column(&FAILED_IDS, &args![i64::from(limit)]).await
    }

    async fn claim_alarm(&self, id: LogId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&SET_ALARM, &args![-1_i16, id, 0_i16]).await? > 0)
    }

    async fn defer_failure(&self, id: LogId, due_ms: i64) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        if tx.ex().execute(&SET_ALARM, &args![ALARM_DEFERRED, id, 0_i16]).await? == 0 {
            return Ok(false);
        }
        tx.ex().execute(&INSERT_DUE, &args![id, due_ms]).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn due_failure_ids(&self, now_ms: i64, limit: u32) -> Result<Vec<LogId>, StoreError> {
        self.ex().fetch_column(&DUE_IDS, &args![now_ms, i64::from(limit)]).await
    }

    async fn claim_due_failure(&self, id: LogId) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        let claimed = tx.ex().execute(&SET_ALARM, &args![-1_i16, id, ALARM_DEFERRED]).await? > 0;
        // Deleted either way: a row whose log was claimed elsewhere or deleted is done with.
        // Two admins: the loser's update waits on the winner's row lock, then matches nothing.
        tx.ex().execute(&DELETE_DUE, &args![id]).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    async fn finish_alarm(&self, id: LogId, new_status: i16) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&SET_ALARM, &args![new_status, id, -1_i16]).await? > 0)
    }

    async fn lost_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError> {
        self.ex().fetch_column(&LOST_IDS, &args![secs(trigger_before)]).await
    }

    async fn running_log_ids_at(&self, address: &str) -> Result<Vec<(LogId, GroupId)>, StoreError> {
        self.ex().fetch_all(&RUNNING_AT, &args![address]).await
    }

    async fn stalled_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError> {
        let before_ms = trigger_before.timestamp_millis();
        self.ex().fetch_column(&STALLED_IDS, &args![secs(trigger_before), before_ms]).await
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr as _;

    use sqlx::sqlite::SqliteConnectOptions;
    use sqlx::{ConnectOptions as _, Row as _};

    /// SQLite plans the fail monitor's scan without statistics (the admin never runs `ANALYZE`):
    /// every branch must search an index, never walk `xxl_job_log`, or each pass reads the whole
    /// table (2–3 s every 10 s with two hours of logs at 1 000/s: docs/benchmarks.md).
    #[tokio::test]
    async fn the_fail_scan_searches_indexes_without_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("plan.db").display());
        drop(crate::store::connect(&url).await.unwrap());
        let mut conn = SqliteConnectOptions::from_str(&url).unwrap().connect().await.unwrap();
        let plan: Vec<String> =
            sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {}", super::FAILED_IDS_SQL)))
                .bind(1000_i64)
                .fetch_all(&mut conn)
                .await
                .unwrap()
                .iter()
                .map(|row| row.get::<String, _>("detail"))
                .collect();
        let reads: Vec<&String> = plan.iter().filter(|d| d.contains("xxl_job_log")).collect();
        assert_eq!(reads.len(), 4, "{plan:?}");
        assert!(
            reads.iter().all(|d| d.starts_with("SEARCH xxl_job_log USING INDEX I_handle_code")),
            "{plan:?}"
        );
    }
}
