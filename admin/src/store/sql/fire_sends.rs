//! `jobwheel_fire_send` (migration 0032): exactly-once sends, recorded before each `/run`.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::{DueSend, FireSend, FireSendStore, LogId, StoreError};

// A plain insert on every backend: the row exists already when another admin took the fire
// first, which surfaces as a unique violation (see `wasm.rs` on `INSERT IGNORE`).
static RECORD: Sql = Sql::new(
    "INSERT INTO jobwheel_fire_send (log_id, job_id, address, sent_at_ms, attempts, param) \
    VALUES (?, ?, ?, ?, 1, ?)",
);
/// `i_fire_send_sent` bounds the scan; the log is read by its primary key.
static DUE: Sql = Sql::new(
    "SELECT s.log_id, s.job_id, s.address, s.sent_at_ms, s.attempts, s.param, l.trigger_code, l.handle_code \
    FROM jobwheel_fire_send s LEFT JOIN xxl_job_log l ON l.id = s.log_id \
    WHERE s.sent_at_ms < ? ORDER BY s.sent_at_ms, s.log_id LIMIT ?",
);
static TAKE: Sql = Sql::new(
    "UPDATE jobwheel_fire_send SET sent_at_ms = ?, attempts = attempts + 1 \
    WHERE log_id = ? AND sent_at_ms = ?",
);
static RESENT: Sql = Sql::new(
    "UPDATE xxl_job_log SET trigger_code = ?, executor_address = ?, trigger_msg = ? \
    WHERE id = ? AND trigger_code = 0",
);

#[async_trait]
impl FireSendStore for SqlStore {
    async fn record_send(&self, send: &FireSend) -> Result<bool, StoreError> {
        let args = args![send.log_id, send.job_id, &send.address, send.sent_at_ms, &send.param];
        match self.ex().execute(&RECORD, &args).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_duplicate() => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn sends_due(&self, sent_before_ms: i64, limit: u32) -> Result<Vec<DueSend>, StoreError> {
        self.ex().fetch_all(&DUE, &args![sent_before_ms, i64::from(limit)]).await
    }

    async fn take_send(&self, log_id: LogId, seen_sent_at_ms: i64, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&TAKE, &args![now_ms, log_id, seen_sent_at_ms]).await? > 0)
    }

    async fn forget_sends(&self, log_ids: &[LogId]) -> Result<u64, StoreError> {
        if log_ids.is_empty() {
            return Ok(0);
        }
        let mut q = QueryBuf::new("DELETE FROM jobwheel_fire_send WHERE log_id IN (");
        q.bind_list(log_ids.iter().copied()).push(")");
        self.ex().execute(&q, q.args()).await
    }

    async fn record_resent(
        &self,
        log_id: LogId,
        trigger_code: i32,
        address: &str,
        trigger_msg: &str,
    ) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&RESENT, &args![trigger_code, address, trigger_msg, log_id]).await? > 0)
    }
}
