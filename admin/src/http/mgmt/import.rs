//! `POST /api/v1/jobs/import?dryRun=true|false`: an export file (`transfer.rs`) brought into this
//! admin, after a dry run that says what would happen.
//!
//! Each job is mapped to this admin's group of the same AppName and matched by description
//! within it: an existing job of that description is updated, otherwise one is created
//! (stopped). Every entry is checked first exactly as the job form would check it, modules are
//! inspected like an upload and must match their digest; if anything is wrong, nothing is
//! written and the answer lists every problem. Applying then goes through the same handlers as
//! the API (job, grant, module version), and each job's change is in the audit log. Secret
//! values never travel: the answer names the secrets to set again on each job. The file's
//! workflows follow their jobs (`transfer_workflows.rs`).

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, Request, State};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::auth::Principal;
use super::import_calendars::{CalendarItem, CalendarPlan};
use super::import_modules;
use super::job_input::JobInput;
use super::transfer::{Bundle, FORMAT, JobEntry, VERSION};
use super::transfer_workflows::{WorkflowItem, WorkflowPlan};
use super::wasm_versions::off_the_workers;
use super::{ApiJson, ApiQuery, approvals, audit, glue, grants, job_view, jobs};
use crate::domain::{DeliveryMode, GlueType, Priority};
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, JobFilter, JobId, NewWasmVersion, VariableOwner};

/// Largest export file accepted (modules travel inside it, base64-encoded).
pub(crate) const MAX_IMPORT_BYTES: usize = 64 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImportQuery {
    #[serde(default)]
    dry_run: bool,
}

/// What an import did, or would do.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImportReport {
    /// Whether anything was written (false for a dry run and whenever there are problems).
    applied: bool,
    items: Vec<ImportItem>,
    /// What happens to the file's calendars.
    calendars: Vec<CalendarItem>,
    /// What happens to the file's workflows.
    workflows: Vec<WorkflowItem>,
    /// Everything that stops the import; empty when it can be applied.
    problems: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ImportItem {
    appname: String,
    job_desc: String,
    /// `create` or `update`.
    action: &'static str,
    /// The job's id here: the one updated, or (once applied) the one created.
    id: Option<i32>,
    /// Secrets the job uses that have no value here yet: set them on the job's grant page.
    secrets_to_set: Vec<String>,
    /// The module this import makes current, if it changes.
    module: Option<String>,
}

/// One checked entry, ready to write.
struct Planned {
    entry: JobEntry,
    input: JobInput,
    existing: Option<JobId>,
}

pub(crate) async fn import(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ImportQuery>,
    request: Request,
) -> Result<Json<ImportReport>, ApiError> {
    let (parts, body) = request.into_parts();
    let client = parts.extensions.get::<ConnectInfo<SocketAddr>>().map_or_else(String::new, |peer| {
        state.trusted_proxies.client(peer.0.ip(), &parts.headers).to_string()
    });
    let bytes = axum::body::to_bytes(body, MAX_IMPORT_BYTES).await.map_err(|_| {
        ApiError::PayloadTooLarge(format!("an export file may be at most {} MiB", MAX_IMPORT_BYTES >> 20))
    })?;
    let mut bundle: Bundle = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::BadRequest(format!("not a jobwheel export file: {e}")))?;
    if bundle.format != FORMAT || bundle.version != VERSION {
        return Err(ApiError::BadRequest(format!(
            "not a jobwheel export file of format {FORMAT} version {VERSION} (got {} version {})",
            bundle.format, bundle.version
        )));
    }
    let encoded = std::mem::take(&mut bundle.modules);
    let (modules, mut problems) = off_the_workers(move || {
        let mut problems = Vec::new();
        (import_modules::decode_modules(&encoded, &mut problems), problems)
    })
    .await?;
    let mut calendars = CalendarPlan::new(&state, &principal, &bundle.calendars, &mut problems).await?;
    let file_jobs: BTreeSet<i32> = bundle.jobs.iter().filter_map(|j| j.id).collect();
    let mut workflows =
        WorkflowPlan::new(&state, &principal, bundle.workflows, (&file_jobs, &calendars), &mut problems)
            .await?;
    let planned = plan(&state, &principal, bundle.jobs, (&modules, &calendars), &mut problems).await?;
    let mut items = Vec::with_capacity(planned.len());
    for plan in &planned {
        items.push(item(&state, plan).await?);
    }
    if query.dry_run || !problems.is_empty() {
        let (calendars, workflows) = (calendars.items, workflows.items);
        return Ok(Json(ImportReport { applied: false, items, calendars, workflows, problems }));
    }
    calendars.apply(&state, &principal, &client).await?;
    // The file's job ids → the jobs here, for the workflows' nodes.
    let mut here: HashMap<i32, JobId> = HashMap::new();
    for (mut plan, item) in planned.into_iter().zip(items.iter_mut()) {
        // Now that the file's calendars exist here, the job refers to all of them.
        plan.input.only_on = Some(calendars.ids(&plan.entry.only_on));
        plan.input.never_on = Some(calendars.ids(&plan.entry.never_on));
        let file_id = plan.entry.id;
        let id = apply(&state, &principal, plan, &modules, &client).await?;
        if let Some(file_id) = file_id {
            here.insert(file_id, id);
        }
        item.id = Some(id.0);
    }
    workflows.apply(&state, &principal, (&here, &calendars), &client).await?;
    let (calendars, workflows) = (calendars.items, workflows.items);
    Ok(Json(ImportReport { applied: true, items, calendars, workflows, problems }))
}

