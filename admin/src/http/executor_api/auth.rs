//! Who is calling the executor-facing API: the holder of the global access token (every
//! xxl-job generation), or of one group's own token presented with that group's AppName
//! (xxl-job 3.5, Gen C: `XXL-JOB-ACCESS-TOKEN` + `XXL-JOB-APPNAME`).
//!
//! A group token opens only what concerns its group: registering executors under its AppName,
//! downloading modules of its jobs, and the job OpenAPI for its jobs. Upstream 3.5 lets any
//! group's token act as an administrator of every job; a token copied from one executor's
//! configuration would then reach every group, so jobwheel scopes it (docs/security.md).

use std::sync::Arc;

use axum::http::HeaderMap;
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};

use crate::credentials::GroupCredential;
use crate::http::ExecutorApiState;
use crate::store::StoreError;

/// Gen C's reply when either header is missing or blank.
pub(crate) const GEN_C_EMPTY: &str = "invalid request, accessToken or appname is empty.";
/// Gen C's reply when the pair does not match a group's token.
pub(crate) const GEN_C_INVALID: &str = "invalid request, accessToken or appname invalid.";
/// Gen A/B's reply to a wrong or missing global token.
pub(crate) const WRONG_TOKEN: &str = "The access token is wrong.";

/// An authenticated caller.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// The global access token (any group).
    Global,
    /// A group's own token with its AppName (that group only).
    Group(Arc<GroupCredential>),
}

/// A caller that is not authenticated, with the reply its generation expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No `XXL-JOB-APPNAME`: a 2.x/3.x caller with a wrong token.
    WrongToken,
    /// `XXL-JOB-APPNAME` sent, but the token or the name is blank.
    Empty,
    /// The pair names no group token.
    Invalid,
}

impl Refusal {
    pub(crate) fn message(self) -> &'static str {
        match self {
            Self::WrongToken => WRONG_TOKEN,
            Self::Empty => GEN_C_EMPTY,
            Self::Invalid => GEN_C_INVALID,
        }
    }
}

/// Authenticates the request's headers: the global token first (any caller may send an
/// AppName with it, as jobwheel's executor always does), then the group token of the AppName.
pub(crate) async fn authenticate(
    state: &ExecutorApiState,
    headers: &HeaderMap,
) -> Result<Result<Caller, Refusal>, StoreError> {
    if state.token.matches(headers) {
        return Ok(Ok(Caller::Global));
    }
    let Some(app_name) = headers.get(APPNAME_HEADER) else { return Ok(Err(Refusal::WrongToken)) };
    let app_name = app_name.to_str().unwrap_or_default().trim();
    let token = headers.get(ACCESS_TOKEN_HEADER).map(|t| t.as_bytes()).unwrap_or_default();
    if app_name.is_empty() || token.iter().all(u8::is_ascii_whitespace) {
        return Ok(Err(Refusal::Empty));
    }
    Ok(match state.group_tokens.by_app(app_name).await? {
        Some(credential) if credential.matches(token) => Ok(Caller::Group(credential)),
        _ => Err(Refusal::Invalid),
    })
}
