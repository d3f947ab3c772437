//! The store's flight records (`jobwheel_log_flight`, migration 0040; docs/replay.md): one per
//! recorded Wasm run, kept beside its log row and deleted with it. The body is opaque here —
//! the record's JSON, deflated and sealed by the caller (`crate::replay::stored`).

use async_trait::async_trait;

use super::{JobId, LogId, StoreError};

/// A stored flight record.
#[derive(Clone, PartialEq, Eq)]
pub struct FlightRow {
    pub log_id: LogId,
    /// The SHA-256 of the module the run ran, lower-case hex.
    pub module: String,
    /// Whether the run can be replayed.
    pub replayable: bool,
    /// Why not, when it cannot.
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
            .field("module", &self.module)
            .field("replayable", &self.replayable)
            .field("reason", &self.reason)
            .field("record_bytes", &self.record_bytes)
            .finish_non_exhaustive()
    }
}

/// A row as the table holds it: the digest as its 32 bytes.
#[derive(sqlx::FromRow)]
pub(crate) struct RawFlight {
    pub(crate) log_id: LogId,
    pub(crate) module: Vec<u8>,
    pub(crate) replayable: i16,
    pub(crate) reason: Option<String>,
    pub(crate) record_bytes: i32,
    pub(crate) body: Vec<u8>,
}

/// A row with its log's job, for [`FlightStore::flight_page`].
#[derive(sqlx::FromRow)]
pub(crate) struct RawFlightOfJob {
    #[sqlx(flatten)]
    pub(crate) flight: RawFlight,
    pub(crate) job_id: JobId,
}

impl From<RawFlight> for FlightRow {
    fn from(raw: RawFlight) -> Self {
        FlightRow {
            log_id: raw.log_id,
            module: hex::encode(raw.module),
            replayable: raw.replayable != 0,
            reason: raw.reason,
            record_bytes: raw.record_bytes,
            body: raw.body,
        }
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
    /// The newest runs of `job` that have a record, up to `limit`, newest first: each log and
    /// its trigger time (epoch ms). Read through `xxl_job_log`'s job index.
    async fn job_flights(&self, job: JobId, limit: u32) -> Result<Vec<(LogId, i64)>, StoreError>;
    /// Up to `limit` records of logs after `after`, in log order, each with its log's job (a key
    /// rotation re-seals them page by page).
    async fn flight_page(&self, after: LogId, limit: u32) -> Result<Vec<(FlightRow, JobId)>, StoreError>;
    /// Replaces the sealed bodies of records, in one transaction.
    async fn replace_flight_bodies(&self, bodies: &[(LogId, Vec<u8>)]) -> Result<(), StoreError>;
}
