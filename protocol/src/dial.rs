//! The dial-out channel (docs/executor.md, "Dial-out executors"): an executor with no executor
//! API port opens a WebSocket to each admin (`GET /api/dial`, authenticated like `/api/registry`)
//! and registers an address of the form `dial://{appname}/{instance}`. The admin sends the
//! executor API's calls (`/run`, `/kill`, `/log`, `/beat`, `/idleBeat`, …) down that socket.
//!
//! Each call is one binary message: a JSON header ([`DialCall`]), a newline, then the body the
//! HTTP call would carry; each answer likewise ([`DialAnswer`]), carrying the call's id. The body
//! stays raw bytes so the executor hands it to the same dispatch as an HTTP request and no JSON
//! is escaped twice.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The admin's route a dial-out executor connects to.
pub const DIAL_PATH: &str = "/api/dial";

/// The request header naming the address the connecting executor registers (`dial://…`).
pub const DIAL_ADDRESS_HEADER: &str = "X-Jobwheel-Dial-Address";

/// The request header carrying the connecting process's own random key: a later socket of the
/// same process (after a network break the admin has not noticed yet) presents it to replace
/// the stale one; any other socket for a held address is refused.
pub const DIAL_KEY_HEADER: &str = "X-Jobwheel-Dial-Key";

/// The scheme of a dial-out executor's address.
pub const DIAL_SCHEME: &str = "dial://";

/// Longest accepted instance part of a dial address.
const MAX_INSTANCE: usize = 64;

/// A call from the admin, in front of its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialCall {
    /// Echoed in the answer.
    pub id: u64,
    /// The executor API's method, e.g. `run` (the path without its `/`).
    pub method: String,
    /// What the HTTP call would send as `XXL-JOB-ACCESS-TOKEN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// What the HTTP call would send as `XXL-JOB-APPNAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_name: Option<String>,
}

/// An answer from the executor, in front of its body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DialAnswer {
    /// The call's id.
    pub id: u64,
    /// The HTTP status the executor API would have answered with.
    pub status: u16,
    /// Whether the reply offered `/runBatch` ([`crate::RUN_BATCH_HEADER`]).
    #[serde(default)]
    pub run_batch: bool,
}

/// Why a message is not a call or an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialFrameError {
    /// No newline after the header.
    NoHeader,
    /// The header is not the expected JSON.
    BadHeader(String),
}

impl std::fmt::Display for DialFrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoHeader => f.write_str("a dial message has no header line"),
            Self::BadHeader(e) => write!(f, "a dial message's header is not valid: {e}"),
        }
    }
}

impl std::error::Error for DialFrameError {}

/// One message: `header` as JSON, a newline, `body`.
pub fn encode<H: Serialize>(header: &H, body: &[u8]) -> Vec<u8> {
    // A derived Serialize of plain fields cannot fail.
    let mut message = serde_json::to_vec(header).unwrap_or_default();
    message.reserve(body.len() + 1);
    message.push(b'\n');
    message.extend_from_slice(body);
    message
}

/// The header and body of one message.
pub fn decode<H: DeserializeOwned>(message: &[u8]) -> Result<(H, &[u8]), DialFrameError> {
    let split = message.iter().position(|b| *b == b'\n').ok_or(DialFrameError::NoHeader)?;
    let header =
        serde_json::from_slice(&message[..split]).map_err(|e| DialFrameError::BadHeader(e.to_string()))?;
    Ok((header, &message[split + 1..]))
}

/// The address of a dial-out executor named `app_name` whose process is `instance`.
pub fn dial_address(app_name: &str, instance: &str) -> String {
    format!("{DIAL_SCHEME}{app_name}/{instance}")
}

/// Whether `address` is a dial-out executor's.
pub fn is_dial(address: &str) -> bool {
    address.starts_with(DIAL_SCHEME)
}

/// The AppName a well-formed dial address belongs to: `dial://{app}/{instance}` with a
/// non-empty AppName and an instance of 1 to 64 letters, digits, `-` or `_`, and nothing after.
pub fn dial_app(address: &str) -> Option<&str> {
    let rest = address.strip_prefix(DIAL_SCHEME)?;
    let (app, instance) = rest.trim_end_matches('/').rsplit_once('/')?;
    let instance_ok = !instance.is_empty()
        && instance.len() <= MAX_INSTANCE
        && instance.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let app_ok = !app.is_empty() && !app.contains('/') && !app.chars().any(char::is_whitespace);
    (instance_ok && app_ok).then_some(app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_carries_its_header_and_raw_body() {
        let call = DialCall { id: 7, method: "run".into(), token: Some("t".into()), app_name: None };
        let message = encode(&call, b"{\"jobId\":1}\nmore");
        let (back, body): (DialCall, &[u8]) = decode(&message).expect("decodes");
        assert_eq!(back, call);
        assert_eq!(body, b"{\"jobId\":1}\nmore");
        assert_eq!(decode::<DialCall>(b"no header"), Err(DialFrameError::NoHeader));
        assert!(matches!(decode::<DialAnswer>(b"{}\n"), Err(DialFrameError::BadHeader(_))));
    }

    #[test]
    fn a_dial_address_names_its_app_and_one_instance() {
        assert_eq!(dial_app(&dial_address("orders-app", "a1B2-c_3")), Some("orders-app"));
        assert_eq!(dial_app("dial://orders-app/abc/"), Some("orders-app"));
        for bad in
            ["http://h:1/", "dial://orders-app", "dial:///abc", "dial://a/b/c", "dial://a/b c", "dial://a/"]
        {
            assert_eq!(dial_app(bad), None, "{bad}");
        }
        assert!(is_dial("dial://a/b") && !is_dial("http://a/"));
    }
}
