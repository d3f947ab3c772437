//! Approval of new capabilities (issue 62 item 4; docs/replay.md, "Capabilities and approval").
//! A module version that would run (an upload, an activation, a rollback) or a grant change that
//! lets a job reach further than it can now — a new kind of host call, a new host, a group
//! secret, a raised limit — made by a caller who may not widen it (anyone but an administrator
//! signed in or with an `approve` token: a member, or an API token an agent holds) is held here:
//! the module as a candidate version (replayable in a what-if, never run by triggers), the grant
//! change as its request. An administrator approves (the module becomes current, the grant is
//! applied) or refuses; both are audited.
//!
//! Routes: `GET /api/v1/approvals` (`?jobId=`, `?pending=true`), `GET /api/v1/approvals/{id}`,
//! `POST /api/v1/approvals/{id}/approve` and `…/refuse` (`{"note"?}`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::ApiQuery;
use super::auth::Principal;
use super::job_grant::JobGrantInput;
use crate::http::{ApiError, MgmtState};
use crate::store::{
    ApprovalKind, ApprovalRow, ApprovalStatus, Decision, GroupId, JobGrantRow, JobId, NewApproval,
    NewWasmVersion,
};
use crate::wasm_check::ModuleInfo;
use crate::wasm_check::capabilities::{Capabilities, Limits, import_kinds, widening};

/// Approvals listed at most.
const LIST_MAX: u32 = 200;
/// Longest note on a decision.
const NOTE_MAX: usize = 500;

/// An approval as the API shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ApprovalView {
    id: i64,
    job_id: i32,
    /// The job's name (its description), in lists: what a reader recognizes it by.
    #[serde(skip_serializing_if = "Option::is_none")]
    job_name: Option<String>,
    /// `module` or `grant`.
    kind: String,
    /// The candidate version holding the module (module approvals): what a what-if replays.
    version_id: Option<i64>,
    digest: Option<String>,
    /// What the held change lets the job do that it cannot now.
    widening: Vec<String>,
    requested_by: String,
    requested_at: i64,
    /// `pending`, `approved` or `refused`.
    status: &'static str,
    decided_by: Option<String>,
    decided_at: Option<i64>,
    note: Option<String>,
}

impl From<ApprovalRow> for ApprovalView {
    fn from(row: ApprovalRow) -> Self {
        ApprovalView {
            id: row.id,
            job_id: row.job_id.0,
            job_name: None,
            kind: row.kind,
            version_id: row.version_id,
            digest: row.digest,
            widening: serde_json::from_str(&row.widening).unwrap_or_default(),
            requested_by: row.requested_by,
            requested_at: row.requested_ms,
            status: ApprovalStatus::from_code(row.status).as_str(),
            decided_by: row.decided_by,
            decided_at: (row.decided_ms > 0).then_some(row.decided_ms),
            note: row.note,
        }
    }
}

/// The reach of a module whose imports use `imports` under the job's `grant`.
pub(crate) fn reach(imports: Vec<&'static str>, grant: &JobGrantRow) -> Capabilities {
    Capabilities {
        imports,
        hosts: grant.http_allow.lines().map(str::trim).filter(|e| !e.is_empty()).map(str::to_owned).collect(),
        secrets: grant.used_names().into_iter().map(str::to_owned).collect(),
        limits: Limits {
            fuel: grant.fuel,
            memory_bytes: grant.memory_bytes,
            http_max_requests: grant.http_max_requests.map(i64::from),
            http_max_response_bytes: grant.http_max_response_bytes,
            http_timeout_ms: grant.http_timeout_ms,
        },
    }
}

/// What the job's current module may reach under `grant`.
async fn current_reach(state: &MgmtState, job: JobId, grant: &JobGrantRow) -> Result<Capabilities, ApiError> {
    let imports = match state.store.current_wasm_module(job).await? {
        Some(current) => import_kinds(&*super::wasm_versions::module_info(state, &current.digest).await?),
        None => Vec::new(),
    };
    Ok(reach(imports, grant))
}

/// What `module` would let the job do that its current module cannot, under the job's grant.
pub(crate) async fn module_widening(
    state: &MgmtState,
    job: JobId,
    module: &ModuleInfo,
) -> Result<Vec<String>, ApiError> {
    let grant = state.store.load_job_grant(job).await?.unwrap_or_default();
    let before = current_reach(state, job, &grant).await?;
    Ok(widening(&before, &reach(import_kinds(module), &grant)))
}

/// What the grant `after` would let the job's current module do that `before` does not.
pub(crate) async fn grant_widening(
    state: &MgmtState,
    job: JobId,
    before: &JobGrantRow,
    after: &JobGrantRow,
) -> Result<Vec<String>, ApiError> {
    let now = current_reach(state, job, before).await?;
    Ok(widening(&now, &reach(now.imports.clone(), after)))
}

