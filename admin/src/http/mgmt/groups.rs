//! `/api/v1/groups`: executor groups (upstream `JobGroupController`). Admins manage them;
//! normal users may read the groups in their permission (the job and log pages need them).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use jobwheel_protocol::REGISTRY_GROUP_EXECUTOR;
use serde::{Deserialize, Serialize};

use super::alarm_routes::{self, AlarmForm, AlarmView};
use super::auth::Principal;
use super::{ApiJson, ApiQuery, Listed, Paging, ms};
use crate::credentials::TokenRefusal;
use crate::engine::DEAD_TIMEOUT_MS;
use crate::http::{ApiError, MgmtState};
use crate::routing::sort_addresses;
use crate::store::{Group, GroupId, GroupRow, JobFilter, Page, route_scope};

/// Upstream's AppName length rule.
const APPNAME_CHARS: std::ops::RangeInclusive<usize> = 4..=64;
/// Upstream's title limit.
const TITLE_MAX: usize = 64;
/// `address_type` of groups whose addresses come from executor registrations.
const AUTO: i16 = 0;
/// `address_type` of groups whose addresses are entered by hand.
const MANUAL: i16 = 1;

/// A group as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GroupView {
    id: i32,
    appname: String,
    title: String,
    address_type: i16,
    address_list: Option<String>,
    update_time: Option<i64>,
    /// Whether the group has its own access token (xxl-job 3.5); the token itself is never
    /// shown after it was set.
    access_token_set: bool,
    /// Why the group's stored token is refused (xxl-job's published `default_token` of an
    /// adopted 3.5 database, a short one, one that cannot be opened); absent when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    access_token_refused: Option<&'static str>,
    /// jobwheel: the cap on the group's runs in flight across its executors; null: none.
    max_running: Option<i32>,
    /// jobwheel: `alarmChannels` (docs/alarms.md); jobs of the group without their own use them.
    #[serde(flatten)]
    alarms: AlarmView,
    /// Only in `GET /groups/{id}`: live registrations of its AppName.
    #[serde(skip_serializing_if = "Option::is_none")]
    registered: Option<Vec<String>>,
}

impl From<GroupRow> for GroupView {
    fn from(row: GroupRow) -> Self {
        Self {
            id: row.id.0,
            appname: row.group.app_name,
            title: row.group.title,
            address_type: row.group.address_type,
            address_list: row.group.address_list,
            update_time: ms(row.group.update_time),
            access_token_set: false,
            access_token_refused: None,
            max_running: row.max_running,
            alarms: AlarmView::default(),
            registered: None,
        }
    }
}

/// The groups that have their own access token, and why each one that is refused is.
pub(crate) async fn with_tokens(
    state: &MgmtState,
) -> Result<BTreeMap<GroupId, Option<TokenRefusal>>, ApiError> {
    Ok(state.group_tokens.current_states().await?.into_iter().collect())
}

/// The view of `row`, saying whether it has its own access token.
pub(crate) async fn view(state: &MgmtState, row: GroupRow) -> Result<GroupView, ApiError> {
    let token = with_tokens(state).await?.get(&row.id).copied();
    let alarms = alarm_routes::views(state, route_scope::GROUP, &[i64::from(row.id.0)])
        .await?
        .pop()
        .unwrap_or_default();
    Ok(GroupView {
        access_token_set: token.is_some(),
        access_token_refused: token.flatten().map(TokenRefusal::describe),
        alarms,
        ..row.into()
    })
}

