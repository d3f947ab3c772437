//! `GET /api/v1/jobs/{id}/log-search`: text search over the logs the admins keep of a job's
//! runs (lines executors shipped, `job_logs::search`), within a range of trigger times,
//! newest run first, a page at a time. For the caller's groups only, like the logs themselves.
//! Runs whose logs stayed on an executor's disk (`--job-logs files`, upstream executors) are
//! not searched: the admin has no copy of them.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;

use super::ApiQuery;
use super::auth::Principal;
use super::job_view::permitted_job;
use crate::http::{ApiError, MgmtState};
use crate::job_logs::{LogSearch, MAX_MATCHES, SearchCursor, SearchPage};
use crate::store::JobId;

/// Longest text searched for.
const MAX_TEXT_CHARS: usize = 200;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SearchQuery {
    text: String,
    /// Runs triggered at or after, epoch ms.
    from: Option<i64>,
    /// Runs triggered before, epoch ms.
    to: Option<i64>,
    limit: Option<usize>,
    /// The previous page's `next`.
    after: Option<String>,
}

/// `GET /api/v1/jobs/{id}/log-search`.
pub(crate) async fn search(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<SearchPage>, ApiError> {
    let request = checked(id, query)?;
    permitted_job(&state, &principal, id).await?;
    Ok(Json(crate::job_logs::search(state.store.as_ref(), &request).await?))
}

/// The query as a search, or a 400 naming the field at fault.
fn checked(id: i32, query: SearchQuery) -> Result<LogSearch, ApiError> {
    let bad = |msg: String| Err(ApiError::BadRequest(msg));
    if query.text.trim().is_empty() {
        return bad("text: the text to search for is empty".to_owned());
    }
    if query.text.chars().count() > MAX_TEXT_CHARS {
        return bad(format!("text: at most {MAX_TEXT_CHARS} characters"));
    }
    let (from_ms, to_ms) = (query.from.unwrap_or(0), query.to.unwrap_or(i64::MAX));
    if from_ms >= to_ms {
        return bad(format!("from: must be before to ({from_ms} is not before {to_ms})"));
    }
    let limit = query.limit.unwrap_or(100);
    if !(1..=MAX_MATCHES).contains(&limit) {
        return bad(format!("limit: between 1 and {MAX_MATCHES}"));
    }
    let after = match query.after.as_deref() {
        None => None,
        Some(token) => match SearchCursor::parse(token) {
            Some(cursor) => Some(cursor),
            None => {
                return bad(format!("after: {token:?} is not a cursor this search handed out (its next)"));
            }
        },
    };
    Ok(LogSearch { job: JobId(id), text: query.text, from_ms, to_ms, limit, after })
}
