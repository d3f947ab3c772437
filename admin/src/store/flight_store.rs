//! The store's flight records (`jobwheel_log_flight`, migration 0040; docs/replay.md): one per
//! recorded Wasm run, kept beside its log row and deleted with it. The body is opaque here —
//! the record's JSON, deflated and sealed by the caller (`crate::replay::stored`).

use async_trait::async_trait;

use super::{JobId, LogId, StoreError};

/// A stored flight record.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FlightRow {
    pub log_id: LogId,
    pub job_id: JobId,
    /// The log's trigger time, epoch ms.
    pub log_time: i64,
    /// The digest of the module the run ran.
    pub module: String,
    /// 1 when the run can be replayed.
    pub replayable: i16,
    /// Why it cannot, when it cannot.
    pub reason: Option<String>,
    /// Bytes of the record's JSON.
    pub record_bytes: i32,
    /// The sealed body.
    pub body: Vec<u8>,
}

// The body stays out of debug output (it is ciphertext, but nobody needs to see it).
impl std::fmt::Debug for FlightRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlightRow")
            .field("log_id", &self.log_id)
            .field("job_id", &self.job_id)
            .field("module", &self.module)
            .field("replayable", &self.replayable)
            .field("reason", &self.reason)
            .field("record_bytes", &self.record_bytes)
            .finish_non_exhaustive()
    }
}

/// `jobwheel_log_flight`.
#[async_trait]
pub trait FlightStore: Send + Sync {
    /// Stores `rows` in one transaction; a row for a log that has one replaces it (a resent
    /// callback carries the same record).
    async fn put_flights(&self, rows: &[FlightRow]) -> Result<(), StoreError>;
    /// The record of `log`, if it has one.
    async fn flight(&self, log: LogId) -> Result<Option<FlightRow>, StoreError>;
    /// The newest records of `job`, up to `limit`, newest first (a what-if replay's runs).
    async fn job_flights(&self, job: JobId, limit: u32) -> Result<Vec<FlightRow>, StoreError>;
}