#[derive(Deserialize)]
pub(crate) struct GroupQuery {
    #[serde(default)]
    appname: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /api/v1/groups`: upstream's `pageList` (substring filters, case-insensitive like
/// MySQL's default collation); normal users see only their permitted groups.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<GroupQuery>,
) -> Result<Json<Listed<GroupView>>, ApiError> {
    let page = query.paging.page()?;
    let needle = |v: Option<String>| v.map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty());
    let (appname, title) = (needle(query.appname), needle(query.title));
    // Groups are few (one per application); filtering here keeps the store interface small.
    let matching: Vec<GroupRow> = state
        .store
        .list_groups()
        .await?
        .into_iter()
        .filter(|g| principal.may_use(g.id))
        .filter(|g| appname.as_ref().is_none_or(|a| g.group.app_name.to_lowercase().contains(a)))
        .filter(|g| title.as_ref().is_none_or(|t| g.group.title.to_lowercase().contains(t)))
        .collect();
    let total = matching.len() as u64;
    let tokens = with_tokens(&state).await?;
    let rows: Vec<GroupRow> =
        matching.into_iter().skip(page.offset as usize).take(page.limit as usize).collect();
    let ids: Vec<i64> = rows.iter().map(|r| i64::from(r.id.0)).collect();
    let alarms = alarm_routes::views(&state, route_scope::GROUP, &ids).await?;
    let items = rows.into_iter().zip(alarms).map(|(row, alarms)| {
        let token = tokens.get(&row.id).copied();
        GroupView {
            access_token_set: token.is_some(),
            access_token_refused: token.flatten().map(TokenRefusal::describe),
            alarms,
            ..row.into()
        }
    });
    Ok(Json(Listed { total, items: items.collect() }))
}

/// `GET /api/v1/groups/{id}`: the group plus the live registrations of its AppName (upstream's
/// "registered nodes" popup).
pub(crate) async fn get(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<Json<GroupView>, ApiError> {
    // Permission first, so a normal user learns nothing about groups outside its permission.
    principal.require_group(GroupId(id))?;
    let row = load(&state, id).await?;
    let registered = registered(&state, &row.group.app_name).await?;
    Ok(Json(GroupView { registered: Some(registered), ..view(&state, row).await? }))
}

/// Distinct `EXECUTOR` registrations of `app_name` with a heartbeat within
/// `--executor-dead-timeout` (upstream `DEAD_TIMEOUT`, 90 s), sorted like the registry monitor
/// sorts a group's address list.
async fn registered(state: &MgmtState, app_name: &str) -> Result<Vec<String>, ApiError> {
    let dead_ms = i64::try_from(state.executor_dead_timeout.as_millis()).unwrap_or(DEAD_TIMEOUT_MS);
    let alive_after = state.clock.now() - chrono::Duration::milliseconds(dead_ms);
    let live: BTreeSet<String> = state
        .store
        .alive_registry(alive_after)
        .await?
        .into_iter()
        .filter(|r| r.registry_group == REGISTRY_GROUP_EXECUTOR && r.registry_key == app_name)
        .map(|r| r.registry_value)
        .collect();
    let mut addresses: Vec<String> = live.into_iter().collect();
    sort_addresses(&mut addresses);
    Ok(addresses)
}

pub(crate) async fn load(state: &MgmtState, id: i32) -> Result<GroupRow, ApiError> {
    state
        .store
        .load_group(GroupId(id))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("executor group {id} not found")))
}

/// The add/edit form.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GroupInput {
    appname: String,
    title: String,
    #[serde(default)]
    address_type: i16,
    #[serde(default)]
    address_list: Option<String>,
    /// jobwheel: runs of the group in flight at most; 0 removes the cap, absent keeps it.
    #[serde(default)]
    max_running: Option<i64>,
    /// jobwheel: `alarmChannels`; absent keeps them.
    #[serde(flatten)]
    alarms: AlarmForm,
}

/// The largest cap accepted (a cap above the executors' capacity is no cap).
const MAX_RUNNING_MAX: i64 = 100_000;

impl GroupInput {
    /// The cap to store, if the form named one: `Some(None)` removes it.
    fn cap(&self) -> Result<Option<Option<i32>>, ApiError> {
        match self.max_running {
            None => Ok(None),
            Some(0) => Ok(Some(None)),
            Some(n) if (1..=MAX_RUNNING_MAX).contains(&n) => Ok(Some(i32::try_from(n).ok())),
            Some(_) => Err(ApiError::BadRequest(format!(
                "maxRunning: must be 0 (no cap) to {MAX_RUNNING_MAX} runs in flight"
            ))),
        }
    }

    /// Upstream's checks; the group to store (automatic groups get their list from the registry
    /// afterwards, so theirs starts empty).
    fn check(&self, now: DateTime<Utc>) -> Result<Group, ApiError> {
        let appname = self.appname.trim();
        if !APPNAME_CHARS.contains(&appname.chars().count()) {
            return Err(ApiError::BadRequest("appname: must be 4 to 64 characters".to_owned()));
        }
        if let Some(bad) = appname.chars().find(|c| !(c.is_ascii_alphanumeric() || "_.-".contains(*c))) {
            return Err(ApiError::BadRequest(format!(
                "appname: {bad:?} is not allowed (use letters, digits, '_', '.' and '-')"
            )));
        }
        let title = self.title.trim();
        if title.is_empty() {
            return Err(ApiError::BadRequest("title: required".to_owned()));
        }
        if title.chars().count() > TITLE_MAX {
            return Err(ApiError::BadRequest(format!("title: at most {TITLE_MAX} characters")));
        }
        let address_list = match self.address_type {
            AUTO => None,
            MANUAL => Some(manual_addresses(self.address_list.as_deref().unwrap_or_default())?),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "addressType: must be 0 (automatic registration) or 1 (manual), not {other}"
                )));
            }
        };
        Ok(Group {
            app_name: appname.to_owned(),
            title: title.to_owned(),
            address_type: self.address_type,
            address_list,
            update_time: Some(now),
        })
    }
}

/// A manual address list: at least one address, each `http://` or `https://` (upstream's rule);
/// entries are trimmed and re-joined with `,`.
fn manual_addresses(list: &str) -> Result<String, ApiError> {
    if list.trim().is_empty() {
        return Err(ApiError::BadRequest(
            "addressList: a manual group needs at least one executor address".to_owned(),
        ));
    }
    let mut addresses = Vec::new();
    for entry in list.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(ApiError::BadRequest("addressList: contains an empty entry".to_owned()));
        }
        if !(entry.starts_with("http://") || entry.starts_with("https://")) {
            return Err(ApiError::BadRequest(format!(
                "addressList: {entry:?} must start with http:// or https://"
            )));
        }
        if entry.contains(['<', '>', '"', '\'', ' ']) {
            return Err(ApiError::BadRequest(format!("addressList: {entry:?} is not a valid address")));
        }
        addresses.push(entry);
    }
    Ok(addresses.join(","))
}

