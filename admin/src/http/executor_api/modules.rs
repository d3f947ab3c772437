//! `GET /api/wasm/{digest}`: the bytes of a stored Wasm module, for executors running
//! `GLUE_WASM` jobs (the trigger's `wasmModule.url` points here).
//!
//! Executor-facing like `/api/registry`, so it takes the same access token, or a group's own
//! token with its AppName for the modules of that group's jobs; unlike the upstream endpoints
//! it answers with HTTP statuses (`ApiError`), because its success body is the module itself,
//! not an envelope.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::auth::{Caller, authenticate};
use crate::http::{ApiError, ExecutorApiState};

/// The response's `Content-Type` (the Wasm spec's media type).
const WASM_CONTENT_TYPE: &str = "application/wasm";

pub(crate) async fn module(
    State(state): State<Arc<ExecutorApiState>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    Path(digest): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    // Wrong tokens are throttled per address as on every other executor-facing route: without
    // it, 401 for a wrong token and 404 for a right one would be an unlimited oracle for group
    // tokens (review L4).
    let client = peer.map(|Extension(ConnectInfo(peer))| state.trusted_proxies.client(peer.ip(), &headers));
    if let Some(wait) = client.and_then(|c| state.token_failures.blocked(c, state.clock.instant())) {
        return Err(ApiError::TooManyRequests(wait));
    }
    let caller = match authenticate(&state, &headers).await? {
        Ok(caller) => caller,
        Err(_) => {
            if let Some(client) = client {
                state.token_failures.failed(client, state.clock.instant());
            }
            return Err(ApiError::Unauthorized);
        }
    };
    if !is_digest(&digest) {
        return Err(ApiError::BadRequest(format!(
            "invalid module digest {digest:?}: expected 64 lower-case hex characters (SHA-256)"
        )));
    }
    match &caller {
        Caller::Group(group) if !state.store.wasm_module_in_group(&digest, group.group).await? => {
            // As for a missing module: the answer must not tell other groups' modules apart.
            return Err(ApiError::NotFound(format!(
                "no wasm module with digest {digest} in group {}",
                group.app_name
            )));
        }
        Caller::Global if !global_may_fetch(&state, &digest).await? => {
            return Err(ApiError::NotFound(format!(
                "no wasm module with digest {digest} in a group without its own access token"
            )));
        }
        _ => {}
    }
    let module = state
        .store
        .get_wasm_module(&digest)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no wasm module with digest {digest}")))?;
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(WASM_CONTENT_TYPE)),
        // Content-addressed: the bytes behind a digest never change.
        (header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=31536000, immutable")),
    ];
    Ok((headers, module.bytes).into_response())
}

/// The global token fetches a module used by some group without a token of its own; modules
/// only groups with their own token use are theirs alone (review M3).
async fn global_may_fetch(state: &ExecutorApiState, digest: &str) -> Result<bool, ApiError> {
    let guarded = state.group_tokens.guarded_groups().await?;
    if guarded.is_empty() {
        return Ok(true);
    }
    Ok(state.store.wasm_module_groups(digest).await?.iter().any(|group| !guarded.contains(group)))
}

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

fn is_digest(digest: &str) -> bool {
    digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}
