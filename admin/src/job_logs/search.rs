//! Text search over the stored logs of one job's runs within a time range (the runs' trigger
//! times), newest run first, each run's lines in order: the API's
//! `GET /api/v1/jobs/{id}/log-search`, the log page's search box and MCP's `search_job_logs`.
//!
//! Matching is a substring test, ASCII case-insensitive, on each line (what `grep -iF` does).
//! A page ends at [`LogSearch::limit`] matches or after [`SCAN_BUDGET`] of scanning, and says
//! where the next one starts: the cost of one request is bounded whatever the log volume.
//! Pieces are read 250, then 500, … up to 2 000 at a time through `i_log_piece_job` (read backwards: no sort), inflated
//! and scanned whole with `memchr`'s memmem (no per-line work until a piece matches).

use std::time::{Duration, Instant};

use memchr::memmem::Finder;
use serde::Serialize;

use crate::store::{JobId, LogCursor, LogId, LogPieceRow, Store, StoreError};

/// Most matches one page may ask for.
pub const MAX_MATCHES: usize = 1000;
/// Longest stretch of scanning one request does before it answers with a cursor.
const SCAN_BUDGET: Duration = Duration::from_secs(3);
/// Pieces read per round trip (a run of a few lines is one piece): the first read is small, so
/// a common text answers at once; each next one twice as large, up to the last.
const PIECES_PER_READ: [u32; 4] = [250, 500, 1000, 2000];
/// Longest line returned in a match; longer lines are cut (the log page shows them whole).
const MAX_LINE_CHARS: usize = 2000;

/// A search request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSearch {
    pub job: JobId,
    /// The text to find, as typed (compared ASCII case-insensitively).
    pub text: String,
    /// Runs triggered at or after, epoch ms.
    pub from_ms: i64,
    /// Runs triggered before, epoch ms.
    pub to_ms: i64,
    /// Most matches in this page (1..=[`MAX_MATCHES`]).
    pub limit: usize,
    /// Where this page starts: the previous page's `next`.
    pub after: Option<SearchCursor>,
}

/// A position in a search: a run and the last line already reported in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchCursor {
    pub log_time: i64,
    pub log_id: LogId,
    pub line: u32,
}

impl SearchCursor {
    /// The cursor as the API hands it out: `{logTime}.{logId}.{line}`.
    pub fn token(self) -> String {
        format!("{}.{}.{}", self.log_time, self.log_id.0, self.line)
    }

