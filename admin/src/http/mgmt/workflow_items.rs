//! `GET /api/v1/workflow-instances/{id}/nodes/{name}/items` (jobwheel extension;
//! docs/workflows.md, "Map over data"): a map node's items in item order — each with its state,
//! attempt, log row, item and output — of its newest run (or `?run=`), optionally of one state
//! (`?status=FAILED`), a page at a time. Rights as for reading the instance. A node that is no
//! map has no items: an empty page.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::workflow_instances::permitted_instance;
use super::workflow_reach::Deleted;
use super::{ApiQuery, DEFAULT_LIMIT, MAX_LIMIT};
use crate::http::{ApiError, MgmtState};
use crate::store::{ItemRow, Page, RunStatus};

/// The query: which run (the node's newest by default), which state, which page.
#[derive(Debug, Deserialize)]
pub(crate) struct ItemsQuery {
    #[serde(default)]
    run: Option<i64>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    offset: u32,
    #[serde(default)]
    limit: Option<u32>,
}

/// One item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemView {
    index: i32,
    attempt: i32,
    status: &'static str,
    log_id: Option<i64>,
    item: serde_json::Value,
    output: Option<serde_json::Value>,
    message: Option<String>,
}

impl ItemView {
    fn of(row: ItemRow) -> Self {
        Self {
            index: row.idx,
            attempt: row.attempt,
            status: row.status.name(),
            log_id: row.log_id.map(|l| l.0),
            item: serde_json::from_str(&row.item).unwrap_or_default(),
            output: row.output.and_then(|o| serde_json::from_str(&o).ok()),
            message: row.message,
        }
    }
}

/// A page of items.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemPage {
    /// The run they belong to (none when the node has no run yet).
    run_id: Option<i64>,
    total: u64,
    rows: Vec<ItemView>,
}

/// The item states a filter may name.
const STATES: [RunStatus; 5] =
    [RunStatus::Due, RunStatus::Fired, RunStatus::Succeeded, RunStatus::Failed, RunStatus::Stopped];

/// `GET /api/v1/workflow-instances/{id}/nodes/{name}/items`.
pub(crate) async fn items(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, node)): Path<(i64, String)>,
    ApiQuery(query): ApiQuery<ItemsQuery>,
) -> Result<Json<ItemPage>, ApiError> {
    let row = permitted_instance(&state, &principal, id, Deleted::Allowed).await?;
    let status = match query.status.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(name) => {
            Some(STATES.into_iter().find(|s| s.name().eq_ignore_ascii_case(name)).ok_or_else(|| {
                ApiError::BadRequest(format!(
                    "status: {name:?} is not DUE, FIRED, SUCCEEDED, FAILED or STOPPED"
                ))
            })?)
        }
    };
    let runs = state.store.instance_runs(row.id).await?;
    let mine = runs.iter().filter(|r| r.node == node);
    let run = match query.run {
        Some(run) => Some(
            mine.clone()
                .find(|r| r.id.0 == run)
                .ok_or_else(|| ApiError::NotFound(format!("node {node} of instance {id} has no run {run}")))?
                .id,
        ),
        None => mine.max_by_key(|r| r.id.0).map(|r| r.id),
    };
    let Some(run) = run else { return Ok(Json(ItemPage { run_id: None, total: 0, rows: Vec::new() })) };
    let page = Page { offset: query.offset, limit: query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT) };
    let found = state.store.page_items(run, status, page).await?;
    Ok(Json(ItemPage {
        run_id: Some(run.0),
        total: found.total,
        rows: found.rows.into_iter().map(ItemView::of).collect(),
    }))
}
