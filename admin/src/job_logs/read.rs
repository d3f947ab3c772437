//! One page of a run's log from its stored pieces, with the semantics of an executor's `/log`
//! (`fromLineNum` 1-based; `toLineNum` the last line returned, or the line count when nothing
//! is new; at most [`MAX_CONTENT_BYTES`] a page) so the rolling log and the log page read
//! shipped logs exactly as they read files.

use jobwheel_protocol::LogResult;

use crate::store::LogPieceRow;

/// Most bytes of log content one page returns (an executor's `/log` cap).
const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// How long after its result a run whose executor never closed the log (it died first) is
/// taken as complete.
pub const UNCLOSED_END_MS: i64 = 60_000;

/// Lines `from_line..` of the log in `pieces` (in stamp order). `is_end` is set once nothing is
/// new and the log is over: its executor closed it, or `closed_by_result` (the run's result came
/// long enough ago that nothing more will be sent).
pub fn page(pieces: &[LogPieceRow], from_line: i32, closed_by_result: bool) -> LogResult {
    let from = usize::try_from(from_line.max(1)).unwrap_or(1);
    let mut content = String::new();
    let mut last_returned = 0usize;
    let mut total = 0usize;
    for piece in pieces {
        let lines = usize::try_from(piece.line_count).unwrap_or(0);
        if total + lines < from || content.len() >= MAX_CONTENT_BYTES {
            total += lines;
            continue;
        }
        for line in piece.text.split_inclusive('\n') {
            total += 1;
            if total < from || content.len() >= MAX_CONTENT_BYTES {
                continue;
            }
            content.push_str(line);
            last_returned = total;
        }
    }
    let closed = pieces.iter().any(|p| p.last) || closed_by_result;
    let to = if last_returned == 0 { total } else { last_returned };
    LogResult {
        from_line_num: from_line,
        to_line_num: i32::try_from(to).unwrap_or(i32::MAX),
        log_content: content,
        is_end: last_returned == 0 && from > total && closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LogId;

    fn piece(stamp: i64, text: &str, last: bool) -> LogPieceRow {
        let line_count = i32::try_from(text.matches('\n').count()).unwrap_or(0);
        LogPieceRow { log_id: LogId(1), stamp, log_time: 0, line_count, text: text.into(), last }
    }

    #[test]
    fn pages_follow_the_executors_log_semantics() {
        let pieces = [piece(1, "a\nb\n", false), piece(2, "c\n", false)];
        let all = page(&pieces, 1, false);
        assert_eq!((all.log_content.as_str(), all.to_line_num, all.is_end), ("a\nb\nc\n", 3, false));
        let rest = page(&pieces, 3, false);
        assert_eq!((rest.log_content.as_str(), rest.to_line_num), ("c\n", 3));
        let nothing = page(&pieces, 4, false);
        assert_eq!((nothing.log_content.as_str(), nothing.to_line_num, nothing.is_end), ("", 3, false));
        let closed = [piece(1, "a\nb\n", false), piece(2, "c\n", true)];
        assert!(page(&closed, 4, false).is_end, "closed and read to its end");
        assert!(!page(&closed, 3, false).is_end, "a line was still returned");
        assert!(page(&pieces, 4, true).is_end, "over by its result");
    }
}
