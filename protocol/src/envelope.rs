//! The response envelope: `ReturnT` (Gen A, payload in `content`) and `Response` (Gen B, `data`).
//!
//! Only `code` and `msg` are read by upstream peers on every endpoint except `/log`, whose payload
//! a Gen A admin reads from `content` and a Gen B admin from `data`. We therefore emit a payload
//! under both keys and, when reading, accept whichever is present.

use serde::{Deserialize, Serialize};

/// Success code of both envelope generations.
pub const SUCCESS_CODE: i32 = 200;
/// Failure code of both envelope generations.
pub const FAIL_CODE: i32 = 500;

/// A response envelope as sent and received on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    #[serde(default, deserialize_with = "crate::lenient::int")]
    pub code: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    /// The payload under its Gen A name.
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub content: Option<T>,
    /// The same payload under its Gen B name.
    #[serde(default = "none", skip_serializing_if = "Option::is_none")]
    pub data: Option<T>,
}

impl<T> Envelope<T> {
    /// `{"code":200}` — upstream's `ReturnT.SUCCESS`.
    pub fn success() -> Self {
        Self { code: SUCCESS_CODE, msg: None, content: None, data: None }
    }

    /// `{"code":200,"msg":msg}`.
    pub fn success_msg(msg: impl Into<String>) -> Self {
        Self { code: SUCCESS_CODE, msg: Some(msg.into()), content: None, data: None }
    }

    /// `{"code":500,"msg":msg}`.
    pub fn fail(msg: impl Into<String>) -> Self {
        Self { code: FAIL_CODE, msg: Some(msg.into()), content: None, data: None }
    }

    pub fn is_success(&self) -> bool {
        self.code == SUCCESS_CODE
    }

    /// The payload, whichever generation's key carried it (Gen B's `data` wins if both differ).
    pub fn into_payload(self) -> Option<T> {
        self.data.or(self.content)
    }
}

impl<T: Clone> Envelope<T> {
    /// `{"code":200,"content":payload,"data":payload}`, readable by both generations.
    pub fn success_with(payload: T) -> Self {
        Self { code: SUCCESS_CODE, msg: None, content: Some(payload.clone()), data: Some(payload) }
    }
}

// A function rather than `Option::default` so serde does not require `T: Default`.
fn none<T>() -> Option<T> {
    None
}

/// An envelope whose payload, if any, is ignored (for `/run`, `/beat`, `/api/*` replies).
pub type AckEnvelope = Envelope<serde_json::Value>;
