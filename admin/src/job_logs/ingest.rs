//! A shipped batch into stored pieces. The admin files each piece under the log row it names,
//! with that row's job and trigger time (never what the executor claims), keeps only pieces of
//! logs in the caller's groups, and stores at most [`MAX_STORED_LOG_BYTES`] of one run's log,
//! so an executor (or a stolen token) cannot write into other groups' logs or fill the
//! database through one run.

use std::collections::HashMap;

use jobwheel_protocol::log_ship::LogBatch;

use crate::store::{GroupId, LogId, NewLogPiece, Store, StoreError};

/// Most text kept of one run's log: an executor's default `--max-log-bytes`.
pub const MAX_STORED_LOG_BYTES: i64 = 64 * 1024 * 1024;

/// What became of a batch.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Ingested {
    /// Pieces stored now.
    pub stored: u64,
    /// Pieces of logs that do not exist or are not of the caller's groups, dropped.
    pub foreign: usize,
    /// Pieces cut or dropped at [`MAX_STORED_LOG_BYTES`].
    pub capped: usize,
}

/// Stores the pieces of `batch` whose logs exist and are of a group `allowed` accepts.
///
/// # Errors
/// A database error: nothing of the batch may be stored, and the executor sends it again.
pub async fn ingest(
    store: &dyn Store,
    batch: LogBatch,
    allowed: &(dyn Fn(GroupId) -> bool + Send + Sync),
) -> Result<Ingested, StoreError> {
    let mut ids: Vec<LogId> = batch.pieces.iter().map(|p| LogId(p.log_id)).collect();
    ids.sort_unstable();
    ids.dedup();
    let owners: HashMap<LogId, _> = store
        .log_owners(&ids)
        .await?
        .into_iter()
        .filter(|o| allowed(o.job_group))
        .map(|o| (o.log_id, o))
        .collect();
    let owned: Vec<LogId> = owners.keys().copied().collect();
    let mut used: HashMap<LogId, i64> = store.log_piece_bytes(&owned).await?.into_iter().collect();
    let mut report = Ingested::default();
    let mut pieces = Vec::with_capacity(batch.pieces.len());
    for piece in batch.pieces {
        let Some(owner) = owners.get(&LogId(piece.log_id)) else {
            report.foreign += 1;
            continue;
        };
        let used = used.entry(owner.log_id).or_insert(0);
        let room = MAX_STORED_LOG_BYTES - *used;
        let len = i64::try_from(piece.text.len()).unwrap_or(i64::MAX);
        let text = if len <= room {
            piece.text
        } else if room <= 0 {
            report.capped += 1;
            if !piece.last {
                continue;
            }
            String::new()
        } else {
            report.capped += 1;
            capped(&piece.text, usize::try_from(room).unwrap_or(0))
        };
        *used += i64::try_from(text.len()).unwrap_or(i64::MAX);
        pieces.push(NewLogPiece { owner: *owner, stamp: piece.stamp, text, last: piece.last });
    }
    if !pieces.is_empty() {
        report.stored = store.put_log_pieces(&pieces).await?;
    }
    Ok(report)
}

/// The whole lines of `text` that fit in `room` bytes, and a line saying the rest was dropped.
fn capped(text: &str, room: usize) -> String {
    let note = format!(
        "[jobwheel] the admin keeps at most {MAX_STORED_LOG_BYTES} bytes of a run's log; the rest was dropped\n"
    );
    let keep = room.saturating_sub(note.len());
    let cut = text[..text.floor_char_boundary(keep.min(text.len()))].rfind('\n').map_or(0, |i| i + 1);
    format!("{}{note}", &text[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_piece_keeps_whole_lines_and_says_so() {
        let text = "line one\nline two\nline three\n".repeat(20);
        let kept = capped(&text, 200);
        assert!(kept.len() <= 200, "{}", kept.len());
        assert!(kept.ends_with("the rest was dropped\n"));
        assert!(kept.lines().filter(|l| !l.starts_with("[jobwheel]")).all(|l| l.starts_with("line ")));
    }
}