async fn plan(
    state: &Arc<MgmtState>,
    principal: &Principal,
    entries: Vec<JobEntry>,
    (modules, calendars): (&HashMap<String, Vec<u8>>, &CalendarPlan),
    problems: &mut Vec<String>,
) -> Result<Vec<Planned>, ApiError> {
    let mut groups: HashMap<String, Vec<GroupId>> = HashMap::new();
    for group in state.store.list_groups().await? {
        groups.entry(group.group.app_name).or_default().push(group.id);
    }
    let mut planned = Vec::new();
    for entry in entries {
        let what = format!("{} / {:?}", entry.appname, entry.settings.job_desc);
        let group = match groups.get(&entry.appname).map(Vec::as_slice) {
            Some([group]) => *group,
            Some(_) => {
                problems.push(format!("{what}: several executor groups have AppName {}", entry.appname));
                continue;
            }
            None => {
                problems.push(format!(
                    "{what}: no executor group with AppName {} here; create it first",
                    entry.appname
                ));
                continue;
            }
        };
        if !principal.may_use(group) {
            problems.push(format!("{what}: you have no permission on executor group {group}"));
            continue;
        }
        let filter = JobFilter {
            job_group: Some(group),
            job_desc: Some(entry.settings.job_desc.clone()),
            ..JobFilter::default()
        };
        let same: Vec<JobId> = state
            .store
            .job_search_keys(&filter)
            .await?
            .into_iter()
            .filter(|k| k.job_desc == entry.settings.job_desc)
            .map(|k| k.id)
            .collect();
        let existing = match same.as_slice() {
            [] => None,
            [id] => Some(*id),
            _ => {
                problems.push(format!(
                    "{what}: {} jobs here have this description; make it unique first",
                    same.len()
                ));
                continue;
            }
        };
        if let Some(digest) = &entry.wasm_digest
            && !modules.contains_key(digest)
        {
            problems.push(format!("{what}: module {digest} is not in the file"));
        }
        let glue_type = &entry.settings.glue_type;
        if entry.wasm_digest.is_some() && !glue_type.is(GlueType::GlueWasm) {
            // As the upload endpoint: a module belongs to a GLUE_WASM job only (review L11).
            problems.push(format!(
                "{what}: a Wasm module goes only with a GLUE_WASM job, this one is {glue_type}"
            ));
        }
        if !calendars.check_names(&what, entry.only_on.iter().chain(&entry.never_on), problems) {
            continue;
        }
        let input = input(&entry, group, calendars);
        if let Some(id) = existing {
            let current = state.store.load_job(id).await?.map(|j| j.job.glue_type);
            if let Some(current) = current.filter(|current| current != &entry.settings.glue_type) {
                problems.push(format!(
                    "{what}: job {id} here is {current}, the file's is {}",
                    entry.settings.glue_type
                ));
                continue;
            }
        }
        if let Err(error) = input.check(state, principal, existing).await {
            problems.push(format!("{what}: {error}"));
            continue;
        }
        planned.push(Planned { entry, input, existing });
    }
    Ok(planned)
}

/// The job form an entry amounts to (child jobs are not exported; an update keeps them).
fn input(entry: &JobEntry, group: GroupId, calendars: &CalendarPlan) -> JobInput {
    JobInput {
        job_group: group.0,
        settings: entry.settings.clone(),
        glue_source: entry.glue_source.clone(),
        child_job_id: None,
        tags: Some(entry.tags.clone()),
        priority: Some(entry.priority.clone().unwrap_or_else(|| Priority::Normal.name().to_owned())),
        delivery_mode: Some(
            entry.delivery_mode.clone().unwrap_or_else(|| DeliveryMode::AtMostOnce.name().to_owned()),
        ),
        only_on: Some(calendars.ids(&entry.only_on)),
        never_on: Some(calendars.ids(&entry.never_on)),
        exclusion_windows: Some(entry.exclusion_windows.clone()),
        alarms: Default::default(),
    }
}

