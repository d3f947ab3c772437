//! Moving jobs between admins: the export file's format and `GET /api/v1/jobs/export` (the
//! import is `import.rs`).
//!
//! One JSON file holds the chosen jobs (a group's, or a list of ids) with everything that makes
//! them run elsewhere: the job form's fields and tags, GLUE sources, each `GLUE_WASM` job's
//! current module (referenced by digest, the bytes once per digest in `modules`), its network
//! policy, limits and plain variables, and the *names* of its secrets — never their values. A
//! job's group travels as its AppName, which the importing admin maps to its own group. The
//! calendars the jobs use travel whole in `calendars`, and jobs name them (ids differ between
//! admins). Child job links are not exported: job ids differ between admins. The workflows
//! whose every node runs an exported job travel too (`transfer_workflows.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::ApiQuery;
use super::auth::Principal;
use super::job_retry::RetryForm;
use super::job_settings::JobSettings;
use super::job_view::permitted_job;
use super::transfer_workflows::{self, WorkflowEntry};
use crate::calendar::{CalendarDays, stored_window_texts};
use crate::domain::GlueType;
use crate::http::{ApiError, MgmtState};
use crate::store::{CalendarRow, GroupId, JobFilter, JobId, JobRow, VariableOwner, day_mode};

/// `format` of an export file.
pub(crate) const FORMAT: &str = "jobwheel-jobs";
/// `version` of the format this admin writes and reads.
pub(crate) const VERSION: u32 = 1;
/// Most jobs one export holds.
pub(crate) const MAX_EXPORT_JOBS: usize = 5_000;

/// An export file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Bundle {
    pub(crate) format: String,
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) exported_at: i64,
    pub(crate) jobs: Vec<JobEntry>,
    /// Module bytes (standard base64) by SHA-256 digest.
    #[serde(default)]
    pub(crate) modules: BTreeMap<String, String>,
    /// The calendars the jobs refer to.
    #[serde(default)]
    pub(crate) calendars: Vec<CalendarEntry>,
    /// The workflows whose every node runs one of the jobs (`transfer_workflows.rs`).
    #[serde(default)]
    pub(crate) workflows: Vec<WorkflowEntry>,
}

/// A calendar of an export.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CalendarEntry {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(flatten)]
    pub(crate) days: CalendarDays,
}

/// One job of an export: its settings, and what makes it run on another admin.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobEntry {
    /// The job's id on the exporting admin: what the file's workflow nodes name it by.
    #[serde(default)]
    pub(crate) id: Option<i32>,
    /// The AppName of the job's group.
    pub(crate) appname: String,
    #[serde(flatten)]
    pub(crate) settings: JobSettings,
    #[serde(default)]
    pub(crate) glue_source: Option<String>,
    #[serde(default)]
    pub(crate) tags: Vec<String>,
    /// `HIGH` or `LOW`; absent is normal.
    #[serde(default)]
    pub(crate) priority: Option<String>,
    /// `EXACTLY_ONCE`; absent is at most once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) delivery_mode: Option<String>,
    /// The current module of a `GLUE_WASM` job.
    #[serde(default)]
    pub(crate) wasm_digest: Option<String>,
    /// A `GLUE_WASM` job's grant.
    #[serde(default)]
    pub(crate) grant: Option<GrantEntry>,
    /// Names of the calendars the job fires only on.
    #[serde(default)]
    pub(crate) only_on: Vec<String>,
    /// Names of the calendars the job never fires on.
    #[serde(default)]
    pub(crate) never_on: Vec<String>,
    /// Daily windows without fires, `HH:MM-HH:MM`.
    #[serde(default)]
    pub(crate) exclusion_windows: Vec<String>,
}

