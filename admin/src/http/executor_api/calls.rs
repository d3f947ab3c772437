//! The admin API executors call: `POST /api/registry`, `/api/registryRemove`, `/api/callback`
//! (upstream `OpenApiController` / `JobApiController`), at `/` and under `/xxl-job-admin`.
//!
//! One handler validates in upstream's order — method, URI, body, token, route — because
//! upstream executors and SDKs expect exactly those messages, and every reply is HTTP 200 with
//! the outcome in a Jackson-style envelope (`{"code":200,"msg":null,"content":null}`).
//!
//! A caller authenticates with the global access token (Gen A/B) or with its group's own token
//! and AppName (Gen C, xxl-job 3.5; `auth.rs`); Gen C's job OpenAPI (`addJob`, …) is
//! dispatched here too (`openapi_jobs.rs`).
//!
//! Differences from upstream, each deliberate: the token is always checked (the admin always
//! has one); registry writes happen before the reply, so an executor whose registration could
//! not be stored hears so and tries its next admin; callbacks are answered only once their
//! results are committed (code 500 with the reason otherwise, so the executor keeps them and
//! resends); and a newly seen executor's group is refreshed at once instead of at the next 30 s
//! registry pass.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::envelope::{FAIL_CODE, SUCCESS_CODE};
use jobwheel_protocol::{AdminRequest, RegistryParam};

use super::auth::{Caller, Refusal, WRONG_TOKEN, authenticate, report_groups};
use super::openapi_jobs;
use crate::http::ExecutorApiState;
use crate::store::RegistryKey;

/// Largest request body read from a caller with the right token. Callback batches are the
/// large ones: jobwheel's executor sends up to 1 000 results per batch, and a handle message
/// may be tens of kilobytes. A refused batch would be spooled and resent forever, so the cap is
/// generous.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Largest body read from a caller without the right token: enough to tell an empty body from
/// a non-empty one (upstream checks the body before the token), not enough to load the admin.
const UNAUTHENTICATED_BODY_BYTES: usize = 64 * 1024;

/// An upstream admin reply. Jackson serializes nulls, so `code`, `msg` and `content` are always
/// present; Gen C's job OpenAPI also answers its payload under `data` (its `Response`).
#[derive(serde::Serialize)]
pub(crate) struct Reply {
    code: i32,
    msg: Option<String>,
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<String>,
}

impl Reply {
    fn success() -> Self {
        Self { code: SUCCESS_CODE, msg: None, content: None, data: None }
    }

    fn fail(msg: impl Into<String>) -> Self {
        Self { code: FAIL_CODE, msg: Some(msg.into()), content: None, data: None }
    }

    /// Results not stored: the executor keeps them and sends them again.
    fn not_stored(error: impl std::fmt::Display) -> Self {
        Self::fail(format!(
            "request error: the results could not be stored ({error}); keep them and send them again"
        ))
    }

    fn success_msg(msg: impl Into<String>) -> Self {
        Self { code: SUCCESS_CODE, msg: Some(msg.into()), content: None, data: None }
    }

