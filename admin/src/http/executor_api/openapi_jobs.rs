//! xxl-job 3.5's job-management OpenAPI: `POST /api/addJob`, `/api/updateJob`,
//! `/api/removeJob`, `/api/startJob`, `/api/stopJob`, `/api/triggerJob` (upstream
//! `OpenApiController` + `AdminJobBizImpl`), so scripts written for xxl-job 3.5 work unchanged.
//!
//! The executor-facing dispatcher (`calls.rs`) has checked method, URI, body and the caller:
//! a group's own access token with its AppName. Each operation then passes upstream's rate
//! limit, counted per group ([`OpenApiLimit`], 502 "Too many requests, please try again
//! later.") and runs as the
//! management API's own handler would for a user whose only group is the caller's, so the
//! checks, defaults and messages are those of `/api/v1/jobs`. Replies are upstream's
//! `Response`: `{"code":200,"msg":"Success","data":…}` (the id of a new job as a string, also
//! under `content` as upstream's document shows), or `{"code":500,"msg":reason}`.
//!
//! Deliberate differences (docs/api.md): a group's token manages that group's jobs only
//! (upstream: every job, as an administrator); `updateJob` keeps the job's child jobs, GLUE type,
//! time zone and retry backoff (upstream clears the child jobs); every change is in the audit
//! log as `openapi:{AppName}`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::credentials::GroupCredential;
use crate::http::mgmt::ApiJson;
use crate::http::mgmt::audit;
use crate::http::mgmt::auth::{Credential, Principal};
use crate::http::mgmt::job_input::JobInput;
use crate::http::mgmt::job_retry::RetryForm;
use crate::http::mgmt::job_settings::JobSettings;
use crate::http::mgmt::token_scope::TokenScope;
use crate::http::mgmt::{job_view, jobs};
use crate::http::{ApiError, ExecutorApiState, MgmtState};
use crate::store::{GroupId, JobId, User, UserId, UserRow};

/// How long a request waits for the limiter before it is refused (upstream's `tryAcquire`).
const LIMIT_WAIT: Duration = Duration::from_secs(1);

/// Upstream's refusal when the limiter has no room.
pub(crate) const TOO_MANY: &str = "Too many requests, please try again later.";

/// The rate limit of the job OpenAPI: `per_second` requests a second per executor group, in
/// bursts of as many. Upstream's Guava-style bucket allows 100 a second for all callers together
/// after a 30 s warm-up; one bucket per group keeps one group's script from using up every
/// other group's calls (review L4). The warm-up is not reproduced. Only authenticated callers
/// reach it: wrong tokens are throttled per address before (`token_failures.rs`).
pub(crate) struct OpenApiLimit(DefaultKeyedRateLimiter<GroupId>);

impl OpenApiLimit {
    pub(crate) fn new(per_second: u32) -> Self {
        let rate = std::num::NonZeroU32::new(per_second).unwrap_or(std::num::NonZeroU32::MIN);
        Self(RateLimiter::keyed(Quota::per_second(rate)))
    }

    /// Waits up to [`LIMIT_WAIT`] for room in `group`'s bucket; false if there was none.
    async fn acquire(&self, group: GroupId) -> bool {
        // One key per group: the map is as large as the groups with tokens, and buckets that
        // are full again are dropped.
        if self.0.len() > 1_000 {
            self.0.retain_recent();
        }
        tokio::time::timeout(LIMIT_WAIT, self.0.until_key_ready(&group)).await.is_ok()
    }
}

/// One operation of the job OpenAPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Add,
    Update,
    Remove,
    Start,
    Stop,
    Trigger,
}

impl Operation {
    /// The operation behind `/api/{uri}`, if it is one.
    pub(crate) fn from_uri(uri: &str) -> Option<Self> {
        Some(match uri {
            "addJob" => Self::Add,
            "updateJob" => Self::Update,
            "removeJob" => Self::Remove,
            "startJob" => Self::Start,
            "stopJob" => Self::Stop,
            "triggerJob" => Self::Trigger,
            _ => return None,
        })
    }

    fn audit_action(self) -> &'static str {
        match self {
            Self::Add => "job.create",
            Self::Update => "job.update",
            Self::Remove => "job.delete",
            Self::Start => "job.start",
            Self::Stop => "job.stop",
            Self::Trigger => "job.trigger",
        }
    }
}

/// `JobAddRequest` / `JobUpdateRequest`: the job's settings in upstream's names (Gen C calls
/// the description `name`; the `jobDesc` of earlier snapshots is accepted too).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JobRequest {
    #[serde(default)]
    id: i32,
    #[serde(default)]
    job_group: i32,
    #[serde(flatten)]
    settings: JobSettings,
    #[serde(default)]
    glue_source: Option<String>,
}

/// `JobOperateRequest` and `JobTriggerRequest`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OperateRequest {
    #[serde(default)]
    id: i32,
    #[serde(default)]
    executor_param: Option<String>,
    #[serde(default)]
    address_list: Option<String>,
}

/// What an operation answers: its `data` (the new job's id for `addJob`), or the reason.
pub(crate) type Outcome = Result<Option<String>, String>;

