//! The admin's access token, checked by every executor-facing endpoint.

use axum::http::HeaderMap;
use jobwheel_protocol::ACCESS_TOKEN_HEADER;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The admin's access token, kept only as its SHA-256.
///
/// Comparing digests in constant time hides both the token's bytes and its length from timing:
/// a plain `==`, as upstream uses, returns at the first differing byte.
#[derive(Clone)]
pub(crate) struct AccessToken {
    digest: [u8; 32],
    /// A token no request may present: a configured one everybody knows (review N1), or a
    /// group's that cannot be opened.
    refusing: bool,
}

impl AccessToken {
    pub(crate) fn new(token: &str) -> Self {
        Self { digest: Sha256::digest(token.as_bytes()).into(), refusing: false }
    }

    /// A token that matches nothing.
    pub(crate) fn refusing() -> Self {
        Self { digest: [0; 32], refusing: true }
    }

    /// Whether the request's `XXL-JOB-ACCESS-TOKEN` header carries the token. A missing header
    /// never matches: the admin always has a token.
    pub(crate) fn matches(&self, headers: &HeaderMap) -> bool {
        headers.get(ACCESS_TOKEN_HEADER).is_some_and(|given| self.matches_value(given.as_bytes()))
    }

    /// Whether `given` is the token.
    pub(crate) fn matches_value(&self, given: &[u8]) -> bool {
        let given: [u8; 32] = Sha256::digest(given).into();
        bool::from(given.ct_eq(&self.digest)) && !self.refusing
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}