    /// The job OpenAPI's answers: `Response.ofSuccess(data)`, `ofFail(msg)`, and the rate
    /// limiter's 502.
    fn openapi(outcome: openapi_jobs::Outcome) -> Self {
        match outcome {
            Ok(data) => {
                Self { code: SUCCESS_CODE, msg: Some("Success".to_owned()), content: data.clone(), data }
            }
            Err(msg) if msg == openapi_jobs::TOO_MANY => {
                Self { code: 502, msg: Some(msg), content: None, data: None }
            }
            Err(msg) => Self::fail(msg),
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        axum::Json(self).into_response()
    }
}

/// `/api/{uri}`.
pub(crate) async fn named(
    State(state): State<Arc<ExecutorApiState>>,
    Path(uri): Path<String>,
    request: Request,
) -> Reply {
    dispatch(&state, &uri, request).await
}

/// `/api/` (upstream's blank `{uri}`).
pub(crate) async fn unnamed(State(state): State<Arc<ExecutorApiState>>, request: Request) -> Reply {
    dispatch(&state, "", request).await
}

async fn dispatch(state: &Arc<ExecutorApiState>, uri: &str, request: Request<Body>) -> Reply {
    let (parts, body) = request.into_parts();
    if parts.method != Method::POST {
        return Reply::fail("invalid request, HttpMethod not support.");
    }
    if uri.trim().is_empty() {
        return Reply::fail("invalid request, uri-mapping empty.");
    }
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|peer| peer.0);
    let client = peer
        .map(|peer| SocketAddr::new(state.trusted_proxies.client(peer.ip(), &parts.headers), peer.port()));
    // A client that keeps sending wrong tokens is refused before its token is looked at (L4).
    if let Some(wait) = client.and_then(|c| state.token_failures.blocked(c.ip(), state.clock.instant())) {
        return Reply::fail(format!(
            "invalid request, too many requests with a wrong access token from this address; try again in {wait} s"
        ));
    }
    let caller = match authenticate(state, &parts.headers).await {
        Ok(caller) => caller,
        Err(error) => {
            tracing::error!(%error, "cannot read the groups' access tokens");
            return Reply::fail("request error: the access token could not be checked (database error)");
        }
    };
    if let (Err(_), Some(client)) = (&caller, client) {
        state.token_failures.failed(client.ip(), state.clock.instant());
    }
    let limit = if caller.is_ok() { MAX_BODY_BYTES } else { UNAUTHENTICATED_BODY_BYTES };
    let body = match axum::body::to_bytes(body, limit).await {
        Ok(body) => body,
        // Too large or broken, it is not empty: the next check is the token.
        Err(_) if caller.is_err() => return Reply::fail(caller.err().map_or(WRONG_TOKEN, Refusal::message)),
        Err(e) => {
            return Reply::fail(format!(
                "request error: cannot read the request body (at most {MAX_BODY_BYTES} bytes): {e}"
            ));
        }
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return Reply::fail("invalid request, requestBody empty.");
    }
    let caller = match caller {
        Ok(caller) => caller,
        Err(refusal) => return Reply::fail(refusal.message()),
    };
    if let Some(operation) = openapi_jobs::Operation::from_uri(uri) {
        let Caller::Group(group) = &caller else {
            return Reply::fail(
                "invalid request, the job OpenAPI takes a group's own access token with its AppName \
                 (headers XXL-JOB-ACCESS-TOKEN and XXL-JOB-APPNAME), not the global token",
            );
        };
        return Reply::openapi(openapi_jobs::handle(state, group, operation, &body, client).await);
    }
    match AdminRequest::parse(uri, &body) {
        Ok(AdminRequest::Registry(param)) => {
            let incarnation = param.incarnation.clone();
            match own_registration(state, &caller, param).await {
                Ok(key) => registry(state, key, incarnation.as_deref()).await,
                Err(reply) => reply,
            }
        }
        Ok(AdminRequest::RegistryRemove(param)) => match own_registration(state, &caller, param).await {
            Ok(key) => registry_remove(state, key).await,
            Err(reply) => reply,
        },
        Ok(AdminRequest::Callback(items)) => {
            let (items, foreign) = match own_results(state, &caller, items).await {
                Ok(kept) => kept,
                Err(error) => {
                    tracing::error!(%error, "cannot check the groups of a callback's logs");
                    return Reply::not_stored(error);
                }
            };
            if items.is_empty() {
                return if foreign == 0 {
                    Reply::success()
                } else {
                    Reply::success_msg(foreign_msg(&caller, foreign))
                };
            }
            // Answered only once stored: an executor forgets a batch when it gets 200.
            let received = crate::metrics::Stopwatch::start();
            let stored = state.callbacks.store(items).await;
            state.metrics.callback_stored(received.seconds());
            match stored {
                Ok(()) if foreign > 0 => Reply::success_msg(foreign_msg(&caller, foreign)),
                Ok(()) => Reply::success(),
                Err(error) => Reply::not_stored(error),
            }
        }
        Err(error) => Reply::fail(error.message()),
    }
}

/// A group token reports results of its own group's logs only; the others are dropped (and
/// counted), so a token copied from one executor cannot decide other groups' runs. Upstream 3.5
/// applies them all. The global token reports for every group without a token of its own.
async fn own_results(
    state: &ExecutorApiState,
    caller: &Caller,
    items: Vec<jobwheel_protocol::HandleCallbackParam>,
) -> Result<(Vec<jobwheel_protocol::HandleCallbackParam>, usize), crate::store::StoreError> {
    if matches!(caller, Caller::Global) && state.group_tokens.guarded_groups().await?.is_empty() {
        return Ok((items, 0));
    }
    let allowed = report_groups(state, caller).await?;
    let ids: Vec<crate::store::LogId> = items.iter().map(|i| crate::store::LogId(i.log_id)).collect();
    let own: std::collections::HashSet<i64> = state
        .store
        .log_groups(&ids)
        .await?
        .into_iter()
        .filter(|(_, g)| allowed(*g))
        .map(|(log, _)| log.0)
        .collect();
    let total = items.len();
    let kept: Vec<_> = items.into_iter().filter(|i| own.contains(&i.log_id)).collect();
    let foreign = total - kept.len();
    if foreign > 0 {
        tracing::warn!(foreign, "ignored callback results of logs outside the caller's groups");
    }
    Ok((kept, foreign))
}

