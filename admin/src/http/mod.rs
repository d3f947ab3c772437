//! The admin's HTTP edge: routes, shared state and the error type.
//!
//! Two rooms: the executor-facing API (`executor_api`: registry, callbacks, module downloads,
//! 3.5's job OpenAPI) at `/` and under `/xxl-job-admin` (upstream's context path up to 3.4.0,
//! still configured in many executors), and the management API (`mgmt`, `/api/v1`) the web UI
//! and scripts use, answering with [`ApiError`]. Health, metrics and the UI's files sit beside
//! them.

use std::sync::Arc;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::routing::get;
use tower_http::trace::TraceLayer;

use crate::clock::Clock;
use crate::credentials::{AccessToken, GroupTokens};
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
pub(crate) use executor_api::{CallbackQueue, OpenApiLimit, RecentRegistrations, TokenFailures};
pub(crate) use metrics::open_router as metrics_router;
pub(crate) use mgmt::{LoginLimiter, ModuleInfoCache, RefusedLogins, audit_snapshots};

/// Upstream's admin context path before 3.4.1.
pub const LEGACY_CONTEXT_PATH: &str = "/xxl-job-admin";

/// What every handler shares.
pub(crate) struct HttpState {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) core: Arc<dyn AdminCore>,
    /// The only clock the edge reads (the core's: a test's manual clock steps the edge too).
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) token: AccessToken,
    pub(crate) callbacks: CallbackQueue,
    pub(crate) registrations: RecentRegistrations,
    /// Failed-login bookkeeping of the management API.
    pub(crate) login_limit: mgmt::LoginLimiter,
    /// Throttled and malformed logins folded for the audit log.
    pub(crate) refused_logins: mgmt::RefusedLogins,
    /// Whether session cookies carry `Secure` (the admin is reached over HTTPS).
    pub(crate) secure_cookie: bool,
    /// `--keep-upstream-password-hashes`: an upstream admin shares the users table.
    pub(crate) keep_upstream_password_hashes: bool,
    /// Proxies whose `X-Forwarded-For` names the client (login throttle).
    pub(crate) trusted_proxies: crate::trusted_proxies::TrustedProxies,
    /// `--executor-dead-timeout`: registrations older than this are not shown as live.
    pub(crate) executor_dead_timeout: std::time::Duration,
    /// The admin's language (`--i18n`): titles in `/api/v1/meta`, trigger messages.
    pub(crate) lang: crate::lang::MessageLang,
    /// What uploaded Wasm modules export and import, by digest.
    pub(crate) module_info: mgmt::ModuleInfoCache,
    /// Seals secret values written through the API (never opens them: reads show "set").
    pub(crate) secret_box: Arc<crate::sealing::SecretBox>,
    /// The admin's metrics (`/metrics`).
    pub(crate) metrics: Arc<crate::metrics::AdminMetrics>,
    /// Groups' own access tokens (xxl-job 3.5), accepted beside [`HttpState::token`].
    pub(crate) group_tokens: Arc<GroupTokens>,
    /// The rate limit of xxl-job 3.5's job OpenAPI.
    pub(crate) openapi_limit: OpenApiLimit,
    /// Wrong access tokens per client address on `/api/*`.
    pub(crate) token_failures: TokenFailures,
    /// Who reads each audited resource for its before/after snapshots.
    pub(crate) audit_snapshots: mgmt::audit::Snapshots,
    /// Single sign-on providers and whether local passwords are on (docs/sso.md).
    pub(crate) sso: Arc<crate::sso::Sso>,
}

impl HttpState {
    /// Now, in epoch milliseconds, by the edge's clock.
    pub(crate) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Now as a date-time, by the edge's clock.
    pub(crate) fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// A monotonic instant, by the edge's clock: what the throttles' windows are measured in.
    pub(crate) fn instant(&self) -> std::time::Instant {
        self.clock.instant()
    }
}

/// All routes of the admin.
pub(crate) fn router(state: Arc<HttpState>) -> Router {
    let executor_api = executor_api::router();
    let management = mgmt::router()
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), mgmt::audit::record))
        .layer(axum::extract::DefaultBodyLimit::max(mgmt::MAX_JSON_BYTES))
        .layer(axum::middleware::from_fn(mgmt::json_errors));
    // MCP tools call the management API in-process, with the caller's token (docs/mcp.md).
    let mcp = mcp::router(management.clone().with_state(Arc::clone(&state)), Arc::clone(&state));
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
