//! `/api/v1/jobs/{id}/wasm` (upload, versions, rollback) and `/api/v1/wasm/validate`: the
//! modules of `GLUE_WASM` jobs. Every upload is inspected ([`crate::wasm_check`]) before
//! anything is stored, so a bad file never replaces a working module.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use jobwheel_protocol::GlueType;
use serde::{Deserialize, Serialize};

use super::approvals::{self, ApprovalView};
use super::auth::Principal;
use super::job_view::permitted_job;
use super::{ApiJson, ApiQuery};
use crate::http::{ApiError, MgmtState};
use crate::store::{JobGrantRow, JobId, JobRow, NewWasmVersion, WasmVersionRow};
use crate::wasm_check::capabilities::{Capabilities, import_kinds};
use crate::wasm_check::{MAX_MODULE_BYTES, ModuleInfo, inspect};

/// Remarks are short notes ("fix timezone bug"), like GLUE remarks.
const REMARK_MAX: usize = 100;
/// Module descriptions kept in memory (listing versions would otherwise re-read and re-parse
/// up to 30 modules per request).
const INFO_CACHE_MAX: usize = 256;

/// Digest → what the module exports and imports.
#[derive(Debug, Default)]
pub(crate) struct ModuleInfoCache(Mutex<HashMap<String, Arc<ModuleInfo>>>);

impl ModuleInfoCache {
    fn get(&self, digest: &str) -> Option<Arc<ModuleInfo>> {
        self.0.lock().expect("module info cache").get(digest).cloned()
    }

    fn put(&self, info: ModuleInfo) -> Arc<ModuleInfo> {
        let info = Arc::new(info);
        let mut map = self.0.lock().expect("module info cache");
        if map.len() >= INFO_CACHE_MAX {
            map.clear();
        }
        map.insert(info.digest.clone(), Arc::clone(&info));
        info
    }
}

/// One version of a job's module.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VersionView {
    id: i64,
    #[serde(flatten)]
    module: ModuleInfo,
    remark: Option<String>,
    uploader: Option<String>,
    created_at: i64,
    /// A candidate: replayable, not run by triggers (docs/replay.md).
    candidate: bool,
    /// What the module may reach under the job's grant (docs/replay.md, "Capabilities and
    /// approval").
    capabilities: Capabilities,
    /// Set when this upload or activation waits for an administrator's approval (202).
    #[serde(skip_serializing_if = "Option::is_none")]
    approval: Option<ApprovalView>,
}

#[derive(Serialize)]
pub(crate) struct VersionsView {
    current: Option<VersionView>,
    versions: Vec<VersionView>,
}

async fn wasm_job(state: &MgmtState, principal: &Principal, id: i32) -> Result<JobRow, ApiError> {
    let job = permitted_job(state, principal, id).await?;
    if !job.job.glue_type.is(GlueType::GlueWasm) {
        return Err(ApiError::BadRequest(format!(
            "job {id} is {}: modules belong to GLUE_WASM jobs",
            job.job.glue_type
        )));
    }
    Ok(job)
}

pub(super) async fn module_info(state: &MgmtState, digest: &str) -> Result<Arc<ModuleInfo>, ApiError> {
    if let Some(info) = state.module_info.get(digest) {
        return Ok(info);
    }
    let row = state
        .store
        .get_wasm_module(digest)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("module {digest} of a version is missing")))?;
    // Stored modules passed the same check on upload.
    let bytes = row.bytes;
    let info = off_the_workers(move || inspect(&bytes)).await?.map_err(ApiError::internal)?;
    Ok(state.module_info.put(info))
}

async fn version_view(
    state: &MgmtState,
    row: WasmVersionRow,
    grant: &JobGrantRow,
) -> Result<VersionView, ApiError> {
    let module = (*module_info(state, &row.digest).await?).clone();
    Ok(VersionView {
        id: row.id,
        capabilities: approvals::reach(import_kinds(&module), grant),
        module,
        remark: row.remark,
        uploader: row.uploader,
        created_at: row.created_at_ms,
        candidate: row.candidate != 0,
        approval: None,
    })
}

