//! The management API under `/api/v1` (docs/api.md): what the web UI and scripts use to manage
//! jobs, groups, logs, users, modules and tokens.
//!
//! Every handler takes a [`Principal`](auth::Principal) (authentication, plus CSRF for cookie
//! writes) and checks its role or group before touching anything; there is no route that
//! relies on the UI hiding a button. Bodies and queries go through [`ApiJson`] / [`ApiQuery`]
//! so that malformed input is a JSON 400 naming the problem, like every other error here.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::credentials::GroupTokens;
use crate::http::{AdminCore, ApiError, HttpState, RecentRegistrations};
use crate::store::Store;
use crate::store::{Page, UserRow};

mod alarm_channels;
mod alarm_deliveries;
mod alarm_routes;
mod approvals;
pub(crate) mod audit;
mod audit_list;
pub(crate) mod auth;
mod backfills;
pub(crate) mod calendars;
mod dashboard;
mod glue;
mod grants;
mod group_executors;
mod group_token;
pub(crate) mod groups;
mod import;
mod import_calendars;
mod import_modules;
mod job_days;
mod job_grant;
pub(crate) mod job_input;
pub(crate) mod job_retry;
mod job_search;
pub(crate) mod job_settings;
mod job_tags;
pub(crate) mod job_view;
pub(crate) mod jobs;
mod log_replay;
mod log_search;
pub(crate) mod login_limit;
mod logs;
mod meta;
mod session;
mod sso;
pub(crate) mod token_scope;
mod tokens;
mod transfer;
mod transfer_workflows;
mod users;
mod wasm_versions;
mod wasm_what_if;
mod workflow_instances;
mod workflow_items;
mod workflow_reach;
mod workflows;

pub(crate) use wasm_versions::ModuleInfoCache;

pub(crate) use login_limit::{LoginLimiter, RefusedLogins};

/// What the management room's handlers share.
pub(crate) struct MgmtState {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) core: Arc<dyn AdminCore>,
    /// The edge's clock (the core's): sessions, tokens, throttles and audit times read it.
    pub(crate) clock: Arc<dyn Clock>,
    /// Heartbeats the executor room saw (which executors are live now).
    pub(crate) registrations: Arc<RecentRegistrations>,
    /// Failed-login bookkeeping.
    pub(crate) login_limit: LoginLimiter,
    /// Throttled and malformed logins folded for the audit log.
    pub(crate) refused_logins: RefusedLogins,
    /// Whether session cookies carry `Secure` (the admin is reached over HTTPS).
    pub(crate) secure_cookie: bool,
    /// `--keep-upstream-password-hashes`: an upstream admin shares the users table.
    pub(crate) keep_upstream_password_hashes: bool,
    /// Proxies whose `X-Forwarded-For` names the client (login throttle, audit).
    pub(crate) trusted_proxies: crate::trusted_proxies::TrustedProxies,
    /// `--executor-dead-timeout`: registrations older than this are not shown as live.
    pub(crate) executor_dead_timeout: std::time::Duration,
    /// The admin's language (`--i18n`): titles in `/api/v1/meta`, trigger messages.
    pub(crate) lang: crate::lang::MessageLang,
    /// What uploaded Wasm modules export and import, by digest.
    pub(crate) module_info: ModuleInfoCache,
    /// Seals secret values written through the API (never opens them: reads show "set").
    pub(crate) secret_box: Arc<crate::sealing::SecretBox>,
    /// Groups' own access tokens (xxl-job 3.5): shown, made and revoked here.
    pub(crate) group_tokens: Arc<GroupTokens>,
    /// Who reads each audited resource for its before/after snapshots.
    pub(crate) audit_snapshots: audit::Snapshots,
    /// Single sign-on providers and whether local passwords are on (docs/sso.md).
    pub(crate) sso: Arc<crate::sso::Sso>,
}

/// Largest JSON body (a GLUE source is the big one: `mediumtext`, but nobody edits 1 MiB of
/// script in a browser).
pub(crate) const MAX_JSON_BYTES: usize = 2 * 1024 * 1024;
/// Default and largest page sizes of list endpoints.
const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 500;

/// Which resource module reads each audited kind of resource (`audit.rs`).
pub(crate) fn audit_snapshots() -> audit::Snapshots {
    use audit::Subject;
    audit::Snapshots::new(vec![
        (Subject::Job, &job_view::JobSnapshot),
        (Subject::Glue, &glue::GlueSnapshot),
        (Subject::Grant, &grants::GrantSnapshot),
        (Subject::Wasm, &wasm_versions::WasmSnapshot),
        (Subject::Group, &groups::GroupSnapshot),
        (Subject::GroupVariables, &grants::GroupVariablesSnapshot),
        (Subject::User, &users::UserSnapshot),
        (Subject::Calendar, &calendars::CalendarSnapshot),
        (Subject::Workflow, &workflows::WorkflowSnapshot),
        (Subject::AlarmChannel, &alarm_channels::ChannelSnapshot),
    ])
}