/// A replay against module `version` of `job` (a what-if) runs it with the recorded run's
/// variables and secrets and answers its output lines to the caller. A version that reads the
/// environment, where they arrive, when the job's current module does not, would so hand a
/// member or an agent the group's secrets before anyone approved it reading them: until it is
/// approved only an administrator who may widen tries it. Other new kinds are harmless here
/// (the network is off and clocks and random numbers come from the journal).
pub(crate) async fn refuse_unapproved_reader(
    state: &MgmtState,
    principal: &Principal,
    job: JobId,
    version: i64,
) -> Result<(), ApiError> {
    if principal.may_widen() {
        return Ok(());
    }
    // An unknown version is the replay's to refuse, with its own message.
    let Some(row) = state.store.list_wasm_versions(job).await?.into_iter().find(|v| v.id == version) else {
        return Ok(());
    };
    let info = super::wasm_versions::module_info(state, &row.digest).await?;
    if !import_kinds(&info).contains(&"environment") {
        return Ok(());
    }
    let grant = state.store.load_job_grant(job).await?.unwrap_or_default();
    if current_reach(state, job, &grant).await?.imports.contains(&"environment") {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "version {version} reads the environment, where a run's variables and secrets arrive, and the job's \
         current module does not: until an administrator approves it, only an administrator may replay runs \
         against it"
    )))
}

/// Holds `new` for approval.
async fn hold(state: &MgmtState, new: NewApproval) -> Result<ApprovalView, ApiError> {
    let id = state.store.add_approval(&new).await?;
    tracing::info!(approval = id, job = new.job_id.0, kind = new.kind.as_str(), "change held for approval");
    let row = state
        .store
        .approval(id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("approval {id} vanished")))?;
    Ok(row.into())
}

fn widening_json(widening: &[String]) -> String {
    serde_json::to_string(widening).unwrap_or_else(|_| "[]".to_owned())
}

/// Holds the module of candidate version `version_id` for approval.
pub(crate) async fn hold_module(
    state: &MgmtState,
    principal: &Principal,
    job: JobId,
    version_id: i64,
    digest: &str,
    widening: &[String],
) -> Result<ApprovalView, ApiError> {
    let new = NewApproval {
        job_id: job,
        kind: ApprovalKind::Module,
        version_id: Some(version_id),
        digest: Some(digest.to_owned()),
        grant_body: None,
        widening: widening_json(widening),
        requested_by: principal.user.user.username.clone(),
        requested_ms: state.clock.now_ms(),
    };
    hold(state, new).await
}

/// Holds a grant change for approval.
pub(crate) async fn hold_grant(
    state: &MgmtState,
    principal: &Principal,
    job: JobId,
    input: &JobGrantInput,
    widening: Vec<String>,
) -> Result<ApprovalView, ApiError> {
    let new = NewApproval {
        job_id: job,
        kind: ApprovalKind::Grant,
        version_id: None,
        digest: None,
        grant_body: Some(serde_json::to_string(input).map_err(ApiError::internal)?),
        widening: widening_json(&widening),
        requested_by: principal.user.user.username.clone(),
        requested_ms: state.clock.now_ms(),
    };
    hold(state, new).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    job_id: Option<i32>,
    #[serde(default)]
    pending: bool,
}

/// The group and name of `job`, if it still exists; remembered across one listing.
async fn group_and_name<'a>(
    state: &MgmtState,
    jobs: &'a mut HashMap<i32, Option<(GroupId, String)>>,
    job: JobId,
) -> Result<Option<&'a (GroupId, String)>, ApiError> {
    let known = match jobs.entry(job.0) {
        std::collections::hash_map::Entry::Occupied(known) => known.into_mut(),
        std::collections::hash_map::Entry::Vacant(slot) => {
            let found = state.store.load_job(job).await?.map(|row| (row.job.job_group, row.job.job_desc));
            slot.insert(found)
        }
    };
    Ok(known.as_ref())
}

/// `GET /api/v1/approvals`: newest first, at most 200 — an administrator's of every job, a
/// member's of the jobs of their groups.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Vec<ApprovalView>>, ApiError> {
    let rows = state.store.approvals(query.job_id.map(JobId), query.pending, LIST_MAX).await?;
    let mut jobs = HashMap::new();
    let mut shown = Vec::new();
    for row in rows {
        let job = group_and_name(&state, &mut jobs, row.job_id).await?;
        if principal.is_admin() || job.is_some_and(|(g, _)| principal.require_group(*g).is_ok()) {
            let name = job.map(|(_, name)| name.clone());
            shown.push(ApprovalView { job_name: name, ..row.into() });
        }
    }
    Ok(Json(shown))
}

/// An approval the caller may see: its row.
async fn visible(state: &MgmtState, principal: &Principal, id: i64) -> Result<ApprovalRow, ApiError> {
    let missing = || ApiError::NotFound(format!("approval {id} not found"));
    let row = state.store.approval(id).await?.ok_or_else(missing)?;
    if !principal.is_admin() {
        let group =
            state.store.load_job(row.job_id).await?.map(|job| job.job.job_group).ok_or_else(missing)?;
        principal.require_group(group).map_err(|_| missing())?;
    }
    Ok(row)
}