/// Runs `operation` for the group `caller` holds the token of.
pub(crate) async fn handle(
    state: &Arc<ExecutorApiState>,
    caller: &Arc<GroupCredential>,
    operation: Operation,
    body: &[u8],
    client: Option<SocketAddr>,
) -> Outcome {
    if !state.openapi_limit.acquire(caller.group).await {
        return Err(TOO_MANY.to_owned());
    }
    let principal = principal(caller);
    let state = &state.mgmt;
    let result = match operation {
        Operation::Add | Operation::Update => {
            let request: JobRequest = decode(operation, body)?;
            save(state, &principal, operation, request).await
        }
        _ => {
            let request: OperateRequest = decode(operation, body)?;
            operate(state, &principal, operation, request).await
        }
    };
    let (job, before, data) = result.map_err(|e| message(operation, e))?;
    let client = client.map_or_else(String::new, |c| c.ip().to_string());
    // A trigger's parameter and addresses are the change, as on `/api/v1/jobs/{id}/trigger`.
    let detail = (operation == Operation::Trigger).then(|| {
        let body: Value = serde_json::from_slice(body).unwrap_or_default();
        json!({ "executorParam": body["executorParam"], "addressList": body["addressList"] })
    });
    let username = principal.user.user.username.clone();
    audit::record_job_change(state, client, username, operation.audit_action(), job, before, detail).await;
    Ok(data)
}

/// The caller as a user whose only group is its own (upstream acts as an administrator).
fn principal(caller: &GroupCredential) -> Principal {
    let user = User {
        username: format!("openapi:{}", caller.app_name).chars().take(50).collect(),
        password: String::new(),
        token: None,
        role: 0,
        permission: Some(caller.group.0.to_string()),
    };
    Principal { user: UserRow { id: UserId(0), user }, credential: Credential::Token(TokenScope::Write) }
}

fn decode<T: serde::de::DeserializeOwned>(operation: Operation, body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("openapi invoke error: invalid JSON body for {operation:?}: {e}"))
}

/// An error of the management handlers as the reply's `msg`; internal ones are logged here,
/// since no response middleware sees them.
fn message(operation: Operation, error: ApiError) -> String {
    if let ApiError::Internal(cause) = &error {
        tracing::error!(?operation, error = %format!("{cause:#}"), "job OpenAPI request failed");
    }
    error.to_string()
}

/// `(job, its view before, data)` of a successful operation.
type Done = (JobId, Option<Value>, Option<String>);

async fn save(
    state: &Arc<MgmtState>,
    principal: &Principal,
    operation: Operation,
    r: JobRequest,
) -> Result<Done, ApiError> {
    let mut input = JobInput {
        job_group: r.job_group,
        settings: r.settings,
        glue_source: r.glue_source,
        child_job_id: None,
        tags: None,
        priority: None,
        delivery_mode: None,
        only_on: None,
        never_on: None,
        exclusion_windows: None,
        alarms: Default::default(),
    };
    if operation == Operation::Add {
        let (_, Json(view)) =
            jobs::create(State(Arc::clone(state)), principal.clone(), ApiJson(input)).await?;
        let id = serde_json::to_value(&view).ok().and_then(|v| v["id"].as_i64()).unwrap_or_default();
        return Ok((JobId(i32::try_from(id).unwrap_or_default()), None, Some(id.to_string())));
    }
    // Upstream's update keeps the job's group and GLUE; jobwheel also keeps what 3.5's request
    // cannot say (child jobs, time zone, retry backoff).
    let current = job_view::permitted_job(state, principal, r.id).await?;
    let before = job_view::reload(state, current.id).await?;
    input.job_group = current.job.job_group.0;
    input.settings.glue_type.clone_from(&current.job.glue_type);
    input.child_job_id.clone_from(&current.job.child_jobid);
    let retry = RetryForm::from_stored(state.store.job_retry_backoff(current.id).await?);
    input.settings.keep_jobwheel_settings(&current, retry);
    drop(jobs::update(State(Arc::clone(state)), principal.clone(), Path(r.id), ApiJson(input)).await?);
    Ok((current.id, serde_json::to_value(&before).ok(), None))
}

async fn operate(
    state: &Arc<MgmtState>,
    principal: &Principal,
    operation: Operation,
    r: OperateRequest,
) -> Result<Done, ApiError> {
    let job = match job_view::permitted_job(state, principal, r.id).await {
        // Upstream answers success for a job that is already gone.
        Err(ApiError::NotFound(_)) if operation == Operation::Remove => return Ok((JobId(r.id), None, None)),
        other => other?,
    };
    let before = serde_json::to_value(job_view::reload(state, job.id).await?).ok();
    let (shared, path) = (State(Arc::clone(state)), Path(r.id));
    match operation {
        Operation::Remove => drop(jobs::delete(shared, principal.clone(), path).await?),
        Operation::Start => drop(jobs::start(shared, principal.clone(), path).await?),
        Operation::Stop => drop(jobs::stop(shared, principal.clone(), path).await?),
        Operation::Trigger => {
            let body = jobs::TriggerBody::new(r.executor_param, r.address_list);
            drop(jobs::trigger(shared, principal.clone(), path, ApiJson(body)).await?);
        }
        Operation::Add | Operation::Update => {
            return Err(ApiError::BadRequest(format!(
                "{operation:?} is not an operation on an existing job"
            )));
        }
    }
    Ok((job.id, before, None))
}