    /// A token back into a cursor.
    pub fn parse(token: &str) -> Option<Self> {
        let mut parts = token.split('.');
        let cursor = Self {
            log_time: parts.next()?.parse().ok()?,
            log_id: LogId(parts.next()?.parse().ok()?),
            line: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogMatch {
    pub log_id: i64,
    /// The run's trigger time, epoch ms.
    pub trigger_time: i64,
    /// 1-based, as the rolling log numbers lines.
    pub line_num: u32,
    pub line: String,
}

/// One page of results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    pub matches: Vec<LogMatch>,
    /// Runs and lines scanned for this page.
    pub scanned_runs: u64,
    pub scanned_lines: u64,
    /// Where the next page starts; `None`: the range is searched to its end.
    pub next: Option<String>,
}

/// One page of `search`'s results.
///
/// # Errors
/// A database error.
pub async fn search(store: &dyn Store, search: &LogSearch) -> Result<SearchPage, StoreError> {
    let started = Instant::now();
    let needle = search.text.to_ascii_lowercase();
    let finder = Finder::new(needle.as_bytes());
    let limit = search.limit.clamp(1, MAX_MATCHES);
    let mut page = SearchPage { matches: Vec::new(), scanned_runs: 0, scanned_lines: 0, next: None };
    let mut after = None;
    let mut lowered = Vec::new();
    if let Some(cursor) = search.after {
        // The run the last page stopped in, from the line after its last match.
        let pieces = store.log_pieces(cursor.log_id).await?;
        let run = LogCursor { log_time: cursor.log_time, log_id: cursor.log_id };
        if let Some(stop) = scan_run(&finder, &mut lowered, run, &pieces, cursor.line, limit, &mut page) {
            page.next = Some(stop.token());
            return Ok(page);
        }
        after = Some(run);
    }
    for read in 0.. {
        let want = PIECES_PER_READ[read.min(PIECES_PER_READ.len() - 1)];
        let rows = store.job_log_pieces(search.job, search.from_ms, search.to_ms, after, want).await?;
        let full = rows.len() >= usize::try_from(want).unwrap_or(usize::MAX);
        // Consecutive rows of one log, newest log first (its pieces come last stamp first).
        let mut runs: Vec<(LogCursor, Vec<LogPieceRow>)> = Vec::new();
        for row in rows {
            match runs.last_mut() {
                Some((run, pieces)) if run.log_id == row.log_id => pieces.push(row),
                _ => runs.push((LogCursor { log_time: row.log_time, log_id: row.log_id }, vec![row])),
            }
        }
        if full && let Some((cut, _)) = runs.pop() {
            // The page ended inside this log: the next read starts with it whole, unless it
            // filled the page alone — then it is read whole here.
            if runs.is_empty() {
                let mut whole = store.log_pieces(cut.log_id).await?;
                whole.reverse();
                runs.push((cut, whole));
            }
        }
        let Some(&(oldest, _)) = runs.last() else { return Ok(page) };
        for (run, mut pieces) in runs {
            pieces.reverse();
            if let Some(stop) = scan_run(&finder, &mut lowered, run, &pieces, 0, limit, &mut page) {
                page.next = Some(stop.token());
                return Ok(page);
            }
            if started.elapsed() >= SCAN_BUDGET {
                let stop = SearchCursor { log_time: run.log_time, log_id: run.log_id, line: u32::MAX };
                page.next = Some(stop.token());
                return Ok(page);
            }
        }
        after = Some(oldest);
    }
    Ok(page)
}

/// Scans one run's lines after `after_line`, adding matches to `page`; returns where to resume
/// if the page filled up.
fn scan_run(
    finder: &Finder<'_>,
    lowered: &mut Vec<u8>,
    run: LogCursor,
    pieces: &[LogPieceRow],
    after_line: u32,
    limit: usize,
    page: &mut SearchPage,
) -> Option<SearchCursor> {
    page.scanned_runs += 1;
    let mut first_line: u32 = 1;
    for piece in pieces {
        let lines = u32::try_from(piece.line_count).unwrap_or(0);
        page.scanned_lines += u64::from(lines);
        let piece_end = first_line.saturating_add(lines);
        if piece_end <= after_line.saturating_add(1) {
            first_line = piece_end;
            continue;
        }
        // One buffer for every piece: a search lowers a piece per run.
        lowered.clear();
        lowered.extend_from_slice(piece.text.as_bytes());
        lowered.make_ascii_lowercase();
        let bytes = lowered.as_slice();
        // Lines counted so far in this piece, and the byte where the next count starts.
        let (mut line, mut counted_to) = (first_line, 0usize);
        let mut from = 0usize;
        while let Some(found) = finder.find(&bytes[from..]) {
            let at = from + found;
            line += u32::try_from(memchr::memchr_iter(b'\n', &bytes[counted_to..at]).count()).unwrap_or(0);
            counted_to = at;
            let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i);
            if line > after_line {
                let text = &piece.text[start..end];
                page.matches.push(LogMatch {
                    log_id: run.log_id.0,
                    trigger_time: run.log_time,
                    line_num: line,
                    line: text.chars().take(MAX_LINE_CHARS).collect(),
                });
                if page.matches.len() >= limit {
                    return Some(SearchCursor { log_time: run.log_time, log_id: run.log_id, line });
                }
            }
            // The next match is on a later line.
            from = end + 1;
            if from >= bytes.len() {
                break;
            }
        }
        first_line = piece_end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(text: &str) -> LogPieceRow {
        let line_count = i32::try_from(text.matches('\n').count()).unwrap_or(0);
        LogPieceRow { log_id: LogId(9), stamp: 1, log_time: 5, line_count, text: text.into(), last: false }
    }

    #[test]
    fn lines_are_matched_once_numbered_and_resumed() {
        let pieces = [piece("alpha\nBeta error\n"), piece("gamma\nerror: two Error\ndelta\nerror\n")];
        let finder = Finder::new(b"error");
        let run = LogCursor { log_time: 5, log_id: LogId(9) };
        let mut page = SearchPage { matches: Vec::new(), scanned_runs: 0, scanned_lines: 0, next: None };
        assert_eq!(scan_run(&finder, &mut Vec::new(), run, &pieces, 0, 10, &mut page), None);
        let lines: Vec<u32> = page.matches.iter().map(|m| m.line_num).collect();
        assert_eq!(lines, vec![2, 4, 6], "one match per line, numbered across pieces");
        assert_eq!(page.matches[1].line, "error: two Error");
        let mut first = SearchPage { matches: Vec::new(), scanned_runs: 0, scanned_lines: 0, next: None };
        let stop = scan_run(&finder, &mut Vec::new(), run, &pieces, 0, 2, &mut first).expect("page full");
        assert_eq!(stop.line, 4);
        let mut rest = SearchPage { matches: Vec::new(), scanned_runs: 0, scanned_lines: 0, next: None };
        assert_eq!(scan_run(&finder, &mut Vec::new(), run, &pieces, stop.line, 2, &mut rest), None);
        assert_eq!(rest.matches.iter().map(|m| m.line_num).collect::<Vec<_>>(), vec![6]);
        assert_eq!(SearchCursor::parse(&stop.token()), Some(stop));
        assert_eq!(SearchCursor::parse("1.2"), None);
    }
}