/// The `/api/v1` routes.
pub(crate) fn router() -> Router<HttpState> {
    Router::new()
        .route("/api/v1/session", post(session::login).get(session::current).delete(session::logout))
        .route("/api/v1/session/password", put(session::change_password))
        .route("/api/v1/sso", get(sso::providers))
        .route("/api/v1/sso/oidc/{id}/login", get(sso::oidc_login))
        .route("/api/v1/sso/oidc/{id}/callback", get(sso::oidc_callback))
        .route("/api/v1/meta", get(meta::meta))
        .route("/api/v1/openapi.json", get(meta::openapi))
        .route("/api/v1/jobs", get(jobs::list).post(jobs::create_route))
        .route("/api/v1/jobs/tags", get(job_tags::list))
        .route("/api/v1/jobs/export", get(transfer::export))
        .route("/api/v1/jobs/import", post(import::import))
        .route("/api/v1/jobs/{id}", get(jobs::get).put(jobs::update_route).delete(jobs::delete))
        .route("/api/v1/jobs/{id}/start", post(jobs::start))
        .route("/api/v1/jobs/{id}/stop", post(jobs::stop))
        .route("/api/v1/jobs/{id}/trigger", post(jobs::trigger))
        .route("/api/v1/jobs/{id}/log-search", get(log_search::search))
        .route("/api/v1/jobs/{id}/glue", get(glue::get).put(glue::save))
        .route("/api/v1/jobs/{id}/grant", get(grants::get_job).put(grants::put_job))
        .route(
            "/api/v1/jobs/{id}/secrets/{name}",
            put(grants::put_job_secret).delete(grants::delete_job_secret),
        )
        .route("/api/v1/jobs/{id}/wasm", get(wasm_versions::versions).post(wasm_versions::upload))
        .route("/api/v1/jobs/{id}/wasm/rollback", post(wasm_versions::rollback))
        .route("/api/v1/jobs/{id}/wasm/what-if", post(wasm_what_if::what_if))
        .route("/api/v1/wasm/validate", post(wasm_versions::validate))
        .route("/api/v1/approvals", get(approvals::list))
        .route("/api/v1/approvals/{id}", get(approvals::one))
        .route("/api/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/api/v1/approvals/{id}/refuse", post(approvals::refuse))
        .route("/api/v1/schedule/next", get(jobs::next_times))
        .route("/api/v1/workflows", get(workflows::list).post(workflows::create))
        .route("/api/v1/workflows/{id}", get(workflows::get).put(workflows::update).delete(workflows::delete))
        .route("/api/v1/workflows/{id}/start", post(workflows::start))
        .route("/api/v1/workflows/{id}/stop", post(workflows::stop))
        .route(
            "/api/v1/workflows/{id}/instances",
            get(workflow_instances::instances).post(workflow_instances::start_instance),
        )
        .route("/api/v1/workflow-instances/{id}", get(workflow_instances::instance))
        .route("/api/v1/workflow-instances/{id}/stop", post(workflow_instances::stop_instance))
        .route("/api/v1/workflow-instances/{id}/rerun-failed", post(workflow_instances::rerun_failed))
        .route("/api/v1/workflow-instances/{id}/rerun", post(workflow_instances::rerun))
        .route("/api/v1/workflow-instances/{id}/nodes/{name}/done", post(workflow_instances::mark_done))
        .route("/api/v1/workflow-instances/{id}/nodes/{name}/approve", post(workflow_instances::approve))
        .route("/api/v1/workflow-instances/{id}/nodes/{name}/reject", post(workflow_instances::reject))
        .route("/api/v1/workflow-instances/{id}/nodes/{name}/items", get(workflow_items::items))
        .route("/api/v1/backfills", get(backfills::list).post(backfills::create))
        .route("/api/v1/backfills/{id}", get(backfills::get))
        .route("/api/v1/backfills/{id}/cancel", post(backfills::cancel))
        .route("/api/v1/calendars", get(calendars::list).post(calendars::create))
        .route("/api/v1/calendars/import", post(calendars::import))
        .route("/api/v1/calendars/{id}", get(calendars::get).put(calendars::update).delete(calendars::delete))
        .route("/api/v1/alarm-channels", get(alarm_channels::list).post(alarm_channels::create))
        .route(
            "/api/v1/alarm-channels/{id}",
            get(alarm_channels::get).put(alarm_channels::update).delete(alarm_channels::delete),
        )
        .route("/api/v1/alarm-channels/{id}/test", post(alarm_channels::test))
        .route("/api/v1/alarm-deliveries", get(alarm_deliveries::deliveries))
        .route("/api/v1/groups", get(groups::list).post(groups::create))
        .route("/api/v1/groups/{id}", get(groups::get).put(groups::update).delete(groups::delete))
        .route("/api/v1/groups/{id}/executors", get(group_executors::list))
        .route("/api/v1/groups/{id}/access-token", put(group_token::put).delete(group_token::delete))
        .route("/api/v1/groups/{id}/variables", get(grants::get_group).put(grants::put_group))
        .route(
            "/api/v1/groups/{id}/secrets/{name}",
            put(grants::put_group_secret).delete(grants::delete_group_secret),
        )
        .route("/api/v1/users", get(users::list).post(users::create))
        .route("/api/v1/users/{id}", put(users::update).delete(users::delete))
        .route("/api/v1/tokens", get(tokens::list).post(tokens::create))
        .route("/api/v1/tokens/{id}", axum::routing::delete(tokens::delete))
        .route("/api/v1/logs", get(logs::list))
        .route("/api/v1/logs/clear", post(logs::clear))
        .route("/api/v1/logs/{id}", get(logs::get))
        .route("/api/v1/logs/{id}/content", get(logs::content))
        .route("/api/v1/logs/{id}/kill", post(logs::kill))
        .route("/api/v1/logs/{id}/replay", post(log_replay::replay))
        .route("/api/v1/audit", get(audit_list::list))
        .route("/api/v1/dashboard", get(dashboard::counters))
        .route("/api/v1/dashboard/chart", get(dashboard::chart))
}