/// `GET /api/v1/approvals/{id}`.
pub(crate) async fn one(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<Json<ApprovalView>, ApiError> {
    Ok(Json(visible(&state, &principal, id).await?.into()))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    #[serde(default)]
    note: Option<String>,
}

/// `POST /api/v1/approvals/{id}/approve`: the module becomes the job's current version, or the
/// grant change is applied as it was requested.
pub(crate) async fn approve(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    body: axum::body::Bytes,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(&state, &principal, id, ApprovalStatus::Approved, decision_body(&body)?).await
}

/// `POST /api/v1/approvals/{id}/refuse`: nothing of it runs; a held module stays a candidate.
pub(crate) async fn refuse(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
    body: axum::body::Bytes,
) -> Result<Json<ApprovalView>, ApiError> {
    decide(&state, &principal, id, ApprovalStatus::Refused, decision_body(&body)?).await
}

/// The body of a decision: optional, `{"note"?}`.
fn decision_body(body: &[u8]) -> Result<DecisionBody, ApiError> {
    super::optional_json(body, |e| format!("the body must be {{\"note\"?}}: {e}"))
}

async fn decide(
    state: &MgmtState,
    principal: &Principal,
    id: i64,
    status: ApprovalStatus,
    body: DecisionBody,
) -> Result<Json<ApprovalView>, ApiError> {
    let row = visible(state, principal, id).await?;
    if !principal.may_widen() {
        return Err(ApiError::Forbidden(
            "deciding an approval needs an administrator, signed in or with an approve token".to_owned(),
        ));
    }
    let note = body.note.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > NOTE_MAX) {
        return Err(ApiError::BadRequest(format!("note: at most {NOTE_MAX} characters")));
    }
    let Some(kind) = ApprovalKind::parse(&row.kind) else {
        return Err(ApiError::internal(anyhow::anyhow!("approval {id} has an unknown kind {}", row.kind)));
    };
    // Checked before deciding, so an approval that cannot be applied stays pending: the grant
    // request must still be valid, and neither it nor the module may now reach further than what
    // the administrator is shown (the job changed since it was asked for).
    let grant = match (status, kind) {
        (ApprovalStatus::Approved, ApprovalKind::Grant) => {
            let body = row.grant_body.as_deref().unwrap_or("{}");
            let input: JobGrantInput = serde_json::from_str(body).map_err(ApiError::internal)?;
            let checked = input.checked_row()?;
            let now = state.store.load_job_grant(row.job_id).await?.unwrap_or_default();
            refuse_stale(&row, grant_widening(state, row.job_id, &now, &checked).await?)?;
            Some((input, checked))
        }
        (ApprovalStatus::Approved, ApprovalKind::Module) => {
            let info =
                super::wasm_versions::module_info(state, row.digest.as_deref().unwrap_or_default()).await?;
            refuse_stale(&row, module_widening(state, row.job_id, &info).await?)?;
            None
        }
        _ => None,
    };
    let by = principal.user.user.username.as_str();
    let decision = Decision { status, by, at_ms: state.clock.now_ms(), note: note.as_deref() };
    if !state.store.decide_approval(id, decision).await? {
        return Err(ApiError::Conflict(format!("approval {id} was already decided")));
    }
    if status == ApprovalStatus::Approved {
        match (kind, grant) {
            (ApprovalKind::Grant, Some((input, checked))) => {
                let author = format!("{by} (approving {}'s change, approval {id})", row.requested_by);
                super::grants::apply_job_grant(state, row.job_id, &input, &checked, &author).await?;
            }
            _ => activate(state, &row, by).await?,
        }
    }
    tracing::info!(approval = id, job = row.job_id.0, decision = status.as_str(), by, "approval decided");
    Ok(Json(visible(state, principal, id).await?.into()))
}

/// A 409 when approving `row` now would let the job do more than the approval lists: the job's
/// module or grant changed since it was asked for.
fn refuse_stale(row: &ApprovalRow, now: Vec<String>) -> Result<(), ApiError> {
    let shown: Vec<String> = serde_json::from_str(&row.widening).unwrap_or_default();
    let more: Vec<String> = now.into_iter().filter(|w| !shown.contains(w)).collect();
    if more.is_empty() {
        return Ok(());
    }
    Err(ApiError::Conflict(format!(
        "approval {}: the job changed since this was asked for, and approving it now would also allow: {}; refuse it and ask again",
        row.id,
        more.join("; ")
    )))
}

/// Makes an approved module the job's current version.
async fn activate(state: &MgmtState, row: &ApprovalRow, by: &str) -> Result<(), ApiError> {
    let digest = row.digest.clone().unwrap_or_default();
    let version = NewWasmVersion {
        job_id: row.job_id,
        digest,
        uploader: Some(row.requested_by.clone()),
        remark: Some(format!("approved by {by} (approval {})", row.id)),
        created_at_ms: state.clock.now_ms(),
        candidate: false,
    };
    state.store.add_wasm_version(&version).await?;
    // Executors compile the new version now rather than at its first trigger.
    state.core.wasm_version_changed(row.job_id).await;
    Ok(())
}