/// A job's grant without secret values.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GrantEntry {
    #[serde(default)]
    pub(crate) http_allow: Vec<String>,
    #[serde(default)]
    pub(crate) http_max_requests: Option<i32>,
    #[serde(default)]
    pub(crate) http_max_response_bytes: Option<i64>,
    #[serde(default)]
    pub(crate) http_timeout_ms: Option<i64>,
    #[serde(default)]
    pub(crate) fuel: Option<i64>,
    #[serde(default)]
    pub(crate) memory_bytes: Option<i64>,
    #[serde(default)]
    pub(crate) variables: BTreeMap<String, String>,
    /// Names of the job's secrets; their values must be set again on the importing admin.
    #[serde(default)]
    pub(crate) secrets: Vec<String>,
    /// Names of the executor group's variables and secrets the job uses.
    #[serde(default)]
    pub(crate) uses: Vec<String>,
    /// Whether runs are recorded for replay (on when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) record_runs: Option<bool>,
    /// The cap of a run's flight record, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) journal_max_bytes: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportQuery {
    #[serde(default)]
    job_group: Option<i32>,
    /// Comma-separated job ids.
    #[serde(default)]
    ids: Option<String>,
}

/// `GET /api/v1/jobs/export?jobGroup=` or `?ids=1,2`: the jobs as a downloadable file.
pub(crate) async fn export(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let jobs = chosen_jobs(&state, &principal, &query).await?;
    let bundle = bundle(&state, &principal, jobs).await?;
    let name = format!("jobwheel-jobs-{}.json", state.clock.now().format("%Y%m%d-%H%M%S"));
    let disposition = format!("attachment; filename=\"{name}\"");
    Ok(([(header::CONTENT_DISPOSITION, disposition)], Json(bundle)).into_response())
}

async fn chosen_jobs(
    state: &MgmtState,
    principal: &Principal,
    query: &ExportQuery,
) -> Result<Vec<JobRow>, ApiError> {
    let ids: Vec<JobId> =
        match (query.ids.as_deref().map(str::trim).filter(|s| !s.is_empty()), query.job_group) {
            (Some(list), _) => {
                let mut ids = Vec::new();
                for raw in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let id: i32 = raw
                        .parse()
                        .map_err(|_| ApiError::BadRequest(format!("ids: {raw:?} is not a job id")))?;
                    ids.push(permitted_job(state, principal, id).await?.id);
                }
                ids
            }
            (None, Some(group)) => {
                principal.require_group(GroupId(group))?;
                let filter = JobFilter { job_group: Some(GroupId(group)), ..JobFilter::default() };
                let mut ids: Vec<JobId> =
                    state.store.job_search_keys(&filter).await?.into_iter().map(|k| k.id).collect();
                ids.reverse();
                ids
            }
            (None, None) => {
                return Err(ApiError::BadRequest(
                    "say which jobs to export: jobGroup, or ids (comma-separated)".to_owned(),
                ));
            }
        };
    if ids.len() > MAX_EXPORT_JOBS {
        return Err(ApiError::BadRequest(format!("at most {MAX_EXPORT_JOBS} jobs per export; choose fewer")));
    }
    let mut rows = state.store.load_jobs(&ids).await?;
    rows.sort_by_key(|row| row.id.0);
    Ok(rows)
}

async fn bundle(state: &MgmtState, principal: &Principal, jobs: Vec<JobRow>) -> Result<Bundle, ApiError> {
    let appnames: HashMap<GroupId, String> =
        state.store.list_groups().await?.into_iter().map(|g| (g.id, g.group.app_name)).collect();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    let exported: BTreeSet<i32> = ids.iter().map(|id| id.0).collect();
    let (workflows, workflow_calendars) =
        transfer_workflows::entries(state, principal, &exported, &appnames).await?;
    let mut tags: HashMap<JobId, Vec<String>> = HashMap::new();
    for (job, tag) in state.store.job_tags(&ids).await? {
        tags.entry(job).or_default().push(tag);
    }
    let (mut days, mut calendars) = job_calendars(state, &ids).await?;
    for row in &workflow_calendars {
        if !calendars.iter().any(|c| c.name == row.calendar.name) {
            calendars.push(calendar_entry(row)?);
        }
    }
    let mut entries = Vec::with_capacity(jobs.len());
    let mut modules = BTreeMap::new();
    for row in jobs {
        let wasm = row.job.glue_type.is(GlueType::GlueWasm);
        let wasm_digest =
            if wasm { state.store.current_wasm_module(row.id).await?.map(|m| m.digest) } else { None };
        if let Some(digest) = &wasm_digest
            && !modules.contains_key(digest)
            && let Some(module) = state.store.get_wasm_module(digest).await?
        {
            modules.insert(digest.clone(), base64::engine::general_purpose::STANDARD.encode(&module.bytes));
        }
        let grant = if wasm { Some(grant(state, row.id).await?) } else { None };
        let retry = RetryForm::from_stored(state.store.job_retry_backoff(row.id).await?);
        let job_days = days.remove(&row.id).unwrap_or_default();
        let mut settings = JobSettings::of(&row);
        settings.retry = retry;
        entries.push(JobEntry {
            id: Some(row.id.0),
            appname: appnames.get(&row.job.job_group).cloned().unwrap_or_default(),
            settings,
            glue_source: row.job.glue_source,
            tags: tags.remove(&row.id).unwrap_or_default(),
            priority: row.priority.stored().map(str::to_owned),
            delivery_mode: row.delivery.stored().map(str::to_owned),
            wasm_digest,
            grant,
            only_on: job_days.only_on,
            never_on: job_days.never_on,
            exclusion_windows: job_days.exclusion_windows,
        });
    }
    Ok(Bundle {
        format: FORMAT.to_owned(),
        version: VERSION,
        exported_at: state.clock.now_ms(),
        jobs: entries,
        modules,
        calendars,
        workflows,
    })
}

