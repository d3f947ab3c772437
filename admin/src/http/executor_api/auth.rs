//! Who is calling the executor-facing API: the holder of the global access token (every
//! xxl-job generation), or of one group's own token presented with that group's AppName
//! (xxl-job 3.5, Gen C: `XXL-JOB-ACCESS-TOKEN` + `XXL-JOB-APPNAME`).
//!
//! A group token opens only what concerns its group: registering executors under its AppName,
//! downloading modules of its jobs, and the job OpenAPI for its jobs. Upstream 3.5 lets any
//! group's token act as an administrator of every job; a token copied from one executor's
//! configuration would then reach every group, so jobwheel scopes it (docs/security.md).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};

use crate::credentials::GroupCredential;
use crate::http::ExecutorApiState;
use crate::store::{GroupId, StoreError};

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

/// The wrong-token throttle and [`authenticate`] for jobwheel's own routes (`/api/dial`,
/// `/api/logShip`), which answer with plain HTTP statuses: 429 while the client is blocked,
/// 401 for a wrong token (counted by the throttle), 503 when the tokens cannot be read.
pub(crate) async fn admit(state: &ExecutorApiState, parts: &Parts) -> Result<Caller, Response> {
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|peer| peer.0);
    let client = peer.map(|peer| state.trusted_proxies.client(peer.ip(), &parts.headers));
    if let Some(wait) = client.and_then(|c| state.token_failures.blocked(c, state.clock.instant())) {
        let why =
            format!("too many requests with a wrong access token from this address; try again in {wait} s");
        return Err((StatusCode::TOO_MANY_REQUESTS, why).into_response());
    }
    match authenticate(state, &parts.headers).await {
        Ok(Ok(caller)) => Ok(caller),
        Ok(Err(refusal)) => {
            if let Some(client) = client {
                state.token_failures.failed(client, state.clock.instant());
            }
            Err((StatusCode::UNAUTHORIZED, refusal.message()).into_response())
        }
        Err(error) => {
            tracing::error!(%error, "cannot read the groups' access tokens");
            let why = "the access token could not be checked (database error)";
            Err((StatusCode::SERVICE_UNAVAILABLE, why).into_response())
        }
    }
}

/// Which groups' logs `caller` may report on (results, shipped lines): its own group (a group
/// token), or every group without a token of its own (the global token).
pub(crate) async fn report_groups(
    state: &ExecutorApiState,
    caller: &Caller,
) -> Result<Box<dyn Fn(GroupId) -> bool + Send + Sync>, StoreError> {
    Ok(match caller {
        Caller::Group(group) => {
            let own = group.group;
            Box::new(move |g| g == own)
        }
        Caller::Global => {
            let guarded = state.group_tokens.guarded_groups().await?;
            Box::new(move |g| !guarded.contains(&g))
        }
    })
}