fn foreign_msg(caller: &Caller, foreign: usize) -> String {
    match caller {
        Caller::Group(group) => {
            format!(
                "ignored {foreign} result(s) of logs that are not of group {} (or do not exist)",
                group.app_name
            )
        }
        Caller::Global => format!(
            "ignored {foreign} result(s) of logs of groups with their own access token (report those with \
             the group's token) or that do not exist"
        ),
    }
}

/// The registration's key, if the caller may register it: a group's token registers executors
/// under that group's AppName only (else it would receive other groups' triggers), and the
/// global token registers none under the AppName of a group that has its own token (else its
/// holder would receive that group's token, triggers and secrets; review M3).
async fn own_registration(
    state: &ExecutorApiState,
    caller: &Caller,
    param: RegistryParam,
) -> Result<RegistryKey, Reply> {
    // A dial-out address carries its AppName; under another AppName it would send that group's
    // triggers to an executor of a group that did not ask for them.
    let value = param.registry_value.trim();
    if jobwheel_protocol::dial::is_dial(value)
        && jobwheel_protocol::dial::dial_app(value) != Some(param.registry_key.as_str())
    {
        return Err(Reply::fail(format!(
            "invalid request, registryValue ({value}) is not a dial-out address of AppName {}",
            param.registry_key
        )));
    }
    match caller {
        Caller::Group(group) if param.registry_key != group.app_name => Err(Reply::fail(format!(
            "invalid request, registryKey ({}) is not the AppName of the access token ({})",
            param.registry_key, group.app_name
        ))),
        Caller::Group(_) => Ok(registry_key(param)),
        Caller::Global => match state.group_tokens.by_app(&param.registry_key).await {
            Ok(None) => Ok(registry_key(param)),
            Ok(Some(_)) => Err(Reply::fail(format!(
                "invalid request, executor group {} has its own access token: register with that token \
                 and XXL-JOB-APPNAME {0}; the global token is refused for it",
                param.registry_key
            ))),
            Err(error) => {
                tracing::error!(%error, "cannot read the groups' access tokens");
                Err(Reply::fail("request error: the access token could not be checked (database error)"))
            }
        },
    }
}

async fn registry(state: &ExecutorApiState, key: RegistryKey, incarnation: Option<&str>) -> Reply {
    if let Err(e) = state.store.registry_upsert(&key, state.clock.now()).await {
        tracing::error!(app = %key.registry_key, address = %key.registry_value, error = %e, "cannot store a registration");
        return Reply::fail("request error: the registration could not be stored (database error)");
    }
    let beat = state.registrations.record(&key, incarnation, state.clock.instant());
    if beat.new {
        tracing::info!(app = %key.registry_key, address = %key.registry_value, "executor registered");
        state.core.refresh_group(&key.registry_key).await;
    }
    if beat.new_process {
        // A restart on the same address keeps the registration: the runs its predecessor
        // took down are found here, not by the lost-job monitor (engine/restarts.rs).
        state.core.executor_restarted(&key.registry_value);
    }
    Reply::success()
}

async fn registry_remove(state: &ExecutorApiState, key: RegistryKey) -> Reply {
    if let Err(e) = state.store.registry_remove(&key).await {
        tracing::error!(app = %key.registry_key, address = %key.registry_value, error = %e, "cannot remove a registration");
        return Reply::fail("request error: the registration could not be removed (database error)");
    }
    state.registrations.forget(&key);
    tracing::info!(app = %key.registry_key, address = %key.registry_value, "executor deregistered");
    state.core.refresh_group(&key.registry_key).await;
    Reply::success()
}

/// The store's key for a registration [`AdminRequest::parse`] validated (non-blank fields that
/// fit the registry table's columns; upstream refuses blank ones with "Illegal Argument.").
fn registry_key(param: RegistryParam) -> RegistryKey {
    RegistryKey {
        registry_group: param.registry_group,
        registry_key: param.registry_key,
        registry_value: param.registry_value,
    }
}
