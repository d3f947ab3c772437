//! A run's flight record as the log page shows it, and `POST /api/v1/logs/{id}/replay`
//! (docs/replay.md): a recorded Wasm run run again on an executor of its group with every host
//! call answered from its journal, and compared with the original. Audited (`log.replay`); an
//! API token needs the `run` scope, as a replay runs the job's module with its secrets.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::logs::permitted_log;
use crate::engine::ReplayOutcome;
use crate::http::{ApiError, MgmtState};
use crate::store::LogId;

/// What the log page shows of a run's record without opening it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlightView {
    /// The module the run ran.
    module: String,
    /// Whether it can be replayed.
    replayable: bool,
    /// Why not, when it cannot.
    reason: Option<String>,
    /// The record's size, bytes of JSON.
    record_bytes: i32,
}

/// The record of `log`, if it has one.
pub(crate) async fn flight_view(state: &MgmtState, log: LogId) -> Result<Option<FlightView>, ApiError> {
    Ok(state.store.flight(log).await?.map(|row| FlightView {
        module: row.module,
        replayable: row.replayable,
        reason: row.reason,
        record_bytes: row.record_bytes,
    }))
}

/// Body of `POST /api/v1/logs/{id}/replay` (may be absent).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ReplayBody {
    /// A module version of the job (`GET /api/v1/jobs/{id}/wasm`) to replay instead of the one
    /// the run ran: a what-if replay.
    #[serde(default)]
    version: Option<i64>,
}

/// `POST /api/v1/logs/{id}/replay`.
pub(crate) async fn replay(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    body: axum::body::Bytes,
) -> Result<Json<ReplayOutcome>, ApiError> {
    // No body (or an empty one) replays the run's own module.
    let body: ReplayBody = super::optional_json(&body, |e| format!("invalid body: {e}"))?;
    let log = permitted_log(&state, &principal, id).await?;
    if let Some(version) = body.version {
        super::approvals::refuse_unapproved_reader(&state, &principal, log.job_id, version).await?;
    }
    Ok(Json(state.core.replay(log.id, body.version).await?))
}
