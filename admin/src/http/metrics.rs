//! `GET /metrics`: the admin's Prometheus metrics in the OpenMetrics text format.
//!
//! On the main listener it needs an administrator's API token (`Authorization: Bearer …`, what
//! Prometheus sends with `authorization: {credentials: …}`) or session: the series name every
//! executor group, which a user limited to some groups may not see. `--metrics-listen` serves
//! the same page on a second address without credentials, for a scraper on a private network.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::mgmt::auth::Principal;
use super::{ApiError, OpsState};
use crate::metrics::{CONTENT_TYPE, Levels};
use crate::routing::split_address_list;

/// `GET /metrics` on the main listener.
pub(crate) async fn guarded(
    State(state): State<Arc<OpsState>>,
    principal: Principal,
) -> Result<Response, ApiError> {
    principal.require_admin()?;
    Ok(exposition(&state).await)
}

/// The router of `--metrics-listen`: `/metrics` only, no credentials.
pub(crate) fn open_router(state: Arc<OpsState>) -> Router {
    Router::new()
        .route("/metrics", get(|State(state): State<Arc<OpsState>>| async move { exposition(&state).await }))
        .with_state(state)
}

async fn exposition(state: &OpsState) -> Response {
    let scheduler = state.core.scheduler_levels();
    let executors = match state.store.list_groups().await {
        Ok(groups) => groups
            .into_iter()
            .map(|g| {
                let live = g.group.address_list.as_deref().map_or(0, |list| split_address_list(list).len());
                (g.group.app_name, live)
            })
            .collect(),
        Err(error) => {
            // The rest of the page is still worth serving; the gap shows as missing series.
            tracing::warn!(%error, "metrics: cannot read the executor groups");
            Vec::new()
        }
    };
    let levels = Levels { scheduler, callback_batches: state.callbacks.pending(), executors };
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], state.metrics.encode(&levels)).into_response()
}
