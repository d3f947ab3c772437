//! What a GLUE_WASM job is granted (docs/api.md "Wasm grants"): its network policy and limits
//! (`/api/v1/jobs/{id}/grant`), variables and write-only secrets of jobs and executor groups
//! (`…/secrets/{name}`), and the history of changes. Secret values are sealed on the way in
//! and never leave through any read: reads list their names only.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::ApiJson;
use super::auth::Principal;
pub(crate) use super::job_grant::JobGrantInput;
use super::job_view::permitted_job;
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, JobGrantRow, JobId, VariableOwner, VariableRow};

/// Longest variable or secret value (64 KiB; environment variables, not files).
const VALUE_MAX: usize = 64 << 10;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VariablesView {
    /// Plain variables, with values.
    variables: BTreeMap<String, String>,
    /// Secrets by name only: the value is write-only.
    secrets: Vec<SecretView>,
    history: Vec<HistoryView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SecretView {
    name: String,
    set: bool,
    update_time: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HistoryView {
    author: String,
    change: String,
    time: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobGrantView {
    http_allow: Vec<String>,
    http_max_requests: Option<i32>,
    http_max_response_bytes: Option<i64>,
    http_timeout_ms: Option<i64>,
    fuel: Option<i64>,
    memory_bytes: Option<i64>,
    /// The executor group's variables and secrets the job uses (the others are not sent).
    uses: Vec<String>,
    /// Whether the job's runs are recorded for replay (docs/replay.md).
    record_runs: bool,
    /// The cap of a run's flight record, bytes; `None` = the default.
    journal_max_bytes: Option<i64>,
    #[serde(flatten)]
    variables: VariablesView,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct VariablesInput {
    variables: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SecretInput {
    value: String,
}

/// `GET /api/v1/jobs/{id}/grant`.
pub(crate) async fn get_job(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<JobGrantView>, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    Ok(Json(job_view(&state, job.id).await?))
}

/// `PUT /api/v1/jobs/{id}/grant`: policy, limits and plain variables, all at once. A change
/// that widens what the job may reach, made by a caller who may not widen it, is held for an
/// administrator's approval instead (202 with the approval; `super::approvals`).
pub(crate) async fn put_job(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<JobGrantInput>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let job = permitted_job(&state, &principal, id).await?;
    let row = input.checked_row()?;
    let before = state.store.load_job_grant(job.id).await?.unwrap_or_default();
    refuse_new_uses_unless_admin(&principal, before.used_names(), &row.used_names())?;
    if !principal.may_widen() {
        let widening = super::approvals::grant_widening(&state, job.id, &before, &row).await?;
        if !widening.is_empty() {
            let held = super::approvals::hold_grant(&state, &principal, job.id, &input, widening).await?;
            return Ok((StatusCode::ACCEPTED, Json(held)).into_response());
        }
    }
    apply_job_grant(&state, job.id, &input, &row, &principal.user.user.username).await?;
    Ok(Json(job_view(&state, job.id).await?).into_response())
}

/// Makes `row` (checked from `input`) the job's grant and `input`'s variables its plain
/// variables, recording the changes under `author`: a direct change, or an approved one.
pub(crate) async fn apply_job_grant(
    state: &MgmtState,
    job: JobId,
    input: &JobGrantInput,
    row: &JobGrantRow,
    author: &str,
) -> Result<(), ApiError> {
    let owner = VariableOwner::Job(job);
    let before = state.store.load_job_grant(job).await?.unwrap_or_default();
    let mut changes = super::job_grant::changes(&before, row);
    let now = state.clock.now_ms();
    changes.extend(replace_variables(state, owner, &input.variables, now).await?);
    state.store.save_job_grant(job, row, now).await?;
    record_as(state, owner, author, &changes, now).await
}

/// Only an administrator adds a name to a job's `uses` (review M7): the group's variables and
/// secrets are the administrators', and `uses` is what sends them to a job's module — which any
/// member of the group may replace with one that prints them. Members may keep or drop names.
fn refuse_new_uses_unless_admin(
    principal: &Principal,
    before: std::collections::BTreeSet<&str>,
    after: &std::collections::BTreeSet<&str>,
) -> Result<(), ApiError> {
    if principal.is_admin() {
        return Ok(());
    }
    let added: Vec<&str> = after.iter().copied().filter(|name| !before.contains(name)).collect();
    if added.is_empty() {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "uses: only an administrator may give a job the executor group's variables and secrets ({}); ask one to add them",
        added.join(", ")
    )))
}

/// `PUT /api/v1/jobs/{id}/secrets/{name}`.
pub(crate) async fn put_job_secret(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, name)): Path<(i32, String)>,
    ApiJson(input): ApiJson<SecretInput>,
) -> Result<StatusCode, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    put_secret(&state, &principal, VariableOwner::Job(job.id), &name, &input.value).await
}

