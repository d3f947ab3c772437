//! `jobwheel_log_piece` (migration 0036): shipped job log text (`store/log_piece_store.rs`).

use std::collections::HashSet;

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::log_piece_store::{RawPiece, encode_body};
use crate::store::{JobId, LogCursor, LogId, LogOwner, LogPieceRow, LogPieceStore, NewLogPiece, StoreError};

/// A resend racing its first copy on another admin meets the row: the update writes what the
/// row holds already. (A plain insert would abort PostgreSQL's transaction on the duplicate.)
static PUT_PIECE: Sql = Sql::new(
    "INSERT INTO jobwheel_log_piece (log_id, stamp, job_id, log_time, line_count, text_bytes, codec, last, body) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (log_id, stamp) DO UPDATE SET last = excluded.last",
);
static PIECES_OF_LOG: Sql = Sql::new(
    "SELECT log_id, stamp, log_time, line_count, text_bytes, codec, last, body FROM jobwheel_log_piece \
    WHERE log_id = ? ORDER BY stamp",
);
/// `i_log_piece_job` read backwards from the range's end: no sort, whatever the log volume.
static FIRST_PIECES: Sql = Sql::new(
    "SELECT log_id, stamp, log_time, line_count, text_bytes, codec, last, body FROM jobwheel_log_piece \
    WHERE job_id = ? AND log_time >= ? AND log_time < ? \
    ORDER BY log_time DESC, log_id DESC, stamp DESC LIMIT ?",
);
static NEXT_PIECES: Sql = Sql::new(
    "SELECT log_id, stamp, log_time, line_count, text_bytes, codec, last, body FROM jobwheel_log_piece \
    WHERE job_id = ? AND log_time >= ? AND log_time <= ? AND (log_time < ? OR log_id < ?) \
    ORDER BY log_time DESC, log_id DESC, stamp DESC LIMIT ?",
);

/// SQLite allows 32 766 parameters; a batch names at most a few thousand logs.
const IDS_PER_QUERY: usize = 500;

#[async_trait]
impl LogPieceStore for SqlStore {
    async fn log_owners(&self, logs: &[LogId]) -> Result<Vec<LogOwner>, StoreError> {
        let mut owners = Vec::with_capacity(logs.len());
        for chunk in logs.chunks(IDS_PER_QUERY) {
            let mut q = QueryBuf::new(
                "SELECT id AS log_id, job_group, job_id, \
                 I64(COALESCE(EPOCH(trigger_time), 0) * 1000) AS trigger_ms FROM xxl_job_log WHERE id IN (",
            );
            q.bind_list(chunk.iter().copied()).push(")");
            owners.extend(self.ex().fetch_all::<LogOwner>(&q, q.args()).await?);
        }
        Ok(owners)
    }

    async fn log_piece_bytes(&self, logs: &[LogId]) -> Result<Vec<(LogId, i64)>, StoreError> {
        let mut bytes = Vec::with_capacity(logs.len());
        for chunk in logs.chunks(IDS_PER_QUERY) {
            let mut q = QueryBuf::new(
                "SELECT log_id, I64(SUM(text_bytes)) FROM jobwheel_log_piece WHERE log_id IN (",
            );
            q.bind_list(chunk.iter().copied()).push(") GROUP BY log_id");
            bytes.extend(self.ex().fetch_all::<(LogId, i64)>(&q, q.args()).await?);
        }
        Ok(bytes)
    }

    async fn put_log_pieces(&self, pieces: &[NewLogPiece]) -> Result<u64, StoreError> {
        if pieces.is_empty() {
            return Ok(0);
        }
        let logs: Vec<LogId> = {
            let mut logs: Vec<LogId> = pieces.iter().map(|p| p.owner.log_id).collect();
            logs.sort_unstable();
            logs.dedup();
            logs
        };
        let mut stored: HashSet<(LogId, i64)> = HashSet::new();
        for chunk in logs.chunks(IDS_PER_QUERY) {
            let mut q = QueryBuf::new("SELECT log_id, stamp FROM jobwheel_log_piece WHERE log_id IN (");
            q.bind_list(chunk.iter().copied()).push(")");
            stored.extend(self.ex().fetch_all::<(LogId, i64)>(&q, q.args()).await?);
        }
        let mut tx = self.db.begin().await?;
        let mut new = 0;
        for piece in pieces.iter().filter(|p| !stored.contains(&(p.owner.log_id, p.stamp))) {
            let (codec, body) = encode_body(&piece.text);
            let lines = i32::try_from(bytecount(&piece.text)).unwrap_or(i32::MAX);
            let text_bytes = i32::try_from(piece.text.len()).unwrap_or(i32::MAX);
            let args = args![
                piece.owner.log_id,
                piece.stamp,
                piece.owner.job_id,
                piece.owner.trigger_ms,
                lines,
                text_bytes,
                codec,
                i16::from(piece.last),
                body.as_slice()
            ];
            tx.ex().execute(&PUT_PIECE, &args).await?;
            new += 1;
        }
        tx.commit().await?;
        Ok(new)
    }

    async fn log_pieces(&self, log: LogId) -> Result<Vec<LogPieceRow>, StoreError> {
        let raw: Vec<RawPiece> = self.ex().fetch_all(&PIECES_OF_LOG, &args![log]).await?;
        Ok(raw.into_iter().map(RawPiece::into_row).collect())
    }

    async fn job_log_pieces(
        &self,
        job: JobId,
        from_ms: i64,
        to_ms: i64,
        after: Option<LogCursor>,
        limit: u32,
    ) -> Result<Vec<LogPieceRow>, StoreError> {
        let raw: Vec<RawPiece> = match after {
            None => self.ex().fetch_all(&FIRST_PIECES, &args![job, from_ms, to_ms, i64::from(limit)]).await?,
            Some(after) => {
                let args =
                    args![job, from_ms, after.log_time, after.log_time, after.log_id, i64::from(limit)];
                self.ex().fetch_all(&NEXT_PIECES, &args).await?
            }
        };
        Ok(raw.into_iter().map(RawPiece::into_row).collect())
    }
}

/// Lines in `text` (each piece holds whole lines, each ending in `\n`).
fn bytecount(text: &str) -> usize {
    text.bytes().filter(|b| *b == b'\n').count()
}
