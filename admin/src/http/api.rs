//! The admin API executors call: `POST /api/registry`, `/api/registryRemove`, `/api/callback`
//! (upstream `OpenApiController` / `JobApiController`), at `/` and under `/xxl-job-admin`.
//!
//! One handler validates in upstream's order — method, URI, body, token, route — because
//! upstream executors and SDKs expect exactly those messages, and every reply is HTTP 200 with
//! the outcome in a Jackson-style envelope (`{"code":200,"msg":null,"content":null}`).
//!
//! Differences from upstream, each deliberate: the token is always checked (the admin always
//! has one); registry writes happen before the reply, so an executor whose registration could
//! not be stored hears so and tries its next admin; and a newly seen executor's group is
//! refreshed at once instead of at the next 30 s registry pass.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::{CallbackBody, RegistryParam};
use serde::de::DeserializeOwned;

use super::HttpState;
use crate::store::RegistryKey;

/// Largest request body read from a caller with the right token. Callback batches are the
/// large ones: jobwheel's executor sends up to 1 000 results per batch, and a handle message
/// may be tens of kilobytes. A refused batch would be spooled and resent forever, so the cap is
/// generous.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Largest body read from a caller without the right token: enough to tell an empty body from
/// a non-empty one (upstream checks the body before the token), not enough to load the admin.
const UNAUTHENTICATED_BODY_BYTES: usize = 64 * 1024;

/// Column widths of `xxl_job_registry` (`registry_group varchar(50)`, the others 255); longer
/// values are refused like blank ones rather than failing (MySQL) or being stored (SQLite).
const MAX_GROUP_CHARS: usize = 50;
const MAX_KEY_VALUE_CHARS: usize = 255;

/// An upstream admin reply. Jackson serializes nulls, so the keys are always present.
#[derive(serde::Serialize)]
pub(crate) struct Reply {
    code: i32,
    msg: Option<String>,
    content: Option<()>,
}

impl Reply {
    fn success() -> Self {
        Self { code: 200, msg: None, content: None }
    }

    fn fail(msg: impl Into<String>) -> Self {
        Self { code: 500, msg: Some(msg.into()), content: None }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        axum::Json(self).into_response()
    }
}

/// `/api/{uri}`.
pub(crate) async fn named(
    State(state): State<Arc<HttpState>>,
    Path(uri): Path<String>,
    request: Request,
) -> Reply {
    dispatch(&state, &uri, request).await
}

/// `/api/` (upstream's blank `{uri}`).
pub(crate) async fn unnamed(State(state): State<Arc<HttpState>>, request: Request) -> Reply {
    dispatch(&state, "", request).await
}

async fn dispatch(state: &HttpState, uri: &str, request: Request<Body>) -> Reply {
    let (parts, body) = request.into_parts();
    if parts.method != Method::POST {
        return Reply::fail("invalid request, HttpMethod not support.");
    }
    if uri.trim().is_empty() {
        return Reply::fail("invalid request, uri-mapping empty.");
    }
    let authenticated = state.token.matches(&parts.headers);
    let limit = if authenticated { MAX_BODY_BYTES } else { UNAUTHENTICATED_BODY_BYTES };
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(body) => body,
        // Too large or broken, it is not empty: the next check is the token.
        Err(_) if !authenticated => return Reply::fail("The access token is wrong."),
        Err(e) => {
            return Reply::fail(format!(
                "request error: cannot read the request body (at most {MAX_BODY_BYTES} bytes): {e}"
            ));
        }
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Reply::fail("invalid request, requestBody empty.");
    }
    if !authenticated {
        return Reply::fail("The access token is wrong.");
    }
    match uri {
        "registry" => registry(state, &body).await,
        "registryRemove" => registry_remove(state, &body).await,
        "callback" => callback(state, &body).await,
        _ => Reply::fail(format!("invalid request, uri-mapping({uri}) not found.")),
    }
}

async fn registry(state: &HttpState, body: &Bytes) -> Reply {
    let key = match registry_key(body, "registry") {
        Ok(key) => key,
        Err(reply) => return reply,
    };
    if let Err(e) = state.store.registry_upsert(&key, chrono::Utc::now()).await {
        tracing::error!(app = %key.registry_key, address = %key.registry_value, error = %e, "cannot store a registration");
        return Reply::fail("request error: the registration could not be stored (database error)");
    }
    if state.registrations.record(&key, Instant::now()) {
        tracing::info!(app = %key.registry_key, address = %key.registry_value, "executor registered");
        state.core.refresh_group(&key.registry_key).await;
    }
    Reply::success()
}

async fn registry_remove(state: &HttpState, body: &Bytes) -> Reply {
    let key = match registry_key(body, "registryRemove") {
        Ok(key) => key,
        Err(reply) => return reply,
    };
    if let Err(e) = state.store.registry_remove(&key).await {
        tracing::error!(app = %key.registry_key, address = %key.registry_value, error = %e, "cannot remove a registration");
        return Reply::fail("request error: the registration could not be removed (database error)");
    }
    state.registrations.forget(&key);
    tracing::info!(app = %key.registry_key, address = %key.registry_value, "executor deregistered");
    state.core.refresh_group(&key.registry_key).await;
    Reply::success()
}

/// Parses and validates a `RegistryParam` (upstream: any blank field → "Illegal Argument.").
fn registry_key(body: &Bytes, uri: &str) -> Result<RegistryKey, Reply> {
    let param: RegistryParam = parse(body, uri)?;
    let fits = param.registry_group.chars().count() <= MAX_GROUP_CHARS
        && param.registry_key.chars().count() <= MAX_KEY_VALUE_CHARS
        && param.registry_value.chars().count() <= MAX_KEY_VALUE_CHARS;
    if !param.is_valid() || !fits {
        return Err(Reply::fail("Illegal Argument."));
    }
    Ok(RegistryKey {
        registry_group: param.registry_group,
        registry_key: param.registry_key,
        registry_value: param.registry_value,
    })
}

async fn callback(state: &HttpState, body: &Bytes) -> Reply {
    let items = match parse::<CallbackBody>(body, "callback") {
        Ok(body) => body.into_items(),
        Err(reply) => return reply,
    };
    if !items.is_empty() {
        state.callbacks.push(items).await;
    }
    Reply::success()
}

/// Parses a JSON body leniently (the protocol types decode like Gson); an unparsable body is a
/// "request error" naming the endpoint and serde's reason (never echoing the body).
fn parse<T: DeserializeOwned>(body: &Bytes, uri: &str) -> Result<T, Reply> {
    serde_json::from_slice(body)
        .map_err(|e| Reply::fail(format!("request error: invalid JSON body for api/{uri}: {e}")))
}
