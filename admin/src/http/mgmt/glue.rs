//! `/api/v1/jobs/{id}/glue`: the GLUE IDE's source, remark and 30-version history of a script
//! or GLUE(Java) job (upstream `JobCodeController`). Rollback is the UI loading a history entry
//! and saving it. The admin only keeps and sends a GLUE(Java) source; a JVM executor runs it.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::job_input::GLUE_SOURCE_MAX;
use super::job_view::permitted_job;
use super::{ApiJson, ms};
use crate::domain::{GlueType, Named};
use crate::http::{ApiError, MgmtState};
use crate::store::{JobRow, NewGlueHistory};

/// Upstream's remark rule: 4–100 characters.
const REMARK_CHARS: std::ops::RangeInclusive<usize> = 4..=100;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GlueView {
    glue_type: Named<GlueType>,
    glue_source: Option<String>,
    glue_remark: Option<String>,
    glue_updatetime: Option<i64>,
    history: Vec<HistoryEntry>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryEntry {
    id: i32,
    glue_source: Option<String>,
    glue_remark: String,
    update_time: Option<i64>,
}

/// The job, if it is a GLUE job with a source (a script or GLUE(Java)) the caller may edit.
async fn source_job(state: &MgmtState, principal: &Principal, id: i32) -> Result<JobRow, ApiError> {
    let job = permitted_job(state, principal, id).await?;
    if !job.job.glue_type.known().is_some_and(GlueType::carries_source) {
        return Err(ApiError::BadRequest(format!(
            "job {id} is {}: only script and GLUE(Java) jobs have a source to edit (GLUE_WASM jobs take module uploads)",
            job.job.glue_type
        )));
    }
    Ok(job)
}

async fn view(state: &MgmtState, job: JobRow) -> Result<GlueView, ApiError> {
    let history = state
        .store
        .list_glue_history(job.id)
        .await?
        .into_iter()
        .map(|h| HistoryEntry {
            id: h.id,
            glue_source: h.glue_source,
            glue_remark: h.glue_remark,
            update_time: ms(h.update_time.or(h.add_time)),
        })
        .collect();
    Ok(GlueView {
        glue_type: job.job.glue_type,
        glue_source: job.job.glue_source,
        glue_remark: job.job.glue_remark,
        glue_updatetime: ms(job.job.glue_updatetime),
        history,
    })
}

/// `GET /api/v1/jobs/{id}/glue`.
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<GlueView>, ApiError> {
    let job = source_job(&state, &principal, id).await?;
    Ok(Json(view(&state, job).await?))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SaveBody {
    glue_source: String,
    glue_remark: String,
}

/// `PUT /api/v1/jobs/{id}/glue`: a new version. Executors reload scripts by
/// `glue_updatetime`, so the next run uses it.
pub(crate) async fn save(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(body): ApiJson<SaveBody>,
) -> Result<Json<GlueView>, ApiError> {
    let job = source_job(&state, &principal, id).await?;
    let remark = body.glue_remark.trim().to_owned();
    if !REMARK_CHARS.contains(&remark.chars().count()) {
        return Err(ApiError::BadRequest("glueRemark: must be 4 to 100 characters".to_owned()));
    }
    if body.glue_source.len() > GLUE_SOURCE_MAX {
        return Err(ApiError::BadRequest(format!("glueSource: at most {GLUE_SOURCE_MAX} bytes")));
    }
    let now = state.clock.now();
    let mut updated = job.job.clone();
    updated.glue_source = Some(body.glue_source.clone());
    updated.glue_remark = Some(remark.clone());
    updated.glue_updatetime = Some(now);
    updated.update_time = Some(now);
    state.store.update_job(job.id, &updated).await?;
    state
        .store
        .add_glue_history(&NewGlueHistory {
            job_id: job.id,
            glue_type: Some(updated.glue_type.as_str().to_owned()),
            glue_source: Some(body.glue_source),
            glue_remark: remark,
            now,
        })
        .await?;
    let job = state
        .store
        .load_job(job.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job {id} not found")))?;
    Ok(Json(view(&state, job).await?))
}

/// A job's GLUE type, source and remark, for the audit log.
pub(crate) struct GlueSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for GlueSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        Ok(state.store.load_job(crate::store::JobId(id)).await?.map(|job| {
            serde_json::json!({"glueType": job.job.glue_type, "glueSource": job.job.glue_source, "glueRemark": job.job.glue_remark})
        }))
    }
}