async fn item(state: &MgmtState, plan: &Planned) -> Result<ImportItem, ApiError> {
    let wanted = plan.entry.grant.as_ref().map(|g| g.secrets.clone()).unwrap_or_default();
    let (have, current_module) = match plan.existing {
        Some(id) => {
            let have: Vec<String> = state
                .store
                .list_variables(VariableOwner::Job(id))
                .await?
                .into_iter()
                .filter(|v| v.secret != 0)
                .map(|v| v.name)
                .collect();
            (have, state.store.current_wasm_module(id).await?.map(|m| m.digest))
        }
        None => (Vec::new(), None),
    };
    Ok(ImportItem {
        appname: plan.entry.appname.clone(),
        job_desc: plan.entry.settings.job_desc.clone(),
        action: if plan.existing.is_some() { "update" } else { "create" },
        id: plan.existing.map(|id| id.0),
        secrets_to_set: wanted.into_iter().filter(|name| !have.contains(name)).collect(),
        module: plan.entry.wasm_digest.clone().filter(|d| current_module.as_ref() != Some(d)),
    })
}

async fn apply(
    state: &Arc<MgmtState>,
    principal: &Principal,
    plan: Planned,
    modules: &HashMap<String, Vec<u8>>,
    client: &str,
) -> Result<JobId, ApiError> {
    let shared = || State(Arc::clone(state));
    let (id, before) = match plan.existing {
        Some(id) => {
            let mut input = plan.input;
            // An update keeps the job's child jobs, as the form would if they were left alone.
            let current = state.store.load_job(id).await?.map(|j| j.job);
            input.child_job_id = current.as_ref().and_then(|j| j.child_jobid.clone());
            let before = serde_json::to_value(job_view::reload(state, id).await?).ok();
            let current_source = current.and_then(|j| j.glue_source);
            drop(jobs::update(shared(), principal.clone(), Path(id.0), ApiJson(input)).await?);
            // A GLUE source changes through its GLUE history, as in the GLUE IDE.
            if let Some(source) =
                plan.entry.glue_source.as_ref().filter(|s| current_source.as_ref() != Some(*s))
                && plan.entry.settings.glue_type.known().is_some_and(GlueType::carries_source)
            {
                let body = json!({ "glueSource": source, "glueRemark": "imported" });
                let body = serde_json::from_value(body).map_err(ApiError::internal)?;
                drop(glue::save(shared(), principal.clone(), Path(id.0), ApiJson(body)).await?);
            }
            (id, before)
        }
        None => {
            let (_, Json(view)) = jobs::create(shared(), principal.clone(), ApiJson(plan.input)).await?;
            (JobId(view.id), None)
        }
    };
    if let Some(grant) = &plan.entry.grant {
        let body = json!({
            "httpAllow": grant.http_allow, "httpMaxRequests": grant.http_max_requests,
            "httpMaxResponseBytes": grant.http_max_response_bytes, "httpTimeoutMs": grant.http_timeout_ms,
            "fuel": grant.fuel, "memoryBytes": grant.memory_bytes, "variables": grant.variables,
            "uses": grant.uses, "recordRuns": grant.record_runs.unwrap_or(true),
            "journalMaxBytes": grant.journal_max_bytes,
        });
        let input = serde_json::from_value(body).map_err(ApiError::internal)?;
        drop(grants::put_job(shared(), principal.clone(), Path(id.0), ApiJson(input)).await?);
    }
    if let Some(digest) = &plan.entry.wasm_digest
        && let Some(bytes) = modules.get(digest)
        && state.store.current_wasm_module(id).await?.map(|m| m.digest).as_ref() != Some(digest)
    {
        let now_ms = state.clock.now_ms();
        state.store.put_wasm_module(bytes, now_ms).await?;
        // An imported module that reaches further waits for approval as an upload would.
        let widening = if principal.may_widen() {
            Vec::new()
        } else {
            let info = super::wasm_versions::module_info(state, digest).await?;
            approvals::module_widening(state, id, &info).await?
        };
        let version = NewWasmVersion {
            job_id: id,
            digest: digest.clone(),
            uploader: Some(principal.user.user.username.clone()),
            remark: Some("imported".to_owned()),
            created_at_ms: now_ms,
            candidate: !widening.is_empty(),
        };
        let version_id = state.store.add_wasm_version(&version).await?;
        if widening.is_empty() {
            state.core.wasm_version_changed(id).await;
        } else {
            approvals::hold_module(state, principal, id, version_id, digest, &widening).await?;
        }
    }
    let action = if plan.existing.is_some() { "job.update" } else { "job.create" };
    let detail = Some(json!({ "import": true }));
    audit::record_job_change(
        state,
        client.to_owned(),
        principal.user.user.username.clone(),
        action,
        id,
        before,
        detail,
    )
    .await;
    Ok(id)
}
