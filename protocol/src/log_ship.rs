//! Job log lines shipped from a jobwheel executor to the admins (`POST /api/logShip`), so a
//! run's log outlives the executor's disk (docs/executor.md, "Logs kept by the admin").
//!
//! A body is one [`LogBatch`] as JSON, gzip-compressed (`Content-Encoding: gzip`). Each
//! [`LogPiece`] is text appended to one run's log, keyed by the run's log id and a stamp the
//! executor draws once per piece (microseconds, strictly increasing within a process): the
//! admin keeps the first copy of a `(logId, stamp)` and orders a log's pieces by stamp, so a
//! batch sent twice — after a timeout, from the spool — is stored once. A piece with `last`
//! set closes the log: nothing more will be written to it.
//!
//! Decoding is bounded twice: the admin reads at most [`MAX_SHIP_BODY`] compressed bytes, and
//! [`decode`] inflates at most [`MAX_SHIP_TEXT`] bytes, so a small body that inflates to
//! gigabytes (a compression bomb) is refused after reading no more than the limit.

use std::io::{Read as _, Write as _};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

/// The admin route, relative to an admin address (which ends in `/`).
pub const LOG_SHIP_PATH: &str = "api/logShip";

/// Most compressed bytes an admin reads of one batch.
pub const MAX_SHIP_BODY: usize = 8 * 1024 * 1024;

/// Most bytes one batch may inflate to; an executor's batches stay far below it.
pub const MAX_SHIP_TEXT: usize = 32 * 1024 * 1024;

/// Text appended to one run's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogPiece {
    pub log_id: i64,
    /// The run's `logDateTime` as the trigger gave it (epoch milliseconds).
    pub log_date_time: i64,
    /// Orders the pieces of one log and makes a resent piece recognizable.
    pub stamp: i64,
    /// Whole lines, each ending in `\n` (may be empty for a piece that only closes the log).
    pub text: String,
    /// Nothing more will be written to this log.
    #[serde(default)]
    pub last: bool,
}

/// One shipment: pieces of any number of runs' logs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogBatch {
    pub pieces: Vec<LogPiece>,
}

/// Why a shipped body was refused.
#[derive(Debug, thiserror::Error)]
pub enum ShipDecodeError {
    #[error("the batch inflates to more than {MAX_SHIP_TEXT} bytes")]
    TooLarge,
    #[error("the batch is not valid gzip: {0}")]
    NotGzip(std::io::Error),
    #[error("the batch is not a log batch: {0}")]
    NotABatch(serde_json::Error),
}

/// `batch` as a request body: JSON, gzip at the fastest level (log text compresses 5–10× even
/// so, and the executor's CPU is the job's).
#[must_use]
pub fn encode(batch: &LogBatch) -> Vec<u8> {
    let json = serde_json::to_vec(batch).unwrap_or_default();
    let mut encoder = GzEncoder::new(Vec::with_capacity(json.len() / 4), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(&json);
    encoder.finish().unwrap_or_default()
}

/// A request body back into a batch, inflating at most [`MAX_SHIP_TEXT`] bytes.
///
/// # Errors
/// [`ShipDecodeError`] for a body that is not gzip, inflates past the limit or is not a batch.
pub fn decode(body: &[u8]) -> Result<LogBatch, ShipDecodeError> {
    let limit = u64::try_from(MAX_SHIP_TEXT).unwrap_or(u64::MAX) + 1;
    let mut json = Vec::new();
    GzDecoder::new(body).take(limit).read_to_end(&mut json).map_err(ShipDecodeError::NotGzip)?;
    if json.len() > MAX_SHIP_TEXT {
        return Err(ShipDecodeError::TooLarge);
    }
    serde_json::from_slice(&json).map_err(ShipDecodeError::NotABatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(log_id: i64, text: &str) -> LogPiece {
        LogPiece { log_id, log_date_time: 1_700_000_000_000, stamp: 7, text: text.into(), last: false }
    }

    #[test]
    fn a_batch_survives_the_round_trip() {
        let batch = LogBatch { pieces: vec![piece(1, "a\nb\n"), LogPiece { last: true, ..piece(2, "") }] };
        assert_eq!(decode(&encode(&batch)).expect("decodes"), batch);
    }

    #[test]
    fn a_compression_bomb_is_refused_at_the_limit() {
        let text = "x".repeat(MAX_SHIP_TEXT + 1);
        let body = encode(&LogBatch { pieces: vec![piece(1, &text)] });
        assert!(body.len() < MAX_SHIP_TEXT / 100, "the bomb is small: {}", body.len());
        assert!(matches!(decode(&body), Err(ShipDecodeError::TooLarge)));
    }

    #[test]
    fn plain_json_is_not_gzip() {
        assert!(matches!(decode(b"{\"pieces\":[]}"), Err(ShipDecodeError::NotGzip(_))));
    }
}
