//! The MCP server at `/api/mcp` (docs/mcp.md): AI agents drive jobwheel through the official Rust
//! MCP SDK (`rmcp`) over streamable HTTP.
//!
//! Every tool is one or two calls of the management API made in-process with the caller's own
//! bearer token ([`api::Api`]), so a tool is authorized exactly like its REST route: the
//! token's user, role and groups, and the token's scope (`read`, `run`, `write`), and every change
//! is in the audit log — with the token's name as its client. The endpoint takes API tokens only
//! (no session cookies), refuses a request from a browser page (any `Origin` header), and is
//! stateless, so any admin of several answers any request.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::http::mgmt::auth::{AgentToken, bearer, digest};
use crate::http::{ApiError, HttpState};
use crate::store::Store;

mod api;
mod params;
mod report;
mod tools;

/// What the MCP room reads itself (its tools go through the management API).
pub(crate) struct McpState {
    pub(crate) store: Arc<dyn Store>,
    /// Proxies whose `X-Forwarded-For` names the client (the audit log's client).
    pub(crate) trusted_proxies: crate::trusted_proxies::TrustedProxies,
    /// The scheduler's lateness, for the health report tool.
    pub(crate) metrics: Arc<crate::metrics::AdminMetrics>,
}

/// Where the server answers.
pub(crate) const PATH: &str = "/api/mcp";

/// The `/api/mcp` route; `api` is the management API it calls (with its state).
pub(crate) fn router(api: Router, state: Arc<McpState>) -> Router<HttpState> {
    let config = StreamableHttpServerConfig::default()
        // Stateless: no session to lose when a request reaches another admin.
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // A bearer token is required, so DNS rebinding gains an attacker nothing; admins are
        // reached under many names. Browser pages are refused by their Origin instead.
        .disable_allowed_hosts()
        .enforce_origin_validation();
    let tools_state = Arc::clone(&state);
    let service = StreamableHttpService::new(
        move || Ok(tools::Jobwheel::new(api::Api::new(api.clone()), Arc::clone(&tools_state))),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new().nest_service(PATH, service).layer(axum::middleware::from_fn_with_state(state, authenticate))
}

/// Lets through only requests with a valid API token, noting its name for the tools.
async fn authenticate(State(state): State<Arc<McpState>>, mut request: Request, next: Next) -> Response {
    let Some(token) = bearer(request.headers()).map(str::to_owned) else {
        return refuse("send an API token as Authorization: Bearer … (create one under API tokens)");
    };
    match state.store.find_api_token(&digest(&token)).await {
        Ok(Some(row)) => {
            let client = request
                .extensions()
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map_or_else(String::new, |peer| {
                    state.trusted_proxies.client(peer.0.ip(), request.headers()).to_string()
                });
            request.extensions_mut().insert(AgentToken { token, name: row.name, client });
            next.run(request).await
        }
        Ok(None) => refuse("unknown or revoked API token"),
        Err(e) => ApiError::from(e).into_response(),
    }
}

fn refuse(msg: &str) -> Response {
    let mut response = ApiError::Unauthenticated(msg.to_owned()).into_response();
    response
        .headers_mut()
        .insert(axum::http::header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
    response
}
