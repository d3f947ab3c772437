//! `GET /api/v1/groups/{id}/executors`: what each executor of a group is doing right now — runs
//! executing, triggers queued, and under `--max-concurrent-runs` the slots and the runs waiting
//! for one — asked of the executors themselves (`/status`, jobwheel executors), in parallel.
//!
//! The addresses are the group's current address list, the one routing uses. An executor that
//! cannot answer (unreachable, not a jobwheel executor, wrong token) is listed with the reason.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::auth::Principal;
use super::groups::load;
use crate::http::{ApiError, HttpState};
use crate::store::GroupId;

/// One executor's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutorView {
    address: String,
    /// Whether it answered; the counts are zero otherwise.
    reachable: bool,
    /// Why it did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    running: usize,
    queued: usize,
    /// `--max-concurrent-runs`, if set.
    cap: Option<usize>,
    waiting_for_slot: usize,
}

/// `GET /api/v1/groups/{id}/executors`.
pub(crate) async fn list(
    State(state): State<Arc<HttpState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<Vec<ExecutorView>>, ApiError> {
    principal.require_group(GroupId(id))?;
    let group = load(&state, id).await?;
    let addresses: Vec<String> = group
        .group
        .address_list
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    let mut asks = tokio::task::JoinSet::new();
    for (position, address) in addresses.into_iter().enumerate() {
        let state = Arc::clone(&state);
        asks.spawn(async move {
            let answer = state.core.executor_status(group.id, &address).await;
            (position, view(address, answer))
        });
    }
    let mut views: Vec<(usize, ExecutorView)> = asks.join_all().await;
    views.sort_by_key(|(position, _)| *position);
    Ok(Json(views.into_iter().map(|(_, view)| view).collect()))
}

fn view(
    address: String,
    answer: Result<jobwheel_protocol::ExecutorStatus, crate::engine::EngineError>,
) -> ExecutorView {
    match answer {
        Ok(status) => ExecutorView {
            address,
            reachable: true,
            error: None,
            running: status.running,
            queued: status.queued,
            cap: status.cap,
            waiting_for_slot: status.waiting_for_slot,
        },
        Err(error) => ExecutorView {
            address,
            reachable: false,
            error: Some(error.to_string()),
            running: 0,
            queued: 0,
            cap: None,
            waiting_for_slot: 0,
        },
    }
}