/// What a job entry holds of its calendars and windows.
#[derive(Default)]
struct EntryDays {
    only_on: Vec<String>,
    never_on: Vec<String>,
    exclusion_windows: Vec<String>,
}

/// Each job's calendar names and windows, and the calendars used, by name.
async fn job_calendars(
    state: &MgmtState,
    ids: &[JobId],
) -> Result<(HashMap<JobId, EntryDays>, Vec<CalendarEntry>), ApiError> {
    let mut days: HashMap<JobId, EntryDays> = HashMap::new();
    let mut used: BTreeMap<String, CalendarEntry> = BTreeMap::new();
    let rows = state.store.job_days(ids).await?;
    let all: HashMap<i64, CalendarRow> = if rows.iter().any(|r| r.calendar_id.is_some()) {
        state.store.list_calendars().await?.into_iter().map(|c| (c.id.0, c)).collect()
    } else {
        HashMap::new()
    };
    for row in rows {
        let entry = days.entry(row.job_id).or_default();
        let Some(calendar_id) = row.calendar_id else {
            entry.exclusion_windows = stored_window_texts(&row.value).map(str::to_owned).collect();
            continue;
        };
        // Deleted since `job_days` read it: nothing to export.
        let Some(calendar) = all.get(&calendar_id) else { continue };
        let name = calendar.calendar.name.clone();
        if !used.contains_key(&name) {
            used.insert(name.clone(), calendar_entry(calendar)?);
        }
        if row.mode == day_mode::ONLY { entry.only_on.push(name) } else { entry.never_on.push(name) }
    }
    Ok((days, used.into_values().collect()))
}

/// A stored calendar as an export carries it.
fn calendar_entry(calendar: &CalendarRow) -> Result<CalendarEntry, ApiError> {
    let days = serde_json::from_str(&calendar.calendar.days).map_err(ApiError::internal)?;
    let (name, description) = (calendar.calendar.name.clone(), calendar.calendar.description.clone());
    Ok(CalendarEntry { name, description, days })
}

async fn grant(state: &MgmtState, job: JobId) -> Result<GrantEntry, ApiError> {
    let row = state.store.load_job_grant(job).await?.unwrap_or_default();
    let mut entry = GrantEntry {
        http_allow: row.http_allow.lines().map(str::to_owned).filter(|l| !l.is_empty()).collect(),
        http_max_requests: row.http_max_requests,
        http_max_response_bytes: row.http_max_response_bytes,
        http_timeout_ms: row.http_timeout_ms,
        fuel: row.fuel,
        memory_bytes: row.memory_bytes,
        uses: row.used_names().into_iter().map(str::to_owned).collect(),
        // Only a switched-off recorder is written: an export from before stays the same.
        record_runs: (!row.records_runs()).then_some(false),
        journal_max_bytes: row.journal_max_bytes,
        ..GrantEntry::default()
    };
    for variable in state.store.list_variables(VariableOwner::Job(job)).await? {
        if variable.secret != 0 {
            // The sealed value stays here: only the name travels.
            entry.secrets.push(variable.name);
        } else {
            entry.variables.insert(variable.name, variable.value);
        }
    }
    Ok(entry)
}
