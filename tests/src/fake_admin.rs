//! A fake admin: serves `api/registry`, `api/registryRemove`, `api/callback` and `api/logShip`
//! (at `/` and under `/xxl-job-admin`), records every request, and can be switched to failing, to holding
//! callbacks unanswered, or stopped and restarted on the same port to simulate outages.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::Path;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, CallbackBody, HandleCallbackParam, RegistryParam};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::wait::wait_until;

/// Everything the fake admin received.
#[derive(Debug, Default, Clone)]
pub struct Recorded {
    pub registry: Vec<RegistryParam>,
    pub registry_remove: Vec<RegistryParam>,
    pub callbacks: Vec<HandleCallbackParam>,
    /// Number of callback POSTs (batches) accepted.
    pub callback_batches: usize,
    /// Requests refused because of a wrong or missing token.
    pub rejected_tokens: usize,
    /// Module downloads served, by digest.
    pub module_fetches: Vec<String>,
    /// Results of callback POSTs received while holding: never answered 200, never stored.
    pub held: Vec<HandleCallbackParam>,
    /// Every shipped log piece accepted, in arrival order (resent ones again).
    pub log_pieces: Vec<jobwheel_protocol::log_ship::LogPiece>,
}

struct AdminState {
    token: Option<String>,
    failing: AtomicBool,
    /// While true, callbacks are received but not answered (a slow store, a dying admin).
    holding: tokio::sync::watch::Sender<bool>,
    recorded: Mutex<Recorded>,
    /// Wasm modules served at `api/wasm/{digest}`, like a jobwheel admin's module store.
    modules: Mutex<HashMap<String, Vec<u8>>>,
}

pub struct FakeAdmin {
    addr: SocketAddr,
    state: Arc<AdminState>,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl FakeAdmin {
    /// Starts on a free loopback port, requiring `token` if given.
    pub async fn start(token: Option<&str>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind fake admin");
        let state = Arc::new(AdminState {
            token: token.map(str::to_owned),
            failing: AtomicBool::new(false),
            holding: tokio::sync::watch::Sender::new(false),
            recorded: Mutex::new(Recorded::default()),
            modules: Mutex::new(HashMap::new()),
        });
        Self::serve(listener, state)
    }

    fn serve(listener: TcpListener, state: Arc<AdminState>) -> Self {
        let addr = listener.local_addr().expect("local addr");
        let (stop, task) = spawn_server(listener, Arc::clone(&state));
        Self { addr, state, stop, task: Some(task) }
    }

    /// `http://127.0.0.1:PORT` (no trailing slash, no context path).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Makes every API call answer `{"code":500}` (true) or succeed again (false).
    pub fn set_failing(&self, failing: bool) {
        self.state.failing.store(failing, Ordering::SeqCst);
    }

    /// Holds callback POSTs unanswered (true): their results go to [`Recorded::held`], and when
    /// released (false) they are answered `{"code":500}`, as by an admin that could not store
    /// them. Nothing held ever counts as delivered.
    pub fn hold_callbacks(&self, holding: bool) {
        self.state.holding.send_replace(holding);
    }

    /// Stops listening entirely (connections are refused until [`FakeAdmin::restart`]).
    pub async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Listens again on the same port, keeping what was recorded.
    pub async fn restart(&mut self) {
        let listener = TcpListener::bind(self.addr).await.expect("rebind fake admin on the same port");
        let (stop, task) = spawn_server(listener, Arc::clone(&self.state));
        self.stop = stop;
        self.task = Some(task);
    }

    /// Stores a Wasm module and returns its lower-case hex SHA-256 digest.
    pub fn add_module(&self, bytes: Vec<u8>) -> String {
        let digest = hex::encode(Sha256::digest(&bytes));
        self.state.modules.lock().expect("modules").insert(digest.clone(), bytes);
        digest
    }

    /// Serves `bytes` under `digest` even though they do not hash to it (a corrupt store).
    pub fn add_module_as(&self, digest: &str, bytes: Vec<u8>) {
        self.state.modules.lock().expect("modules").insert(digest.to_owned(), bytes);
    }

    pub fn recorded(&self) -> Recorded {
        self.state.recorded.lock().expect("recorded").clone()
    }

    /// Waits for the callback of `log_id` and returns it.
    pub async fn callback_for(&self, log_id: i64, timeout: Duration) -> HandleCallbackParam {
        let mut found = None;
        wait_until(timeout, &format!("callback for log {log_id}"), || {
            found = self.recorded().callbacks.into_iter().find(|c| c.log_id == log_id);
            found.is_some()
        })
        .await;
        found.expect("found")
    }

    /// Waits until `condition` holds on what was recorded.
    pub async fn wait_for(&self, timeout: Duration, what: &str, condition: impl Fn(&Recorded) -> bool) {
        wait_until(timeout, what, || condition(&self.recorded())).await;
    }
}

impl Drop for FakeAdmin {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn spawn_server(
    listener: TcpListener,
    state: Arc<AdminState>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let api = Router::new()
        .route("/api/registry", post(registry))
        .route("/api/registryRemove", post(registry_remove))
        .route("/api/callback", post(callback))
        .route("/api/logShip", post(log_ship))
        .route("/api/wasm/{digest}", get(module));
    let app = Router::new().nest("/xxl-job-admin", api.clone()).merge(api).with_state(state);
    let stop = CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    });
    (stop, task)
}

