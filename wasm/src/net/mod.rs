//! Outbound HTTP for components (`wasi:http/outgoing-handler`) under a network policy.
//!
//! A request leaves only if the job's policy *and* the executor's allow-list name its origin,
//! the run has requests and response bytes left, and the address the host resolved is public or
//! explicitly granted. The policy is checked in [`hooks`] (wasmtime-wasi-http's
//! `send_request` hook); the request is sent by [`send`], our own sender, because the stock one
//! resolves the name again after any check we could make (DNS rebinding). Every request leaves
//! one line in the job log; a refused one reaches the guest as an HTTP error code, never a trap.

pub(crate) mod body;
pub(crate) mod hooks;
pub(crate) mod send;

use std::sync::Arc;
use std::time::Duration;

pub use jobwheel_protocol::net_policy::{NetPolicy, PolicyError};

/// Per-run budgets of outbound HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetLimits {
    /// Requests a run may start; later ones are refused.
    pub max_requests: u32,
    /// Response body bytes a run may read, over all its requests.
    pub max_response_bytes: u64,
    /// Cap on each of connect, first-byte and between-bytes waits of one request (the guest may
    /// ask for less, never more).
    pub request_timeout: Duration,
}

impl Default for NetLimits {
    /// 100 requests, 16 MiB of responses, 30 s per wait.
    fn default() -> Self {
        NetLimits {
            max_requests: 100,
            max_response_bytes: 16 << 20,
            request_timeout: Duration::from_secs(30),
        }
    }
}

impl NetLimits {
    /// Each limit of `self`, lowered to `ceiling`'s where it is higher.
    pub fn capped_by(self, ceiling: NetLimits) -> NetLimits {
        NetLimits {
            max_requests: self.max_requests.min(ceiling.max_requests),
            max_response_bytes: self.max_response_bytes.min(ceiling.max_response_bytes),
            request_timeout: self.request_timeout.min(ceiling.request_timeout),
        }
    }
}

/// What one run may reach: the job's policy and its limits (already capped by the executor's
/// ceilings). The executor-wide allow-list is in [`crate::RuntimeConfig::http_allow`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetGrant {
    /// The job's allowed origins and address grants.
    pub policy: Arc<NetPolicy>,
    /// The job's budgets.
    pub limits: NetLimits,
}