/// `DELETE /api/v1/jobs/{id}/secrets/{name}`.
pub(crate) async fn delete_job_secret(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, name)): Path<(i32, String)>,
) -> Result<StatusCode, ApiError> {
    let job = permitted_job(&state, &principal, id).await?;
    delete_secret(&state, &principal, VariableOwner::Job(job.id), &name).await
}

/// `GET /api/v1/groups/{id}/variables`.
pub(crate) async fn get_group(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<VariablesView>, ApiError> {
    principal.require_group(GroupId(id))?;
    Ok(Json(variables_view(&state, VariableOwner::Group(GroupId(id))).await?))
}

/// `PUT /api/v1/groups/{id}/variables`: replaces the group's plain variables.
pub(crate) async fn put_group(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<VariablesInput>,
) -> Result<Json<VariablesView>, ApiError> {
    let owner = group_owner(&state, &principal, id).await?;
    let now = state.clock.now_ms();
    let changes = replace_variables(&state, owner, &input.variables, now).await?;
    record(&state, owner, &principal, &changes, now).await?;
    Ok(Json(variables_view(&state, owner).await?))
}

/// `PUT /api/v1/groups/{id}/secrets/{name}`.
pub(crate) async fn put_group_secret(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, name)): Path<(i32, String)>,
    ApiJson(input): ApiJson<SecretInput>,
) -> Result<StatusCode, ApiError> {
    let owner = group_owner(&state, &principal, id).await?;
    put_secret(&state, &principal, owner, &name, &input.value).await
}

/// `DELETE /api/v1/groups/{id}/secrets/{name}`.
pub(crate) async fn delete_group_secret(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path((id, name)): Path<(i32, String)>,
) -> Result<StatusCode, ApiError> {
    let owner = group_owner(&state, &principal, id).await?;
    delete_secret(&state, &principal, owner, &name).await
}

/// Group variables are shared by every job of the group: administrators only.
async fn group_owner(state: &MgmtState, principal: &Principal, id: i32) -> Result<VariableOwner, ApiError> {
    principal.require_admin()?;
    state
        .store
        .load_group(GroupId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("executor group {id} not found")))?;
    Ok(VariableOwner::Group(GroupId(id)))
}

pub(crate) async fn job_view(state: &MgmtState, job: JobId) -> Result<JobGrantView, ApiError> {
    let row = state.store.load_job_grant(job).await?.unwrap_or_default();
    Ok(JobGrantView {
        http_allow: row.http_allow.lines().map(str::to_owned).collect(),
        http_max_requests: row.http_max_requests,
        http_max_response_bytes: row.http_max_response_bytes,
        http_timeout_ms: row.http_timeout_ms,
        fuel: row.fuel,
        memory_bytes: row.memory_bytes,
        uses: row.used_names().into_iter().map(str::to_owned).collect(),
        record_runs: row.records_runs(),
        journal_max_bytes: row.journal_max_bytes,
        variables: variables_view(state, VariableOwner::Job(job)).await?,
    })
}

pub(crate) async fn variables_view(
    state: &MgmtState,
    owner: VariableOwner,
) -> Result<VariablesView, ApiError> {
    let rows = state.store.list_variables(owner).await?;
    let (secret_rows, plain_rows): (Vec<VariableRow>, Vec<VariableRow>) =
        rows.into_iter().partition(|r| r.secret != 0);
    let history = state
        .store
        .list_grant_history(owner)
        .await?
        .into_iter()
        .map(|h| HistoryView { author: h.author, change: h.change_text, time: h.add_ms })
        .collect();
    Ok(VariablesView {
        variables: plain_rows.into_iter().map(|r| (r.name, r.value)).collect(),
        secrets: secret_rows
            .into_iter()
            .map(|r| SecretView { name: r.name, set: true, update_time: r.update_ms })
            .collect(),
        history,
    })
}

