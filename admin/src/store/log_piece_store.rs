//! The store's shipped job logs (`jobwheel_log_piece`, migration 0036): text executors sent
//! for their runs' logs (`--job-logs both|admin`), kept where every admin reads it and deleted
//! with the log rows (docs/storage.md, "Shipped job logs"). The admin's side is `job_logs/`.
//!
//! Bodies are stored deflated when that saves space; readers get text back. A piece is keyed
//! by its log and the executor's stamp, so a resent piece is stored once.

use std::cell::RefCell;
use std::io::Write as _;

use async_trait::async_trait;
use flate2::write::DeflateEncoder;
use flate2::{Compression, Decompress, FlushDecompress, Status};

use super::{GroupId, JobId, LogId, StoreError};

/// Below this many bytes a body is stored as is: deflate's overhead would eat the saving.
const DEFLATE_FROM: usize = 256;
/// Most text one body may inflate to: what one shipped batch may carry.
const MAX_BODY_TEXT: usize = jobwheel_protocol::log_ship::MAX_SHIP_TEXT;

thread_local! {
    /// One inflater per thread, reset for each body: a search inflates a piece per run, and a
    /// new inflater's window and tables (tens of kilobytes) would cost more than the text.
    static INFLATER: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

/// Who a log row belongs to: what a shipped piece is checked and filed against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct LogOwner {
    pub log_id: LogId,
    pub job_group: GroupId,
    pub job_id: JobId,
    /// The log's trigger time, epoch ms (0 when it has none yet).
    pub trigger_ms: i64,
}

/// A piece to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLogPiece {
    pub owner: LogOwner,
    pub stamp: i64,
    pub text: String,
    pub last: bool,
}

/// A stored piece, its text inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogPieceRow {
    pub log_id: LogId,
    pub stamp: i64,
    /// The log's trigger time, epoch ms.
    pub log_time: i64,
    pub line_count: i32,
    pub text: String,
    pub last: bool,
}

/// A piece as its row holds it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct RawPiece {
    pub(crate) log_id: LogId,
    pub(crate) stamp: i64,
    pub(crate) log_time: i64,
    pub(crate) line_count: i32,
    pub(crate) text_bytes: i32,
    pub(crate) codec: i16,
    pub(crate) last: i16,
    pub(crate) body: Vec<u8>,
}

impl RawPiece {
    /// The row with its text inflated; a body that does not inflate reads as a note saying so.
    pub(crate) fn into_row(self) -> LogPieceRow {
        let text = match self.codec {
            1 => inflate(&self.body, usize::try_from(self.text_bytes).unwrap_or(0))
                .unwrap_or_else(|e| format!("[jobwheel] this part of the log cannot be read: {e}\n")),
            _ => String::from_utf8(self.body)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        };
        LogPieceRow {
            log_id: self.log_id,
            stamp: self.stamp,
            log_time: self.log_time,
            line_count: self.line_count,
            text,
            last: self.last != 0,
        }
    }
}

/// A deflated body back into its `len` bytes of text.
fn inflate(body: &[u8], len: usize) -> Result<String, String> {
    if len > MAX_BODY_TEXT {
        return Err(format!("it claims {len} bytes"));
    }
    let mut out = Vec::with_capacity(len);
    INFLATER.with_borrow_mut(|inflater| {
        inflater.reset(false);
        match inflater.decompress_vec(body, &mut out, FlushDecompress::Finish) {
            Ok(Status::StreamEnd) if out.len() == len => Ok(()),
            Ok(_) => Err(format!("it inflates to other than its {len} bytes")),
            Err(e) => Err(e.to_string()),
        }
    })?;
    Ok(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// `text` as a stored body and its codec: deflated (1) when that pays, else as is (0).
pub(crate) fn encode_body(text: &str) -> (i16, Vec<u8>) {
    if text.len() < DEFLATE_FROM {
        return (0, text.as_bytes().to_vec());
    }
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(text.len() / 4), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(text.as_bytes());
    match encoder.finish() {
        Ok(body) if body.len() < text.len() => (1, body),
        _ => (0, text.as_bytes().to_vec()),
    }
}

/// Where a page of a job's shipped logs starts: below this log, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCursor {
    pub log_time: i64,
    pub log_id: LogId,
}

/// `jobwheel_log_piece`.
#[async_trait]
pub trait LogPieceStore: Send + Sync {
    /// The owners of those of `logs` that exist.
    async fn log_owners(&self, logs: &[LogId]) -> Result<Vec<LogOwner>, StoreError>;
    /// Bytes of text stored so far for each of `logs` that has any.
    async fn log_piece_bytes(&self, logs: &[LogId]) -> Result<Vec<(LogId, i64)>, StoreError>;
    /// Stores `pieces` in one transaction; a piece stored before (same log and stamp) stays as
    /// it was. Returns how many were new.
    async fn put_log_pieces(&self, pieces: &[NewLogPiece]) -> Result<u64, StoreError>;
    /// Every piece of `log`, in stamp order.
    async fn log_pieces(&self, log: LogId) -> Result<Vec<LogPieceRow>, StoreError>;
    /// Up to `limit` pieces of `job`'s logs with a trigger time in `[from_ms, to_ms)`, below the
    /// log `after` if given: newest log first, each log's pieces **last stamp first** (the
    /// order `i_log_piece_job` is read backwards in, so no database sorts). A log may be cut at
    /// the page's end; the caller reads on from the last whole log.
    async fn job_log_pieces(
        &self,
        job: JobId,
        from_ms: i64,
        to_ms: i64,
        after: Option<LogCursor>,
        limit: u32,
    ) -> Result<Vec<LogPieceRow>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw_clone(text: &str) -> RawPiece {
        let (codec, body) = encode_body(text);
        RawPiece {
            log_id: LogId(1),
            stamp: 1,
            log_time: 0,
            line_count: 1,
            text_bytes: 0,
            codec,
            last: 0,
            body,
        }
    }

    #[test]
    fn bodies_round_trip_deflated_or_plain() {
        for text in ["short\n".to_owned(), "a long repeated line of a job log\n".repeat(100)] {
            let (codec, body) = encode_body(&text);
            assert_eq!(codec, i16::from(text.len() >= DEFLATE_FROM));
            let text_bytes = i32::try_from(text.len()).unwrap_or(0);
            let raw = RawPiece {
                log_id: LogId(1),
                stamp: 1,
                log_time: 0,
                line_count: 1,
                text_bytes,
                codec,
                last: 0,
                body,
            };
            assert_eq!(raw.into_row().text, text);
            let lying = RawPiece { text_bytes: text_bytes + 1, ..raw_clone(&text) };
            assert_eq!(
                lying.into_row().text.starts_with("[jobwheel]"),
                codec == 1,
                "a body that disagrees with its length"
            );
        }
    }
}
