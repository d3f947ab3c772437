//! The replies of executor calls as the engine sees them: upstream's envelope decoded, or
//! upstream's `XxlJobRemotingUtil` message for a call that failed on the way (`code 500`), and
//! the bounds on how much of a reply is read.

use jobwheel_protocol::envelope::{AckEnvelope, Envelope, FAIL_CODE};
use serde::de::DeserializeOwned;

use super::ExecutorReply;

/// The reply of `/run`, `/kill`, `/beat`, `/idleBeat` and `/wasmPrepare`: a small envelope.
pub(super) const ACK_LIMIT: usize = 64 * 1024;
/// A `/log` page: executors send at most 1 MiB of content (jobwheel's page size), JSON-escaped.
pub(super) const LOG_LIMIT: usize = 8 * 1024 * 1024;
/// A `/status` reply: running jobs and queues of one executor.
pub(super) const STATUS_LIMIT: usize = 1024 * 1024;
/// An `/outstanding` reply: at most the log ids asked (20 digits and a comma each).
pub(super) const OUTSTANDING_LIMIT: usize = 8 * 1024 * 1024;
/// How much of a reply that is not an envelope goes into the message (and so `triggerMsg`).
pub(super) const EXCERPT_CHARS: usize = 200;

/// A reply as read: its body, and whether it offered `/runBatch` ([`super::RUN_BATCH_HEADER`]).
pub(super) struct Exchanged {
    pub(super) bytes: Vec<u8>,
    pub(super) offers_batches: bool,
}

/// The envelope in `bytes`, or upstream's message for a reply that is not one.
pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8], url: &str) -> Envelope<T> {
    match serde_json::from_slice::<Envelope<T>>(bytes) {
        Ok(envelope) => envelope,
        Err(_) => Envelope::fail(content_invalid(url, bytes)),
    }
}

/// Upstream's message for a reply that is not what the call answers, with an excerpt of it.
pub(super) fn content_invalid(url: &str, bytes: &[u8]) -> String {
    format!("xxl-job remoting (url={url}) response content invalid({}).", excerpt(bytes))
}

impl From<AckEnvelope> for ExecutorReply {
    fn from(envelope: AckEnvelope) -> Self {
        ExecutorReply { code: envelope.code, msg: envelope.msg }
    }
}

/// Upstream's message for a call that failed on the way (`XxlJobRemotingUtil`'s wording, which
/// users match on in `triggerMsg`).
/// Whether a reply's message is this client's own (the executor was not reached, or its answer
/// could not be read) rather than the executor's: every such message starts with upstream's
/// "xxl-job remoting" (`remoting_error` and the messages beside it), and an executor's never does.
pub fn not_reached(reply: &ExecutorReply) -> bool {
    reply.code != jobwheel_protocol::envelope::SUCCESS_CODE
        && reply.msg.as_deref().is_some_and(|m| m.starts_with("xxl-job remoting"))
}

pub(super) fn remoting_error(error: impl std::fmt::Display, url: &str) -> String {
    format!("xxl-job remoting error({error}), for url : {url}")
}

/// The key an address is known by for its lanes and its batch queue: without a trailing `/`,
/// so `http://h:9999` and `http://h:9999/` share both.
pub(super) fn address_key(address: &str) -> &str {
    address.trim_end_matches('/')
}

/// A failed call's reply.
pub(super) fn fail(msg: String) -> ExecutorReply {
    ExecutorReply { code: FAIL_CODE, msg: Some(msg) }
}

/// The body, or `None` once it passes `limit` bytes (the rest is never read).
pub(super) async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The first [`EXCERPT_CHARS`] characters of a reply, marked when cut.
pub(super) fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() { format!("{head}… ({} bytes)", bytes.len()) } else { head }
}

/// `{address}/{method}` with exactly one `/` between them, so registered addresses with or
/// without a trailing slash, and with a path (`http://host/prefix/`), all work.
pub fn endpoint(address: &str, method: &str) -> String {
    format!("{}/{method}", address_key(address))
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_CHARS, endpoint, excerpt};

    #[test]
    fn excerpts_are_bounded_and_say_how_much_was_cut() {
        assert_eq!(excerpt(b"<html>"), "<html>");
        let long = "x".repeat(10_000);
        let cut = excerpt(long.as_bytes());
        assert!(cut.starts_with(&"x".repeat(EXCERPT_CHARS)));
        assert!(cut.ends_with("… (10000 bytes)"), "{cut}");
    }

    #[test]
    fn endpoint_normalises_the_trailing_slash_and_keeps_paths() {
        assert_eq!(endpoint("http://10.0.0.5:9999/", "run"), "http://10.0.0.5:9999/run");
        assert_eq!(endpoint("http://10.0.0.5:9999", "run"), "http://10.0.0.5:9999/run");
        assert_eq!(endpoint("http://h/prefix/", "idleBeat"), "http://h/prefix/idleBeat");
        assert_eq!(endpoint("http://h/prefix", "log"), "http://h/prefix/log");
    }
}
