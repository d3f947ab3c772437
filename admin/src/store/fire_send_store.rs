//! The store's record of exactly-once sends (`jobwheel_fire_send`, migration 0032): what lets a
//! recovering admin resend a fire whose outcome died with its admin, to the same address
//! (docs/engine.md, "Delivery guarantee"; the engine's side is `engine/resend.rs`).

use async_trait::async_trait;

use super::{JobId, LogId, StoreError};

/// One exactly-once `/run`, recorded before it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireSend {
    /// The log row (and `logId`) of the fire.
    pub log_id: LogId,
    /// Its job.
    pub job_id: JobId,
    /// The executor the `/run` goes to; a resend goes there too.
    pub address: String,
    /// When it was sent (or last resent), epoch ms.
    pub sent_at_ms: i64,
    /// The trigger as sent, JSON, without its grant (secret values are never stored here).
    pub param: String,
}

/// A recorded send old enough to have its outcome, and what its log row says.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DueSend {
    /// The log row.
    pub log_id: LogId,
    /// Its job.
    pub job_id: JobId,
    /// Where the first `/run` went.
    pub address: String,
    /// When it was last sent, epoch ms (a resend takes the row by moving it).
    pub sent_at_ms: i64,
    /// Sends so far.
    pub attempts: i32,
    /// The trigger as sent.
    pub param: String,
    /// The log's `trigger_code` (`None`: the log row is gone).
    pub trigger_code: Option<i32>,
    /// The log's `handle_code`.
    pub handle_code: Option<i32>,
}

impl DueSend {
    /// No outcome and no result: the admin that sent it died before storing what `/run` said.
    pub fn in_doubt(&self) -> bool {
        self.trigger_code == Some(0) && self.handle_code == Some(0)
    }
}

/// `jobwheel_fire_send`.
#[async_trait]
pub trait FireSendStore: Send + Sync {
    /// Records a send before it goes out; false when the fire's row exists already (another
    /// admin holds the right to send it, and this one must not).
    async fn record_send(&self, send: &FireSend) -> Result<bool, StoreError>;
    /// Up to `limit` sends last made before `sent_before_ms`, oldest first, with their logs'
    /// codes.
    async fn sends_due(&self, sent_before_ms: i64, limit: u32) -> Result<Vec<DueSend>, StoreError>;
    /// Takes a send to resend it: moves `sent_at_ms` from what the caller saw to `now_ms` and
    /// counts the attempt; false if another admin moved it first.
    async fn take_send(&self, log_id: LogId, seen_sent_at_ms: i64, now_ms: i64) -> Result<bool, StoreError>;
    /// Deletes the records of `log_ids` (their fires have an outcome, or their logs are gone).
    async fn forget_sends(&self, log_ids: &[LogId]) -> Result<u64, StoreError>;
    /// Stores the outcome of a resend (or, when the run's result arrived first, of the lost
    /// send) on a log row that still has none: `trigger_code`, the address and `trigger_msg`.
    /// False if the row has an outcome already.
    async fn record_resent(
        &self,
        log_id: LogId,
        trigger_code: i32,
        address: &str,
        trigger_msg: &str,
    ) -> Result<bool, StoreError>;
}