/// After saving an automatic group, let the core fill its address list from live
/// registrations at once (upstream's update does the same inline), then read it back.
async fn saved(state: &MgmtState, id: GroupId, group: &Group) -> Result<GroupRow, ApiError> {
    if group.address_type == AUTO {
        state.core.refresh_group(&group.app_name).await;
    }
    load(state, id.0).await
}

/// `POST /api/v1/groups`.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<GroupInput>,
) -> Result<(StatusCode, Json<GroupView>), ApiError> {
    principal.require_admin()?;
    let group = input.check(state.clock.now())?;
    let cap = input.cap()?;
    let alarms = input.alarms.check(&state, route_scope::GROUP).await?;
    unique_app_name(&state, &group.app_name, None).await?;
    let id = state.store.add_group(&group).await?;
    if let Some(cap) = cap {
        state.store.set_group_cap(id, cap).await?;
    }
    alarms.store(state.store.as_ref(), route_scope::GROUP, i64::from(id.0)).await?;
    let row = saved(&state, id, &group).await?;
    Ok((StatusCode::CREATED, Json(view(&state, row).await?)))
}

/// Refuses an AppName another group has: executors register by AppName, so two groups with one
/// name would share executors, the group token and the secrets sent with triggers (review L6;
/// upstream 3.5 makes `app_name` unique too).
async fn unique_app_name(state: &MgmtState, app_name: &str, this: Option<GroupId>) -> Result<(), ApiError> {
    let groups = state.store.list_groups().await?;
    match groups.iter().find(|g| g.group.app_name == app_name && Some(g.id) != this) {
        Some(other) => Err(ApiError::BadRequest(format!(
            "appname: {app_name} is already the AppName of executor group {} ({:?}); AppNames are unique",
            other.id.0, other.group.title
        ))),
        None => Ok(()),
    }
}

/// `PUT /api/v1/groups/{id}`.
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<GroupInput>,
) -> Result<Json<GroupView>, ApiError> {
    principal.require_admin()?;
    let current = load(&state, id).await?;
    let mut group = input.check(state.clock.now())?;
    let cap = input.cap()?;
    let alarms = input.alarms.check(&state, route_scope::GROUP).await?;
    unique_app_name(&state, &group.app_name, Some(current.id)).await?;
    if group.address_type == AUTO
        && current.group.address_type == AUTO
        && group.app_name == current.group.app_name
    {
        // Keep the registry-maintained list until the refresh below rewrites it.
        group.address_list = current.group.address_list;
    }
    if !state.store.update_group(current.id, &group).await? {
        return Err(ApiError::NotFound(format!("executor group {id} not found")));
    }
    if let Some(cap) = cap {
        state.store.set_group_cap(current.id, cap).await?;
    }
    alarms.store(state.store.as_ref(), route_scope::GROUP, i64::from(current.id.0)).await?;
    // A token is presented with the AppName, which may just have changed.
    state.group_tokens.invalidate();
    let row = saved(&state, current.id, &group).await?;
    Ok(Json(view(&state, row).await?))
}

/// `DELETE /api/v1/groups/{id}`: refused while jobs use the group or if it is the last one
/// (upstream's rules; the job form needs a group).
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<StatusCode, ApiError> {
    principal.require_admin()?;
    let group = load(&state, id).await?;
    let filter = JobFilter { job_group: Some(group.id), ..JobFilter::default() };
    let jobs = state.store.page_jobs(&filter, Page { offset: 0, limit: 1 }).await?.total;
    if jobs > 0 {
        return Err(ApiError::Conflict(format!(
            "executor group {id} still has {jobs} job(s); delete or move them first"
        )));
    }
    // Its workflows would stay behind, owned by no group (review N2).
    let workflows = state.store.list_workflows(Some(&[group.id])).await?.len();
    if workflows > 0 {
        return Err(ApiError::Conflict(format!(
            "executor group {id} still owns {workflows} workflow(s); delete or move them first"
        )));
    }
    if state.store.list_groups().await?.len() <= 1 {
        return Err(ApiError::Conflict("cannot delete the last executor group".to_owned()));
    }
    if !state.store.delete_group(group.id).await? {
        return Err(ApiError::NotFound(format!("executor group {id} not found")));
    }
    state.group_tokens.invalidate();
    alarm_routes::forget(&state, route_scope::GROUP, i64::from(group.id.0)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A group as `GET /api/v1/groups/{id}` shows it, for the audit log.
pub(crate) struct GroupSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for GroupSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        match state.store.load_group(GroupId(id)).await? {
            Some(row) => Ok(Some(super::audit::to_json(view(state, row).await?)?)),
            None => Ok(None),
        }
    }
}
