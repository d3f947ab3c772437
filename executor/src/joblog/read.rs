//! Paging a job log for `/log` with upstream's `fromLineNum`/`toLineNum`/`isEnd` semantics.

use std::path::Path;

use jobwheel_protocol::LogResult;

/// Most bytes of log content returned by one `/log` call; the caller pages for the rest.
const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// Returns lines `from_line_num..` (1-based) of the file, each followed by `\n`.
///
/// `toLineNum` is the number of the last line returned; when nothing new is available it is the
/// file's line count (upstream 2.x), which is below `fromLineNum`. Admins of both generations
/// treat `fromLineNum > toLineNum` as "no new lines" and continue from `toLineNum + 1`, so a
/// response capped at [`MAX_CONTENT_BYTES`] pages correctly too. `isEnd` is only ever set for a
/// missing file, like upstream: the admin decides the end from the log's handle code.
pub(crate) async fn read_log(path: &Path, from_line_num: i32) -> LogResult {
    let bytes = match tokio::fs::read(path).await {
        Ok(b) => b,
        Err(_) => {
            return LogResult {
                from_line_num,
                to_line_num: 0,
                log_content: "readLog fail, logFile not exists".to_owned(),
                is_end: true,
            };
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let from = usize::try_from(from_line_num.max(1)).unwrap_or(1);
    let mut content = String::new();
    let mut last_returned = 0usize;
    let mut total = 0usize;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        total = number;
        if number < from || content.len() >= MAX_CONTENT_BYTES {
            continue;
        }
        content.push_str(line);
        content.push('\n');
        last_returned = number;
    }
    let to = if last_returned == 0 { total } else { last_returned };
    LogResult {
        from_line_num,
        to_line_num: i32::try_from(to).unwrap_or(i32::MAX),
        log_content: content,
        is_end: false,
    }
}
