//! The executor-facing room of the HTTP edge: what executors and xxl-job 3.5 clients call with
//! an access token, at `/` and under upstream's old context path `/xxl-job-admin`.
//!
//! - `calls.rs`: `POST /api/registry`, `/api/registryRemove`, `/api/callback` (and the dispatch
//!   of 3.5's job OpenAPI, `openapi_jobs.rs`, which runs the `/api/v1` job handlers as a user
//!   of the caller's group).
//! - `modules.rs`: `GET /api/wasm/{digest}`, the module bytes a `GLUE_WASM` trigger points at.
//! - `dial.rs`: `GET /api/dial`, a dial-out executor's WebSocket.
//! - `log_ship.rs`: `POST /api/logShip`, job log lines executors ship (`job_logs`).
//! - `auth.rs` (who is calling: the global token or a group's own), `token_failures.rs`
//!   (throttling wrong tokens), `callback_queue.rs` (results answered only once stored),
//!   `registrations.rs` (which heartbeats are new).
//!
//! The management API (`/api/v1`, cookie or API-token users) is the other room, `super::mgmt`.

use std::sync::Arc;

use axum::Router;
use axum::routing::{any, get, post};

use super::{AdminCore, HttpState, MgmtState};
use crate::clock::Clock;
use crate::credentials::{AccessToken, GroupTokens};
use crate::store::Store;

mod auth;
mod callback_queue;
mod calls;
mod dial;
mod log_ship;
mod modules;
pub(crate) mod openapi_jobs;
mod registrations;
mod token_failures;

pub(crate) use callback_queue::CallbackQueue;
pub(crate) use openapi_jobs::OpenApiLimit;
pub(crate) use registrations::RecentRegistrations;
pub(crate) use token_failures::TokenFailures;

/// What the executor-facing room's handlers share.
pub(crate) struct ExecutorApiState {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) core: Arc<dyn AdminCore>,
    /// The edge's clock (the core's).
    pub(crate) clock: Arc<dyn Clock>,
    /// The global access token (`--access-token`).
    pub(crate) token: AccessToken,
    /// Groups' own access tokens (xxl-job 3.5), accepted beside [`ExecutorApiState::token`].
    pub(crate) group_tokens: Arc<GroupTokens>,
    pub(crate) callbacks: CallbackQueue,
    /// Heartbeats seen; the management room reads them too (which executors are live).
    pub(crate) registrations: Arc<RecentRegistrations>,
    /// The rate limit of xxl-job 3.5's job OpenAPI.
    pub(crate) openapi_limit: OpenApiLimit,
    /// Wrong access tokens per client address on `/api/*`.
    pub(crate) token_failures: TokenFailures,
    /// Proxies whose `X-Forwarded-For` names the client (the wrong-token throttle).
    pub(crate) trusted_proxies: crate::trusted_proxies::TrustedProxies,
    pub(crate) metrics: Arc<crate::metrics::AdminMetrics>,
    /// The links of dial-out executors (`GET /api/dial`), shared with the engine's client.
    pub(crate) dial: Arc<crate::executor_client::DialHub>,
    /// 3.5's job OpenAPI runs the management room's job handlers as a user of the caller's
    /// group, with that room's state.
    pub(crate) mgmt: Arc<MgmtState>,
}

/// The executor-facing routes, to be mounted at `/` and under the legacy context path.
pub(crate) fn router() -> Router<HttpState> {
    Router::new()
        .route("/api/", any(calls::unnamed))
        .route(jobwheel_protocol::dial::DIAL_PATH, get(dial::connect))
        .route("/api/logShip", post(log_ship::ship))
        .route("/api/{uri}", any(calls::named))
        .route("/api/wasm/{digest}", get(modules::module).fallback(modules::method_not_allowed))
}
