//! The admin's HTTP edge: routes, shared state and the error type.
//!
//! Three rooms, each with a state of its own ([`HttpState`] hands each its part): the
//! executor-facing API (`executor_api`: registry, callbacks, module downloads, 3.5's job OpenAPI)
//! at `/` and under `/xxl-job-admin` (upstream's context path up to 3.4.0, still configured in
//! many executors), the management API (`mgmt`, `/api/v1`) the web UI and scripts use, answering
//! with [`ApiError`], and the MCP server (`mcp`, `/api/mcp`), which calls the management API.
//! Health, metrics and the UI's files sit beside them. The edge reads time only from the core's
//! clock, which each room's state carries, so tests step it like the engine's.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, MatchedPath, Request};
use axum::routing::get;
use tower_http::trace::TraceLayer;

use crate::store::Store;

pub mod core;
pub mod error;
mod executor_api;
mod health;
mod mcp;
mod metrics;
mod mgmt;
mod ui;

pub use core::AdminCore;
pub use error::ApiError;
pub(crate) use executor_api::{
    CallbackQueue, ExecutorApiState, OpenApiLimit, RecentRegistrations, TokenFailures,
};
pub(crate) use mcp::McpState;
pub(crate) use metrics::open_router as metrics_router;
pub(crate) use mgmt::{LoginLimiter, MgmtState, ModuleInfoCache, RefusedLogins, audit_snapshots};

/// Upstream's admin context path before 3.4.1.
pub const LEGACY_CONTEXT_PATH: &str = "/xxl-job-admin";

/// The edge's state: one state per room, which the room's handlers take through [`FromRef`]
/// (`State<Arc<MgmtState>>` and so on). A room holds only what its own handlers read.
#[derive(Clone)]
pub(crate) struct HttpState {
    pub(crate) executor_api: Arc<ExecutorApiState>,
    pub(crate) mgmt: Arc<MgmtState>,
    pub(crate) mcp: Arc<McpState>,
    pub(crate) ops: Arc<OpsState>,
}

/// What the operations pages read (`/readyz`, `/metrics`): the database, the core's levels and
/// the callback queue's depth.
pub(crate) struct OpsState {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) core: Arc<dyn AdminCore>,
    pub(crate) callbacks: CallbackQueue,
    pub(crate) metrics: Arc<crate::metrics::AdminMetrics>,
}

impl FromRef<HttpState> for Arc<ExecutorApiState> {
    fn from_ref(state: &HttpState) -> Self {
        Arc::clone(&state.executor_api)
    }
}

impl FromRef<HttpState> for Arc<MgmtState> {
    fn from_ref(state: &HttpState) -> Self {
        Arc::clone(&state.mgmt)
    }
}

impl FromRef<HttpState> for Arc<McpState> {
    fn from_ref(state: &HttpState) -> Self {
        Arc::clone(&state.mcp)
    }
}

impl FromRef<HttpState> for Arc<OpsState> {
    fn from_ref(state: &HttpState) -> Self {
        Arc::clone(&state.ops)
    }
}

/// All routes of the admin.
pub(crate) fn router(state: HttpState) -> Router {
    let executor_api = executor_api::router();
    let management = mgmt::router()
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state.mgmt), mgmt::audit::record))
        .layer(axum::extract::DefaultBodyLimit::max(mgmt::MAX_JSON_BYTES))
        .layer(axum::middleware::from_fn(mgmt::json_errors));
    // MCP tools call the management API in-process, with the caller's token (docs/mcp.md).
    let mcp = mcp::router(management.clone().with_state(state.clone()), Arc::clone(&state.mcp));
    Router::new()
        .merge(mcp)
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(metrics::guarded))
        .merge(management)
        .merge(executor_api.clone())
        .nest(LEGACY_CONTEXT_PATH, executor_api)
        .merge(ui::router())
        .fallback(error::no_route)
        .layer(axum::middleware::from_fn(error::log_internal_errors))
        .layer(TraceLayer::new_for_http().make_span_with(|request: &Request| {
            // The route pattern, not the path: digests and ids would make every span unique.
            let route = request.extensions().get::<MatchedPath>().map_or("<no route>", MatchedPath::as_str);
            tracing::debug_span!("http", method = %request.method(), route)
        }))
        .with_state(state)
}
