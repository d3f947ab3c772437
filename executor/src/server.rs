//! The executor HTTP API: `POST /beat`, `/idleBeat`, `/run` (also as xxl-job 3.5's
//! `/trigger`), `/kill`, `/log` (upstream `EmbedServer` + `ExecutorBizImpl`), optionally under a
//! path prefix, and jobwheel's `/runBatch` (several `/run`s in one request, offered on every
//! `/run` reply by a response header). A request naming an AppName (`XXL-JOB-APPNAME`, 3.5) must name this executor's.
//!
//! Dispatch is one handler that validates in upstream's order — method, path, token, route —
//! because upstream peers expect exactly those messages, and every reply is HTTP 200 with the
//! outcome in the JSON envelope. Two jobwheel additions come first and answer `GET` without a
//! token, for service managers and probes: `/healthz` (the process serves HTTP) and `/readyz`
//! (registered with an admin, or no admin configured, and in dial-out mode a socket open to
//! one; else 503). `GET /metrics` (Prometheus)
//! needs the access token, as a bearer token or in upstream's header. Upstream answers any
//! `GET` with its "HttpMethod not support." envelope, which no peer relies on for these paths.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use jobwheel_protocol::envelope::Envelope;
use jobwheel_protocol::{
    ACCESS_TOKEN_HEADER, APPNAME_HEADER, ExecutorRequest, ExecutorRequestError, LogResult, OutstandingRuns,
    RUN_BATCH_HEADER,
};
use serde_json::json;
use subtle::ConstantTimeEq;

use crate::joblog::{LogDir, read_log};
use crate::jobs::JobThreads;
use crate::metrics::{CONTENT_TYPE, ExecutorMetrics, Levels};

/// Largest request body accepted (upstream's Netty aggregator limit).
pub(crate) const MAX_BODY_BYTES: usize = 5 * 1024 * 1024;

/// What the API handlers share.
pub(crate) struct ApiState {
    pub(crate) jobs: Arc<JobThreads>,
    pub(crate) logs: LogDir,
    /// `None` only when the operator explicitly disabled authentication.
    pub(crate) access_token: Option<String>,
    /// This executor's AppName: a request naming another one (`XXL-JOB-APPNAME`, sent by
    /// xxl-job 3.5 admins and by jobwheel's for groups with their own token) is refused.
    pub(crate) app_name: String,
    /// e.g. `/xxl-job-executor`; empty for none. Never ends with `/`.
    pub(crate) path_prefix: String,
    /// Whether the last registry beat reached an admin; `None` when no admin is configured.
    pub(crate) registered: Option<Arc<AtomicBool>>,
    /// In dial-out mode, how many admins' sockets are open (`dial.rs`): with none, no trigger
    /// can arrive, so the executor is not ready. `None` for a listening executor.
    pub(crate) dialled: Option<Arc<AtomicUsize>>,
    /// The executor's metrics (`/metrics`).
    pub(crate) metrics: Arc<ExecutorMetrics>,
    /// Where undelivered callback batches wait (their count is a metric).
    pub(crate) spool_dir: std::path::PathBuf,
    /// This process's incarnation (`owed.rs`), also sent in registry beats.
    pub(crate) incarnation: String,
}

pub(crate) fn router(state: Arc<ApiState>) -> Router {
    Router::new().fallback(dispatch).with_state(state)
}

/// The router of a dial-out executor's `--listen`: the probes and `/metrics` only. The executor
/// API is not served on a port at all (`dial.rs` takes its calls); anything else is 404.
pub(crate) fn probe_router(state: Arc<ApiState>) -> Router {
    Router::new().fallback(probes).with_state(state)
}

async fn probes(State(state): State<Arc<ApiState>>, request: Request<Body>) -> Response {
    let probe = matches!(request.uri().path(), "/healthz" | "/readyz" | "/metrics");
    if request.method() == Method::GET && probe {
        return dispatch(State(state), request).await;
    }
    let why = "this executor dials out (--dial-out): its executor API is not served on a port";
    (StatusCode::NOT_FOUND, why).into_response()
}

/// One executor API request that did not come over HTTP (a dial-out call): the same dispatch.
pub(crate) async fn serve_call(state: Arc<ApiState>, request: Request<Body>) -> Response {
    dispatch(State(state), request).await
}

