//! The store's log area: trigger logs on the trigger and callback paths and in the monitors,
//! and log housekeeping (the dashboard report, log deletion).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{
    GroupId, HandleOutcome, HandleResult, LogClear, LogCounts, LogFilter, LogId, LogReport, LogReportRow,
    LogReportTotals, LogRow, LogTriggerUpdate, NewLog, Page, Paged, StoreError,
};

/// Trigger logs (`xxl_job_log`): the trigger and callback paths, the fail and lost monitors.
#[async_trait]
pub trait LogStore: Send + Sync {
    /// Inserts a log row with `trigger_code = 0`, `handle_code = 0` (manual, retry and child
    /// triggers; ring triggers use [`ScheduleStore::consume_claim_and_insert_log`]).
    async fn insert_log(&self, log: &NewLog) -> Result<LogId, StoreError>;
    /// Upstream `updateTriggerInfo`; false if the row does not exist.
    async fn update_log_trigger(&self, update: &LogTriggerUpdate) -> Result<bool, StoreError>;
    /// [`LogStore::update_log_trigger`] for many rows at once; answers in input order. The
    /// default updates them one by one.
    async fn update_log_triggers(&self, updates: &[LogTriggerUpdate]) -> Result<Vec<bool>, StoreError> {
        let mut out = Vec::with_capacity(updates.len());
        for update in updates {
            out.push(self.update_log_trigger(update).await?);
        }
        Ok(out)
    }
    /// One log row.
    async fn load_log(&self, id: LogId) -> Result<Option<LogRow>, StoreError>;
    /// The runs of `group` in flight ahead of log `before`: its logs with a smaller id that have
    /// no result yet and whose trigger did not fail (`handle_code = 0`, `trigger_code` 0 or 200),
    /// and whose trigger time is not after `at` — a log row staged by the pre-read for a later
    /// second (docs/engine.md, "Pre-staged firing") is not in flight yet.
    async fn running_ahead(
        &self,
        group: GroupId,
        before: LogId,
        at: DateTime<Utc>,
    ) -> Result<u64, StoreError>;
    /// The group of each of `ids` that exists, as `(log, group)` pairs.
    async fn log_groups(&self, ids: &[LogId]) -> Result<Vec<(LogId, GroupId)>, StoreError>;
    /// Applies a callback (or a lost/kill result) with upstream's repeat guard: only a row with
    /// `handle_code = 0` changes; its message becomes `old + "<br>" + new`, cut to
    /// [`MAX_HANDLE_MSG_CHARS`](super::MAX_HANDLE_MSG_CHARS). Atomic against concurrent results for the same log.
    async fn apply_handle_result(&self, result: &HandleResult) -> Result<HandleOutcome, StoreError>;
    /// [`LogStore::apply_handle_result`] for a batch of callbacks, in input order: a log listed
    /// twice is applied once and repeated after. The default applies them one by one.
    async fn apply_handle_results(&self, results: &[HandleResult]) -> Result<Vec<HandleOutcome>, StoreError> {
        let mut out = Vec::with_capacity(results.len());
        for result in results {
            out.push(self.apply_handle_result(result).await?);
        }
        Ok(out)
    }
    /// Upstream `complete()`'s final write: sets handle time, code and message (cut to
    /// [`MAX_HANDLE_MSG_CHARS`](super::MAX_HANDLE_MSG_CHARS)) without a guard; false if the row does not exist.
    async fn complete_log(&self, result: &HandleResult) -> Result<bool, StoreError>;
    /// A page of logs matching `filter`, newest id first.
    async fn page_logs(&self, filter: &LogFilter, page: Page) -> Result<Paged<LogRow>, StoreError>;
    /// Upstream `findFailJobLogIds`: failed logs with `alarm_status = 0`, by id, at most `limit`.
    async fn failed_log_ids(&self, limit: u32) -> Result<Vec<LogId>, StoreError>;
    /// Takes a failed log for retry/alarm: `alarm_status` 0 → −1. False if another admin won.
    async fn claim_alarm(&self, id: LogId) -> Result<bool, StoreError>;
    /// jobwheel: parks a failed log until its retry is due: `alarm_status` 0 → −2 and a
    /// `jobwheel_retry_due` row at `due_ms`, in one transaction. False if another admin took it.
    async fn defer_failure(&self, id: LogId, due_ms: i64) -> Result<bool, StoreError>;
    /// jobwheel: parked failed logs whose retry is due at or before `now_ms`, earliest first, at
    /// most `limit` (a range scan of `i_retry_due`).
    async fn due_failure_ids(&self, now_ms: i64, limit: u32) -> Result<Vec<LogId>, StoreError>;
    /// jobwheel: takes a parked log for retry/alarm: `alarm_status` −2 → −1 and its due row
    /// deleted, in one transaction. False if another admin won (or the log is gone: its due row
    /// is deleted then too).
    async fn claim_due_failure(&self, id: LogId) -> Result<bool, StoreError>;
    /// Ends the alarm: `alarm_status` −1 → `new_status` (1, 2 or 3). False if not locked.
    async fn finish_alarm(&self, id: LogId, new_status: i16) -> Result<bool, StoreError>;
    /// Upstream `findLostJobIds`: running logs (trigger 200, handle 0) triggered at or before
    /// `trigger_before` whose executor address has no registry row.
    async fn lost_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError>;
    /// jobwheel: running logs (trigger 200, handle 0) sent to `address`, with their groups, by id
    /// (checked with the executor after it restarted on that address).
    async fn running_log_ids_at(&self, address: &str) -> Result<Vec<(LogId, GroupId)>, StoreError>;
    /// jobwheel: logs whose trigger never got an executor's answer (trigger code 0, no result)
    /// triggered at or before `trigger_before`, by id — their admin stopped between writing the
    /// row and the `/run` reply. A row staged for a still-pending claim is not one of them, nor
    /// one whose claim was taken after `trigger_before` (a late fire, still on its way).
    async fn stalled_log_ids(&self, trigger_before: DateTime<Utc>) -> Result<Vec<LogId>, StoreError>;
}

/// Log housekeeping: the dashboard report (`xxl_job_log_report`) and log deletion.
#[async_trait]
pub trait LogReportStore: Send + Sync {
    /// Deletes logs matching `clear` in batches of 1 000 ids; the number deleted.
    async fn clear_logs(&self, clear: &LogClear) -> Result<u64, StoreError>;
    /// Upstream `findLogReport` over `trigger_time` in `[from, to]`.
    async fn log_counts(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<LogCounts, StoreError>;
    /// jobwheel: the log epoch (`0030_log_epoch`), moved after every deletion of logs.
    async fn log_epoch(&self) -> Result<i64, StoreError>;
    /// jobwheel: the highest log id (0 when there are none).
    async fn top_log_id(&self) -> Result<LogId, StoreError>;
    /// jobwheel: the distinct trigger times, in epoch seconds, of the logs with an id above `id`.
    async fn trigger_secs_after(&self, id: LogId) -> Result<Vec<i64>, StoreError>;
    /// Inserts or updates the report row of `report.trigger_day`.
    async fn upsert_log_report(&self, report: &LogReport) -> Result<(), StoreError>;
    /// Report rows with `trigger_day` in `[from, to]`, by day.
    async fn log_reports(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<LogReportRow>, StoreError>;
    /// Sums over all report rows.
    async fn log_report_totals(&self) -> Result<LogReportTotals, StoreError>;
}
