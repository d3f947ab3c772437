//! `POST /api/v1/jobs/{id}/wasm/what-if` (docs/replay.md, "What-if"): the job's last recorded
//! runs replayed against one of its module versions — typically a candidate uploaded with
//! `?candidate=true`, not yet run by triggers — so whoever proposes a new version (a person in
//! the upload flow, an agent over MCP) sees what it would have done with yesterday's real inputs
//! and answers before it ships: per run, the same or not, and what differs.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::ApiJson;
use super::auth::Principal;
use super::job_view::permitted_job;
use crate::engine::{MAX_WHAT_IF_RUNS, WhatIfRow};
use crate::http::{ApiError, MgmtState};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WhatIfBody {
    /// The module version to try (`GET /api/v1/jobs/{id}/wasm`).
    version: i64,
    /// How many of the newest recorded runs (default 10, at most 50).
    #[serde(default)]
    runs: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WhatIfView {
    version: i64,
    /// How many of the runs replayed identically.
    identical: usize,
    /// How many differ.
    different: usize,
    /// How many could not be replayed.
    not_replayed: usize,
    runs: Vec<WhatIfRow>,
}

/// `POST /api/v1/jobs/{id}/wasm/what-if`.
pub(crate) async fn what_if(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(body): ApiJson<WhatIfBody>,
) -> Result<Json<WhatIfView>, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    let runs = body.runs.unwrap_or(10);
    if !(1..=MAX_WHAT_IF_RUNS).contains(&runs) {
        return Err(ApiError::BadRequest(format!("runs: 1 to {MAX_WHAT_IF_RUNS}")));
    }
    super::approvals::refuse_unapproved_reader(&state, &principal, job.id, body.version).await?;
    let rows = state.core.what_if(job.id, body.version, runs).await?;
    let same = |row: &&WhatIfRow| row.replay.as_ref().is_some_and(|r| r.comparison.identical);
    let identical = rows.iter().filter(same).count();
    let not_replayed = rows.iter().filter(|r| r.replay.is_none()).count();
    Ok(Json(WhatIfView {
        version: body.version,
        identical,
        different: rows.len() - identical - not_replayed,
        not_replayed,
        runs: rows,
    }))
}