/// Makes `wanted` the owner's plain variables; returns the changes in words.
async fn replace_variables(
    state: &MgmtState,
    owner: VariableOwner,
    wanted: &BTreeMap<String, String>,
    now: i64,
) -> Result<Vec<String>, ApiError> {
    let current = state.store.list_variables(owner).await?;
    for (name, value) in wanted {
        check_name(name)?;
        check_value(name, value)?;
        if current.iter().any(|r| r.name == *name && r.secret != 0) {
            return Err(ApiError::Conflict(format!(
                "{name} is a secret here; delete the secret first to make it a plain variable"
            )));
        }
    }
    let mut changes = Vec::new();
    for row in current.iter().filter(|r| r.secret == 0 && !wanted.contains_key(&r.name)) {
        state.store.delete_variable(owner, &row.name).await?;
        changes.push(format!("variable {} removed", row.name));
    }
    for (name, value) in wanted {
        match current.iter().find(|r| r.name == *name) {
            Some(row) if row.value == *value => continue,
            Some(_) => changes.push(format!("variable {name} changed")),
            None => changes.push(format!("variable {name} added")),
        }
        state.store.put_variable(owner, name, false, value, now).await?;
    }
    Ok(changes)
}

async fn put_secret(
    state: &MgmtState,
    principal: &Principal,
    owner: VariableOwner,
    name: &str,
    value: &str,
) -> Result<StatusCode, ApiError> {
    check_name(name)?;
    check_value(name, value)?;
    let current = state.store.list_variables(owner).await?;
    let existing = current.iter().find(|r| r.name == name);
    if existing.is_some_and(|r| r.secret == 0) {
        return Err(ApiError::Conflict(format!(
            "{name} is a plain variable here; remove it first to make it a secret"
        )));
    }
    let now = state.clock.now_ms();
    let sealed = state.secret_box.seal(owner, name, value);
    state.store.put_variable(owner, name, true, &sealed, now).await?;
    let change =
        if existing.is_some() { format!("secret {name} changed") } else { format!("secret {name} set") };
    record(state, owner, principal, &[change], now).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete_secret(
    state: &MgmtState,
    principal: &Principal,
    owner: VariableOwner,
    name: &str,
) -> Result<StatusCode, ApiError> {
    let current = state.store.list_variables(owner).await?;
    if !current.iter().any(|r| r.name == name && r.secret != 0) {
        return Err(ApiError::NotFound(format!("no secret named {name} here")));
    }
    state.store.delete_variable(owner, name).await?;
    let now = state.clock.now_ms();
    record(state, owner, principal, &[format!("secret {name} removed")], now).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn record(
    state: &MgmtState,
    owner: VariableOwner,
    principal: &Principal,
    changes: &[String],
    now: i64,
) -> Result<(), ApiError> {
    record_as(state, owner, &principal.user.user.username, changes, now).await
}

async fn record_as(
    state: &MgmtState,
    owner: VariableOwner,
    author: &str,
    changes: &[String],
    now: i64,
) -> Result<(), ApiError> {
    if changes.is_empty() {
        return Ok(());
    }
    state.store.add_grant_history(owner, author, &changes.join("; "), now).await?;
    Ok(())
}

/// An environment variable name: letters, digits and `_`, not starting with a digit, at most
/// 128 characters, and not in the runtime's own `JOBWHEEL_` namespace.
pub(super) fn check_name(name: &str) -> Result<(), ApiError> {
    let valid = !name.is_empty()
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit();
    if !valid {
        return Err(ApiError::BadRequest(format!(
            "`{name}` is not a variable name: use letters, digits and _, not starting with a digit, at most 128 characters"
        )));
    }
    if name.starts_with("JOBWHEEL_") {
        return Err(ApiError::BadRequest(format!(
            "`{name}`: names starting with JOBWHEEL_ are the runtime's own"
        )));
    }
    Ok(())
}

fn check_value(name: &str, value: &str) -> Result<(), ApiError> {
    if value.len() > VALUE_MAX || value.contains('\0') {
        return Err(ApiError::BadRequest(format!(
            "the value of {name} must be at most 64 KiB and contain no NUL byte"
        )));
    }
    Ok(())
}

/// A job's grant as `GET /api/v1/jobs/{id}/grant` shows it (secrets by name), for the audit log.
pub(crate) struct GrantSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for GrantSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        Ok(Some(super::audit::to_json(job_view(state, JobId(id)).await?)?))
    }
}

/// A group's variables and secret names, for the audit log.
pub(crate) struct GroupVariablesSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for GroupVariablesSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        let view = variables_view(state, VariableOwner::Group(GroupId(id))).await?;
        Ok(Some(super::audit::to_json(view)?))
    }
}