/// `GET /api/v1/jobs/{id}/wasm`: newest first; the newest that is not a candidate is what the
/// next trigger runs.
pub(crate) async fn versions(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<VersionsView>, ApiError> {
    let job = wasm_job(&state, &principal, id).await?;
    let grant = state.store.load_job_grant(job.id).await?.unwrap_or_default();
    let mut versions = Vec::new();
    for row in state.store.list_wasm_versions(job.id).await? {
        versions.push(version_view(&state, row, &grant).await?);
    }
    let current = versions.iter().find(|v| !v.candidate).cloned();
    Ok(Json(VersionsView { current, versions }))
}

/// Reads an upload, refusing more than [`MAX_MODULE_BYTES`] with a 413 that says so.
async fn read_module(body: Body) -> Result<axum::body::Bytes, ApiError> {
    axum::body::to_bytes(body, MAX_MODULE_BYTES).await.map_err(|e| {
        let too_large =
            std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_large {
            ApiError::PayloadTooLarge(format!(
                "the module is over the {MAX_MODULE_BYTES}-byte (32 MiB) limit"
            ))
        } else {
            ApiError::BadRequest(format!("cannot read the upload: {e}"))
        }
    })
}

/// The upload check of `bytes`, a 400 naming what it refuses.
async fn inspected(bytes: axum::body::Bytes) -> Result<ModuleInfo, ApiError> {
    off_the_workers(move || inspect(&bytes)).await?.map_err(|e| ApiError::BadRequest(e.to_string()))
}

/// Runs `check` on the blocking pool: validating a module of up to 32 MiB takes tens of
/// milliseconds of CPU, which on the runtime's worker (one by default, `--worker-threads`)
/// would hold up the triggers due meanwhile.
pub(super) async fn off_the_workers<T: Send + 'static>(
    check: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(check).await.map_err(ApiError::internal)
}

#[derive(Deserialize)]
pub(crate) struct UploadQuery {
    #[serde(default)]
    remark: Option<String>,
    /// Store it as a candidate: replayable against the job's recorded runs (a what-if), not run
    /// by triggers until activated (docs/replay.md).
    #[serde(default)]
    candidate: bool,
}

fn check_remark(remark: Option<String>) -> Result<Option<String>, ApiError> {
    let remark = remark.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if remark.as_ref().is_some_and(|r| r.chars().count() > REMARK_MAX) {
        return Err(ApiError::BadRequest(format!("remark: at most {REMARK_MAX} characters")));
    }
    Ok(remark)
}

