//! `GET /api/v1/groups/{id}/executors`: what each executor of a group is doing right now — runs
//! executing, triggers queued, and under `--max-concurrent-runs` the slots and the runs waiting
//! for one — asked of the executors themselves (`/status`, jobwheel executors), in parallel.
//!
//! The addresses are the group's current address list, the one routing uses. An executor that
//! cannot answer (unreachable, not a jobwheel executor, wrong token) is listed with the reason.
//!
//! Each executor's [`ExecutorKind`] tells jobwheel executors from others (xxl-job's own Java
//! executors, pyxxl, …): a GLUE(Java) job runs only on the latter, as the GLUE IDE says.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::auth::Principal;
use super::groups::load;
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, RegistryKey};
use jobwheel_protocol::REGISTRY_GROUP_EXECUTOR;

/// What kind of executor an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ExecutorKind {
    /// A jobwheel executor: it answered `/status`, or its heartbeats carry an incarnation.
    Jobwheel,
    /// Its heartbeats carry none: xxl-job's own executor or another third-party one.
    Other,
    /// Neither: not reachable and no heartbeat seen by this admin (a manual address, or this
    /// admin started less than a heartbeat ago).
    Unknown,
}

/// One executor's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecutorView {
    address: String,
    kind: ExecutorKind,
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
    /// Whether it runs GLUE jobs (`false`: a BEAN-only executor, `--glue-enabled=false`);
    /// null when it did not answer.
    glue_enabled: Option<bool>,
}

/// `GET /api/v1/groups/{id}/executors`.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
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
        let key = RegistryKey {
            registry_group: REGISTRY_GROUP_EXECUTOR.to_owned(),
            registry_key: group.group.app_name.clone(),
            registry_value: address.clone(),
        };
        asks.spawn(async move {
            let answer = state.core.executor_status(group.id, &address).await;
            let heard = match state.registrations.is_jobwheel(&key) {
                Some(true) => ExecutorKind::Jobwheel,
                Some(false) => ExecutorKind::Other,
                None => ExecutorKind::Unknown,
            };
            (position, view(address, heard, answer))
        });
    }
    let mut views: Vec<(usize, ExecutorView)> = asks.join_all().await;
    views.sort_by_key(|(position, _)| *position);
    Ok(Json(views.into_iter().map(|(_, view)| view).collect()))
}

fn view(
    address: String,
    heard: ExecutorKind,
    answer: Result<jobwheel_protocol::ExecutorStatus, crate::engine::EngineError>,
) -> ExecutorView {
    match answer {
        // Only jobwheel executors answer `/status`.
        Ok(status) => ExecutorView {
            address,
            kind: ExecutorKind::Jobwheel,
            reachable: true,
            error: None,
            running: status.running,
            queued: status.queued,
            cap: status.cap,
            waiting_for_slot: status.waiting_for_slot,
            glue_enabled: Some(status.glue_enabled),
        },
        Err(error) => ExecutorView {
            address,
            kind: heard,
            reachable: false,
            error: Some(error.to_string()),
            running: 0,
            queued: 0,
            cap: None,
            waiting_for_slot: 0,
            glue_enabled: None,
        },
    }
}
