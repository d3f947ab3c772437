//! Small pieces of behaviour every backend shares, so the three implementations cannot drift.

use chrono::DateTime;
use sha2::{Digest, Sha256};

use super::types::{HandleResult, JobId, MAX_HANDLE_MSG_CHARS, StoredResult};

/// Rows per `DELETE … WHERE id IN (…)` when clearing logs, as upstream's `pagesize = 1000`.
pub(crate) const CLEAR_BATCH: u32 = 1_000;

/// Jobs per batched trigger-time `UPDATE` (upstream's `xxl.job.schedule.batchsize` default).
pub(crate) const TRIGGER_UPDATE_BATCH: usize = 100;

/// Upstream's callback message rule: `old + "<br>" + new` when there is an old message.
pub(crate) fn append_handle_msg(old: Option<&str>, new: Option<&str>) -> String {
    let mut msg = String::new();
    if let Some(old) = old {
        msg.push_str(old);
        msg.push_str("<br>");
    }
    if let Some(new) = new {
        msg.push_str(new);
    }
    truncate_handle_msg(msg)
}

/// What [`append_handle_msg`]'s caller wrote for `result` on a log of `job_id`: the time as
/// the column keeps it (whole seconds) and the message as written.
pub(crate) fn stored_result(result: &HandleResult, job_id: JobId, handle_msg: String) -> StoredResult {
    let handle_time =
        DateTime::from_timestamp(result.handle_time.timestamp(), 0).unwrap_or(result.handle_time);
    StoredResult { id: result.log_id, job_id, handle_time, handle_code: result.handle_code, handle_msg }
}

/// Cuts a message to upstream's [`MAX_HANDLE_MSG_CHARS`] characters (not bytes).
pub(crate) fn truncate_handle_msg(mut msg: String) -> String {
    if let Some((cut, _)) = msg.char_indices().nth(MAX_HANDLE_MSG_CHARS) {
        msg.truncate(cut);
    }
    msg
}

/// `%needle%` for the list filters; upstream does not escape `%`/`_` either.
pub(crate) fn like(needle: &str) -> String {
    format!("%{needle}%")
}

/// Lower-case hex SHA-256 of a Wasm module, its identity in `jobwheel_wasm_module`.
pub(crate) fn wasm_digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handle_msg_follows_upstream() {
        assert_eq!(append_handle_msg(None, Some("ok")), "ok");
        assert_eq!(append_handle_msg(Some("a"), Some("b")), "a<br>b");
        assert_eq!(append_handle_msg(Some("a"), None), "a<br>");
        assert_eq!(append_handle_msg(None, None), "");
        let long = "é".repeat(MAX_HANDLE_MSG_CHARS + 5);
        assert_eq!(truncate_handle_msg(long).chars().count(), MAX_HANDLE_MSG_CHARS);
    }
}