fn check(state: &AdminState, headers: &HeaderMap) -> Result<(), axum::Json<Value>> {
    if let Some(token) = &state.token {
        let given = headers.get(ACCESS_TOKEN_HEADER).and_then(|v| v.to_str().ok());
        if given != Some(token.as_str()) {
            state.recorded.lock().expect("recorded").rejected_tokens += 1;
            return Err(axum::Json(json!({"code": 500, "msg": "The access token is wrong."})));
        }
    }
    if state.failing.load(Ordering::SeqCst) {
        return Err(axum::Json(json!({"code": 500, "msg": "fake admin is failing"})));
    }
    Ok(())
}

async fn registry(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    axum::Json(param): axum::Json<RegistryParam>,
) -> axum::Json<Value> {
    record(&state, &headers, |r| r.registry.push(param))
}

async fn registry_remove(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    axum::Json(param): axum::Json<RegistryParam>,
) -> axum::Json<Value> {
    record(&state, &headers, |r| r.registry_remove.push(param))
}

/// Checks the token and failure switch, then records the request like upstream's admin answers.
fn record(state: &AdminState, headers: &HeaderMap, update: impl FnOnce(&mut Recorded)) -> axum::Json<Value> {
    if let Err(reply) = check(state, headers) {
        return reply;
    }
    update(&mut state.recorded.lock().expect("recorded"));
    axum::Json(json!({"code": 200, "msg": null, "content": null}))
}

async fn callback(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<CallbackBody>,
) -> axum::Json<Value> {
    if *state.holding.borrow() {
        state.recorded.lock().expect("recorded").held.extend(body.into_items());
        let mut holding = state.holding.subscribe();
        let _ = holding.wait_for(|holding| !*holding).await;
        return axum::Json(json!({"code": 500, "msg": "fake admin held this callback"}));
    }
    record(&state, &headers, |r| {
        r.callback_batches += 1;
        r.callbacks.extend(body.into_items());
    })
}

/// Shipped log lines: 503 while failing (the executor keeps them), else decoded and recorded.
async fn log_ship(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if check(&state, &headers).is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "fake admin is failing or the token is wrong")
            .into_response();
    }
    match jobwheel_protocol::log_ship::decode(&body) {
        Ok(batch) => {
            state.recorded.lock().expect("recorded").log_pieces.extend(batch.pieces);
            axum::Json(json!({"code": 200})).into_response()
        }
        Err(e) => (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    }
}

async fn module(
    State(state): State<Arc<AdminState>>,
    headers: HeaderMap,
    Path(digest): Path<String>,
) -> Response {
    if check(&state, &headers).is_err() {
        return (StatusCode::UNAUTHORIZED, "wrong token").into_response();
    }
    let bytes = state.modules.lock().expect("modules").get(&digest).cloned();
    match bytes {
        Some(bytes) => {
            state.recorded.lock().expect("recorded").module_fetches.push(digest);
            bytes.into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such module").into_response(),
    }
}