/// Makes every error of the management API JSON, including those axum answers by itself
/// (a malformed path parameter, a method the route does not have), so clients parse one shape.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.as_u16() < 400 || is_json {
        return response;
    }
    let text = match axum::body::to_bytes(response.into_body(), 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let msg = if text.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { text };
    (status, axum::Json(serde_json::json!({"code": status.as_u16(), "msg": msg}))).into_response()
}

/// A JSON body that may be left out: no body (or only whitespace) is `T::default()`; one that
/// does not parse is a 400 worded by `why`.
pub(crate) fn optional_json<T: DeserializeOwned + Default>(
    body: &[u8],
    why: impl FnOnce(serde_json::Error) -> String,
) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(why(e)))
}

/// `axum::Json` with the rejection as an [`ApiError`] (JSON body, clear message).
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            // axum words this "length limit exceeded"; say which limit, and keep its 413.
            Err(rejection) if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::PayloadTooLarge(format!(
                    "the request body is over the {} MiB limit of JSON requests",
                    MAX_JSON_BYTES / (1024 * 1024)
                )))
            }
            Err(rejection) => Err(ApiError::BadRequest(rejection.body_text())),
        }
    }
}

/// `axum::extract::Query` with the rejection as an [`ApiError`].
pub(crate) struct ApiQuery<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(Self(value)),
            Err(rejection) => Err(ApiError::BadRequest(rejection.body_text())),
        }
    }
}

/// `offset` / `limit` of list endpoints.
///
/// Kept as text and parsed in [`Paging::page`]: query structs embed this with
/// `#[serde(flatten)]`, and serde hands flattened fields over as buffered strings, which a
/// `u32` field would reject ("invalid type: string").
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Paging {
    #[serde(default)]
    offset: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

impl Paging {
    pub(crate) fn page(self) -> Result<Page, ApiError> {
        let number = |field: &str, value: Option<String>, default: u32| match value.as_deref().map(str::trim)
        {
            None | Some("") => Ok(default),
            Some(text) => text
                .parse::<u32>()
                .map_err(|_| ApiError::BadRequest(format!("{field}: {text:?} is not a whole number"))),
        };
        let offset = number("offset", self.offset, 0)?;
        let limit = number("limit", self.limit, DEFAULT_LIMIT)?;
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::BadRequest(format!("limit: must be 1 to {MAX_LIMIT}")));
        }
        Ok(Page { offset, limit })
    }
}

/// A page of a list: `{"total": n, "items": [...]}`.
#[derive(Debug, Serialize)]
pub(crate) struct Listed<T> {
    pub(crate) total: u64,
    pub(crate) items: Vec<T>,
}

/// A user as the API shows it (never the password hash or token).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UserView {
    pub(crate) id: i32,
    pub(crate) username: String,
    pub(crate) role: i16,
    pub(crate) permission: Vec<i32>,
    /// The stored hash is upstream's hash of its published password (the seed `admin`/`123456`
    /// of an adopted database): the account cannot sign in until it gets a new one (N1).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) published_password: bool,
}

impl From<&UserRow> for UserView {
    fn from(row: &UserRow) -> Self {
        Self {
            id: row.id.0,
            username: row.user.username.clone(),
            role: row.user.role,
            permission: auth::parse_permission(row.user.permission.as_deref())
                .into_iter()
                .map(|g| g.0)
                .collect(),
            published_password: crate::credentials::published::is_published_password_hash(&row.user.password),
        }
    }
}

/// Epoch ms of a stored time.
pub(crate) fn ms(time: Option<chrono::DateTime<chrono::Utc>>) -> Option<i64> {
    time.map(|t| t.timestamp_millis())
}