/// The router of `--metrics-listen`: `/metrics` only, no credentials.
pub(crate) fn metrics_router(state: Arc<ApiState>) -> Router {
    let page = |State(state): State<Arc<ApiState>>| async move { metrics_page(&state) };
    Router::new().route("/metrics", axum::routing::get(page)).with_state(state)
}

/// `GET /readyz`: ready once a registry beat reached an admin (and while they keep doing so).
fn readiness(state: &ApiState) -> Response {
    let (ready, admin) = match (&state.registered, &state.dialled) {
        (Some(flag), _) if !flag.load(Ordering::Relaxed) => {
            (false, "not registered: the last registry beat reached no admin")
        }
        (_, Some(open)) if open.load(Ordering::Relaxed) == 0 => {
            (false, "no admin's socket is open (--dial-out): no trigger can arrive")
        }
        (None, _) => (true, "none configured"),
        (Some(_), _) => (true, "registered"),
    };
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = json!({"status": if ready { "ready" } else { "not ready" }, "checks": {"admin": admin}});
    (status, Json(body)).into_response()
}

async fn dispatch(State(state): State<Arc<ApiState>>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    if parts.method == Method::GET {
        match parts.uri.path() {
            "/healthz" => return (StatusCode::OK, Json(json!({"status": "up"}))).into_response(),
            "/readyz" => return readiness(&state),
            "/metrics" if metrics_allowed(state.access_token.as_deref(), &parts.headers) => {
                return metrics_page(&state);
            }
            "/metrics" => {
                let message = "send the access token as Authorization: Bearer … (or XXL-JOB-ACCESS-TOKEN)";
                return (StatusCode::UNAUTHORIZED, message).into_response();
            }
            _ => {}
        }
    }
    if parts.method != Method::POST {
        return reply(&Envelope::<()>::fail("invalid request, HttpMethod not support."));
    }
    let uri_path = parts.uri.path();
    let Some(path) = uri_path.strip_prefix(state.path_prefix.as_str()).filter(|p| !p.is_empty()) else {
        return reply(&Envelope::<()>::fail(format!("invalid request, uri-mapping({uri_path}) not found.")));
    };
    if !token_matches(state.access_token.as_deref(), &parts.headers) {
        return reply(&Envelope::<()>::fail("The access token is wrong."));
    }
    if parts.headers.get(APPNAME_HEADER).is_some_and(|name| name.as_bytes() != state.app_name.as_bytes()) {
        return reply(&Envelope::<()>::fail("invalid request, accessToken or appname invalid."));
    }
    let body = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            return reply(&Envelope::<()>::fail(format!(
                "request error: cannot read request body (limit {MAX_BODY_BYTES} bytes): {e}"
            )));
        }
    };
    let request = match ExecutorRequest::parse(path, &body) {
        Ok(request) => request,
        Err(ExecutorRequestError::UnknownPath) => {
            return reply(&Envelope::<()>::fail(format!(
                "invalid request, uri-mapping({uri_path}) not found."
            )));
        }
        Err(ExecutorRequestError::InvalidBody(message)) => return reply(&Envelope::<()>::fail(message)),
    };
    match request {
        // A closing executor takes no run: FAILOVER's beat and BUSYOVER's idle beat move on.
        ExecutorRequest::Beat | ExecutorRequest::IdleBeat(_) if state.jobs.is_closing() => {
            reply(&Envelope::<()>::fail(crate::jobs::CLOSING_REASON))
        }
        ExecutorRequest::Beat => reply(&Envelope::<()>::success()),
        ExecutorRequest::IdleBeat(p) if state.jobs.is_busy(p.job_id) => {
            reply(&Envelope::<()>::fail("job thread is running or has trigger queue."))
        }
        ExecutorRequest::IdleBeat(_) if state.jobs.slots_full() => {
            let (running, waiting, cap) = state.jobs.slot_levels().unwrap_or_default();
            reply(&Envelope::<()>::fail(format!(
                "executor is at its concurrency cap: {running} of {cap} runs executing, {waiting} waiting (--max-concurrent-runs)"
            )))
        }
        ExecutorRequest::IdleBeat(_) => reply(&Envelope::<()>::success()),
        ExecutorRequest::Status => reply(&Envelope::success_with(state.jobs.status())),
        ExecutorRequest::Outstanding(query) => reply(&Envelope::success_with(OutstandingRuns {
            incarnation: state.incarnation.clone(),
            log_ids: state.jobs.owed_among(&query.log_ids),
        })),
        ExecutorRequest::Run(p) => offering_batches(reply(&run_one(&state, *p))),
        // Each trigger exactly as its own `/run`, in order (docs/executor.md, "Batched triggers").
        ExecutorRequest::RunBatch(params) => {
            let replies: Vec<Envelope<()>> = params.into_iter().map(|p| run_one(&state, p)).collect();
            offering_batches(reply(&replies))
        }
        ExecutorRequest::Kill(p) if state.jobs.kill(p.job_id) => reply(&Envelope::<()>::success()),
        ExecutorRequest::Kill(_) => reply(&Envelope::<()>::success_msg("job thread already killed.")),
        ExecutorRequest::Replay(request) => match state.jobs.replay(*request).await {
            Ok(replayed) => reply(&Envelope::success_with(replayed)),
            Err(msg) => reply(&Envelope::<()>::fail(msg)),
        },
        ExecutorRequest::WasmPrepare(module) => match state.jobs.prepare_wasm(module) {
            Ok(()) => reply(&Envelope::<()>::success()),
            Err(msg) => reply(&Envelope::<()>::fail(msg)),
        },
        // With `--job-logs admin` there is no file: the admin reads the lines it was sent;
        // before the first arrives, this answers "nothing new yet".
        ExecutorRequest::Log(p) if !state.logs.has_files() => reply(&Envelope::success_with(LogResult {
            from_line_num: p.from_line_num,
            to_line_num: p.from_line_num.saturating_sub(1).max(0),
            log_content: String::new(),
            is_end: false,
        })),
        ExecutorRequest::Log(p) => {
            let file = state.logs.file_for(p.log_date_time(), p.log_id);
            reply(&Envelope::success_with(read_log(&file, p.from_line_num).await))
        }
    }
}