/// `POST /api/v1/jobs/{id}/wasm?remark=&candidate=`: the body is the `.wasm` file.
pub(crate) async fn upload(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiQuery(query): ApiQuery<UploadQuery>,
    body: Body,
) -> Result<(StatusCode, Json<VersionView>), ApiError> {
    let job = wasm_job(&state, &principal, id).await?;
    let remark = check_remark(query.remark)?;
    let bytes = read_module(body).await?;
    let info = inspected(bytes.clone()).await?;
    // A version that would run and reach further than the current one waits for approval
    // unless the caller may widen it; it is kept as a candidate meanwhile.
    let widening = if query.candidate || principal.may_widen() {
        Vec::new()
    } else {
        approvals::module_widening(&state, job.id, &info).await?
    };
    let now_ms = state.clock.now_ms();
    state.store.put_wasm_module(&bytes, now_ms).await?;
    let version = NewWasmVersion {
        job_id: job.id,
        digest: info.digest.clone(),
        uploader: Some(principal.user.user.username.clone()),
        remark,
        created_at_ms: now_ms,
        candidate: query.candidate || !widening.is_empty(),
    };
    let version_id = state.store.add_wasm_version(&version).await?;
    // Executors compile the new version now rather than at its first trigger.
    if !version.candidate {
        state.core.wasm_version_changed(JobId(id)).await;
    }
    let approval = match widening.is_empty() {
        true => None,
        false => Some(
            approvals::hold_module(&state, &principal, job.id, version_id, &info.digest, &widening).await?,
        ),
    };
    let grant = state.store.load_job_grant(job.id).await?.unwrap_or_default();
    state.module_info.put(info.clone());
    let status = if approval.is_some() { StatusCode::ACCEPTED } else { StatusCode::CREATED };
    Ok((
        status,
        Json(VersionView {
            id: version_id,
            capabilities: approvals::reach(import_kinds(&info), &grant),
            module: info,
            remark: version.remark,
            uploader: version.uploader,
            created_at: now_ms,
            candidate: version.candidate,
            approval,
        }),
    ))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RollbackBody {
    version_id: i64,
    #[serde(default)]
    remark: Option<String>,
}

/// `POST /api/v1/jobs/{id}/wasm/rollback`: a new newest version with an older module (or a
/// candidate: activating it). Held for approval like an upload when it reaches further.
pub(crate) async fn rollback(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(body): ApiJson<RollbackBody>,
) -> Result<(StatusCode, Json<VersionView>), ApiError> {
    let job = wasm_job(&state, &principal, id).await?;
    let remark =
        check_remark(body.remark)?.unwrap_or_else(|| format!("rollback to version {}", body.version_id));
    let target = state
        .store
        .list_wasm_versions(job.id)
        .await?
        .into_iter()
        .find(|v| v.id == body.version_id)
        .ok_or_else(|| {
            ApiError::NotFound(format!("versionId: job {id} has no version {}", body.version_id))
        })?;
    let grant = state.store.load_job_grant(job.id).await?.unwrap_or_default();
    if !principal.may_widen() {
        let info = module_info(&state, &target.digest).await?;
        let widening = approvals::module_widening(&state, job.id, &info).await?;
        if !widening.is_empty() {
            let held =
                approvals::hold_module(&state, &principal, job.id, target.id, &target.digest, &widening)
                    .await?;
            let mut view = version_view(&state, target, &grant).await?;
            view.approval = Some(held);
            return Ok((StatusCode::ACCEPTED, Json(view)));
        }
    }
    let now_ms = state.clock.now_ms();
    let version = NewWasmVersion {
        job_id: job.id,
        digest: target.digest.clone(),
        uploader: Some(principal.user.user.username.clone()),
        remark: Some(remark),
        created_at_ms: now_ms,
        candidate: false,
    };
    let version_id = state.store.add_wasm_version(&version).await?;
    // Executors compile the new version now rather than at its first trigger.
    state.core.wasm_version_changed(JobId(id)).await;
    let module = (*module_info(&state, &target.digest).await?).clone();
    Ok((
        StatusCode::CREATED,
        Json(VersionView {
            id: version_id,
            capabilities: approvals::reach(import_kinds(&module), &grant),
            module,
            remark: version.remark,
            uploader: version.uploader,
            created_at: now_ms,
            candidate: version.candidate,
            approval: None,
        }),
    ))
}

/// `POST /api/v1/wasm/validate`: what the UI shows before the upload is confirmed.
pub(crate) async fn validate(_principal: Principal, body: Body) -> Result<Json<ModuleInfo>, ApiError> {
    let bytes = read_module(body).await?;
    Ok(Json(inspected(bytes).await?))
}

/// The digest and size of a job's current module, for the audit log.
pub(crate) struct WasmSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for WasmSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        Ok(Some(match state.store.current_wasm_module(crate::store::JobId(id)).await? {
            Some(module) => serde_json::json!({"digest": module.digest, "size": module.size}),
            None => serde_json::json!({"digest": null}),
        }))
    }
}