/// Compares the request's token with ours in constant time. Without a configured token every
/// request passes (only reachable with `--insecure-no-token`).
/// `/metrics` takes the access token as a bearer token (what Prometheus sends with
/// `authorization: {credentials: …}`) or in upstream's header.
fn metrics_allowed(expected: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(expected) = expected else { return true };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().as_bytes());
    bearer.is_some_and(|given| same_secret(given, expected.as_bytes()))
        || token_matches(Some(expected), headers)
}

/// The metrics page, with the levels read now.
pub(crate) fn metrics_page(state: &ApiState) -> Response {
    let levels = Levels {
        queues: state.jobs.queue_depths(),
        spool_batches: crate::spool::list_spool(&state.spool_dir).len(),
        slots: state.jobs.slot_levels(),
    };
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], state.metrics.encode(&levels)).into_response()
}

fn token_matches(expected: Option<&str>, headers: &HeaderMap) -> bool {
    let Some(expected) = expected else { return true };
    let given = headers.get(ACCESS_TOKEN_HEADER).map_or(&b""[..], HeaderValue::as_bytes);
    same_secret(given, expected.as_bytes())
}

/// Compares two secrets in constant time, as digests of equal length: `ct_eq` on the raw bytes
/// returns early when the lengths differ, which would tell the token's length (review L10).
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    use md5::{Digest as _, Md5};
    bool::from(Md5::digest(given).ct_eq(&Md5::digest(expected)))
}

/// What `/run` answers for one trigger.
fn run_one(state: &ApiState, param: jobwheel_protocol::TriggerParam) -> Envelope<()> {
    match state.jobs.run(param) {
        Ok(()) => Envelope::success(),
        Err(msg) => Envelope::fail(msg),
    }
}

/// Marks a `/run` or `/runBatch` reply as coming from an executor that takes `/runBatch`.
fn offering_batches(mut response: Response) -> Response {
    response.headers_mut().insert(RUN_BATCH_HEADER, HeaderValue::from_static("1"));
    response
}

fn reply<T: serde::Serialize + ?Sized>(envelope: &T) -> Response {
    let mut response = axum::Json(envelope).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json;charset=UTF-8"));
    response
}
