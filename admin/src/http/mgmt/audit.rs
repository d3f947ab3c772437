//! Recording the audit log: one middleware around every `/api/v1` write, so no handler can
//! forget it.
//!
//! For a write it knows (the [`action`] table), the middleware reads the resource before the
//! handler runs and again after it succeeded, and stores who (the [`Principal`] the handler
//! extracted, handed over through an [`AuditSlot`]), when, from which client address (behind
//! `--trusted-proxies`, the forwarded one) and the two snapshots. Snapshots are the API's own
//! views, so they hold what a reader of the API may see: secret values never (secrets appear as
//! names), password hashes and token secrets never. Request bodies are recorded only for
//! writes whose meaning is in the body and carries no secret (a trigger's parameter, a log
//! clear's filter, a login's user name). Failed logins are recorded too; other failed requests
//! changed nothing and are not.
//!
//! Reading a resource is the resource module's business: each implements [`AuditSnapshot`]
//! and the router wires them into [`Snapshots`] once (`mgmt/mod.rs`), so this middleware
//! imports none of them.
//!
//! [`Principal`]: super::auth::Principal

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::MAX_JSON_BYTES;
use crate::http::{ApiError, MgmtState};
use crate::store::{CalendarId, JobId, NewAudit, UserId, UserRow, WorkflowId};

/// Who made the request, filled in by the `Principal` extractor once it authenticated.
#[derive(Clone, Default)]
pub(crate) struct AuditSlot(Arc<Mutex<Option<(UserId, String)>>>);

impl AuditSlot {
    pub(crate) fn set(&self, user: &UserRow) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((user.id, user.user.username.clone()));
    }

    fn get(&self) -> Option<(UserId, String)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// What a snapshot reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    Job,
    Glue,
    Grant,
    Wasm,
    Group,
    GroupVariables,
    User,
    Calendar,
    /// Not read: a token's row holds nothing beyond its name, which the detail records.
    Token,
    Workflow,
    /// An alarm channel (its view: never the URL or key).
    AlarmChannel,
    /// Nothing to read: the change is said by its action, target and detail.
    None,
}

/// One kind of write: its action name, what it is done to, and what is recorded of it.
struct Action {
    name: &'static str,
    subject: Subject,
    /// The target's id comes from the created resource (the answer's `id`).
    creates: bool,
    /// The request body is recorded as the detail.
    body_detail: bool,
}

const fn act(name: &'static str, subject: Subject) -> Action {
    Action { name, subject, creates: false, body_detail: false }
}

/// The action of a write, from its method and route.
fn action(method: &Method, route: &str) -> Option<Action> {
    let post = method == Method::POST;
    let put = method == Method::PUT;
    let delete = method == Method::DELETE;
    Some(match route {
        "/api/v1/session" if post => Action { body_detail: true, ..act("session.login", Subject::None) },
        "/api/v1/session" if delete => act("session.logout", Subject::None),
        "/api/v1/session/password" if put => act("session.password", Subject::None),
        "/api/v1/jobs" if post => Action { creates: true, ..act("job.create", Subject::Job) },
        "/api/v1/jobs/{id}" if put => act("job.update", Subject::Job),
        "/api/v1/jobs/{id}" if delete => act("job.delete", Subject::Job),
        "/api/v1/jobs/{id}/start" if post => act("job.start", Subject::Job),
        "/api/v1/jobs/{id}/stop" if post => act("job.stop", Subject::Job),
        "/api/v1/jobs/{id}/trigger" if post => {
            Action { body_detail: true, ..act("job.trigger", Subject::None) }
        }
        "/api/v1/jobs/{id}/glue" if put => act("glue.update", Subject::Glue),
        "/api/v1/jobs/{id}/grant" if put => act("grant.update", Subject::Grant),
        "/api/v1/jobs/{id}/secrets/{name}" if put => act("secret.put", Subject::Grant),
        "/api/v1/jobs/{id}/secrets/{name}" if delete => act("secret.delete", Subject::Grant),
        "/api/v1/jobs/{id}/wasm" if post => act("wasm.upload", Subject::Wasm),
        "/api/v1/jobs/{id}/wasm/rollback" if post => act("wasm.rollback", Subject::Wasm),
        "/api/v1/groups" if post => Action { creates: true, ..act("group.create", Subject::Group) },
        "/api/v1/groups/{id}" if put => act("group.update", Subject::Group),
        "/api/v1/groups/{id}" if delete => act("group.delete", Subject::Group),
        // The token is in neither snapshot (they say whether one is set) nor the detail.
        "/api/v1/groups/{id}/access-token" if put => act("group.token.set", Subject::Group),
        "/api/v1/groups/{id}/access-token" if delete => act("group.token.clear", Subject::Group),
        "/api/v1/groups/{id}/variables" if put => act("variables.update", Subject::GroupVariables),
        "/api/v1/groups/{id}/secrets/{name}" if put => act("secret.put", Subject::GroupVariables),
        "/api/v1/groups/{id}/secrets/{name}" if delete => act("secret.delete", Subject::GroupVariables),
        "/api/v1/users" if post => Action { creates: true, ..act("user.create", Subject::User) },
        "/api/v1/users/{id}" if put => act("user.update", Subject::User),
        "/api/v1/users/{id}" if delete => act("user.delete", Subject::User),
        // The answer holds the token's secret: only its id is read from it, the name from the body.
        "/api/v1/tokens" if post => {
            Action { creates: true, body_detail: true, ..act("token.create", Subject::Token) }
        }
        "/api/v1/tokens/{id}" if delete => act("token.delete", Subject::Token),
        "/api/v1/calendars" if post => Action { creates: true, ..act("calendar.create", Subject::Calendar) },
        "/api/v1/calendars/{id}" if put => act("calendar.update", Subject::Calendar),
        "/api/v1/calendars/{id}" if delete => act("calendar.delete", Subject::Calendar),
        // `creates`: the calendar's id comes from the answer (a replaced one's days before are
        // not read: the name is only known from the query).
        "/api/v1/calendars/import" if post => {
            Action { creates: true, ..act("calendar.import", Subject::Calendar) }
        }
        "/api/v1/workflows" if post => Action { creates: true, ..act("workflow.create", Subject::Workflow) },
        "/api/v1/workflows/{id}" if put => act("workflow.update", Subject::Workflow),
        "/api/v1/workflows/{id}" if delete => act("workflow.delete", Subject::Workflow),
        "/api/v1/workflows/{id}/start" if post => act("workflow.start", Subject::Workflow),
        "/api/v1/workflows/{id}/stop" if post => act("workflow.stop", Subject::Workflow),
        // The context is the start's meaning; secrets do not belong in it (docs/workflows.md).
        "/api/v1/workflows/{id}/instances" if post => {
            Action { body_detail: true, ..act("workflow.run", Subject::None) }
        }
        "/api/v1/workflow-instances/{id}/stop" if post => act("workflow.instance.stop", Subject::None),
        "/api/v1/workflow-instances/{id}/rerun-failed" if post => {
            act("workflow.instance.rerun_failed", Subject::None)
        }
        "/api/v1/workflow-instances/{id}/rerun" if post => act("workflow.instance.rerun", Subject::None),
        // The output given is what the node is taken to have produced.
        "/api/v1/workflow-instances/{id}/nodes/{name}/done" if post => {
            Action { body_detail: true, ..act("workflow.instance.mark_done", Subject::None) }
        }
        // The comment is the decision's reason.
        "/api/v1/workflow-instances/{id}/nodes/{name}/approve" if post => {
            Action { body_detail: true, ..act("workflow.instance.approve", Subject::None) }
        }
        "/api/v1/workflow-instances/{id}/nodes/{name}/reject" if post => {
            Action { body_detail: true, ..act("workflow.instance.reject", Subject::None) }
        }
        // The request (target, range, parallelism) is what was asked to run.
        "/api/v1/backfills" if post => Action { body_detail: true, ..act("backfill.create", Subject::None) },
        "/api/v1/backfills/{id}/cancel" if post => act("backfill.cancel", Subject::None),
        "/api/v1/alarm-channels" if post => {
            Action { creates: true, ..act("alarm_channel.create", Subject::AlarmChannel) }
        }
        "/api/v1/alarm-channels/{id}" if put => act("alarm_channel.update", Subject::AlarmChannel),
        "/api/v1/alarm-channels/{id}" if delete => act("alarm_channel.delete", Subject::AlarmChannel),
        "/api/v1/alarm-channels/{id}/test" if post => act("alarm_channel.test", Subject::None),
        "/api/v1/logs/clear" if post => Action { body_detail: true, ..act("log.clear", Subject::None) },
        "/api/v1/logs/{id}/kill" if post => act("log.kill", Subject::None),
        // The version asked for is the replay's meaning; it carries no secret.
        "/api/v1/logs/{id}/replay" if post => {
            Action { body_detail: true, ..act("log.replay", Subject::None) }
        }
        // The note is the decision's reason; what was decided is the approval (its id).
        "/api/v1/approvals/{id}/approve" if post => {
            Action { body_detail: true, ..act("approval.approve", Subject::None) }
        }
        "/api/v1/approvals/{id}/refuse" if post => {
            Action { body_detail: true, ..act("approval.refuse", Subject::None) }
        }
        "/api/v1/jobs/{id}/wasm/what-if" if post => {
            Action { body_detail: true, ..act("wasm.what_if", Subject::None) }
        }
        _ => return None,
    })
}

/// The path's `{id}` (the segment after the route's resource name) and `{name}`.
fn path_params(route: &str, path: &str) -> (Option<i64>, Option<String>) {
    let mut id = None;
    let mut name = None;
    for (pattern, actual) in route.split('/').zip(path.split('/')) {
        match pattern {
            "{id}" => id = actual.parse().ok(),
            "{name}" => name = Some(actual.to_owned()),
            _ => {}
        }
    }
    (id, name)
}

/// The middleware: records every successful write of the management API.
pub(crate) async fn record(State(state): State<Arc<MgmtState>>, request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let Some(action) = route.as_deref().and_then(|route| action(request.method(), route)) else {
        return next.run(request).await;
    };
    // A dry run changes nothing (a job's `?dryRun=true`).
    if request.uri().query().is_some_and(|q| q.split('&').any(|p| p == "dryRun=true" || p == "dryRun=1")) {
        return next.run(request).await;
    }
    let route = route.unwrap_or_default();
    let (id, name) = path_params(&route, request.uri().path());
    let client = match request.extensions().get::<super::auth::AgentToken>() {
        // A call an MCP tool made in-process: the client is the agent's token.
        Some(token) if token.client.is_empty() => format!("MCP token {:?}", token.name),
        Some(token) => format!("MCP token {:?} from {}", token.name, token.client),
        None => request.extensions().get::<ConnectInfo<SocketAddr>>().map_or_else(String::new, |peer| {
            state.trusted_proxies.client(peer.0.ip(), request.headers()).to_string()
        }),
    };
    let (mut request, body) = if action.body_detail {
        let (parts, body) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_JSON_BYTES).await else {
            let limit = MAX_JSON_BYTES / (1024 * 1024);
            return ApiError::PayloadTooLarge(format!(
                "the request body is over the {limit} MiB limit of JSON requests"
            ))
            .into_response();
        };
        (Request::from_parts(parts, Body::from(bytes.clone())), Some(bytes))
    } else {
        (request, None)
    };
    let slot = AuditSlot::default();
    request.extensions_mut().insert(slot.clone());

    let before = match id {
        Some(id) if !action.creates => snapshot(&state, action.subject, id).await,
        _ => None,
    };
    let response = next.run(request).await;
    let succeeded = response.status().is_success();
    let mut folded = None;
    if action.name == "session.login" && !succeeded && response.status() != StatusCode::UNAUTHORIZED {
        // Throttled (429) and malformed (400) logins cost the caller nothing: one row per
        // client and window, not one per request (review M2). Wrong passwords (401) are
        // bounded by the throttle and recorded each.
        match state.refused_logins.admit(&client, state.clock.instant()) {
            None => return response,
            Some(previous) => folded = Some(previous),
        }
    }
    let (response, target_id) =
        if action.creates && succeeded { created_id(response).await } else { (response, id) };
    let login = action.name == "session.login";
    if !succeeded && !login {
        return response;
    }
    let after = match target_id {
        Some(id) if succeeded => snapshot(&state, action.subject, id).await,
        _ => None,
    };
    let detail = detail(&action, body.as_ref(), name.as_deref());
    let (user_id, username, action_name) = match slot.get() {
        Some((user_id, username)) => (Some(user_id), username, action.name.to_owned()),
        None if login => {
            let username =
                detail.as_ref().and_then(|d| d["username"].as_str()).unwrap_or_default().to_owned();
            let user_id = match succeeded {
                true => state.store.find_user(&username).await.ok().flatten().map(|u| u.id),
                false => None,
            };
            let name = match (succeeded, folded) {
                (true, _) => "session.login",
                (false, None) => "session.login_failed",
                (false, Some(_)) => "session.login_refused",
            };
            (user_id, username.chars().take(50).collect(), name.to_owned())
        }
        None => (None, String::new(), action.name.to_owned()),
    };
    let detail = match folded {
        Some(previous) => {
            let mut detail = detail.filter(Value::is_object).unwrap_or_else(|| json!({}));
            detail["status"] = json!(response.status().as_u16());
            detail["foldedInPreviousWindow"] = json!(previous);
            detail["note"] = json!(
                "further refused logins of this client in the next 5 minutes are counted, not recorded"
            );
            Some(detail)
        }
        None => detail,
    };
    let entry = NewAudit {
        at_ms: state.clock.now_ms(),
        user_id,
        username,
        client,
        action: action_name,
        target: target(action.subject, &route, target_id),
        detail: detail.map(|d| d.to_string()),
        before_json: before.map(|v| v.to_string()),
        after_json: after.map(|v| v.to_string()),
    };
    store_entry(&state, &entry).await;
    response
}

/// Stores one entry. The change itself is done by now; if its record cannot be written, the
/// error log says what is missing (an audit failure never turns a done change into an error).
pub(crate) async fn store_entry(state: &MgmtState, entry: &NewAudit) {
    if let Err(error) = state.store.add_audit(entry).await {
        tracing::error!(%error, action = %entry.action, target = %entry.target, "cannot record an audit entry");
    }
}

/// Records a change to job `job` made outside `/api/v1` (xxl-job 3.5's job OpenAPI, by
/// `username` = `openapi:{AppName}`, and imports): `before` as the caller read it, the job as
/// it is now.
pub(crate) async fn record_job_change(
    state: &MgmtState,
    client: String,
    username: String,
    action: &str,
    job: JobId,
    before: Option<Value>,
    detail: Option<Value>,
) {
    let change = Change { action, subject: Subject::Job, id: i64::from(job.0), before, detail };
    record_change(state, client, username, change).await;
}

/// Records a workflow an import created or changed.
pub(crate) async fn record_workflow_change(
    state: &MgmtState,
    client: String,
    username: String,
    action: &str,
    workflow: WorkflowId,
    before: Option<Value>,
) {
    let detail = Some(json!({ "import": true }));
    let change = Change { action, subject: Subject::Workflow, id: workflow.0, before, detail };
    record_change(state, client, username, change).await;
}

/// Records a calendar an import created.
pub(crate) async fn record_calendar_created(
    state: &MgmtState,
    client: String,
    username: String,
    id: CalendarId,
) {
    let detail = Some(json!({ "import": true }));
    let change =
        Change { action: "calendar.create", subject: Subject::Calendar, id: id.0, before: None, detail };
    record_change(state, client, username, change).await;
}

/// A change made by a handler called from another handler rather than through the router.
struct Change<'a> {
    action: &'a str,
    subject: Subject,
    id: i64,
    before: Option<Value>,
    detail: Option<Value>,
}

async fn record_change(state: &MgmtState, client: String, username: String, change: Change<'_>) {
    let after = snapshot(state, change.subject, change.id).await;
    let entry = NewAudit {
        at_ms: state.clock.now_ms(),
        user_id: None,
        username,
        client,
        action: change.action.to_owned(),
        target: target(change.subject, "", Some(change.id)),
        detail: change.detail.map(|d| d.to_string()),
        before_json: change.before.map(|v| v.to_string()),
        after_json: after.map(|v| v.to_string()),
    };
    store_entry(state, &entry).await;
}

/// `job 12`, `group 3`, … from the route's resource and the id.
fn target(subject: Subject, route: &str, id: Option<i64>) -> String {
    let kind = match subject {
        Subject::Job | Subject::Glue | Subject::Grant | Subject::Wasm => "job",
        Subject::Group | Subject::GroupVariables => "group",
        Subject::User => "user",
        Subject::Calendar => "calendar",
        Subject::Workflow => "workflow",
        Subject::AlarmChannel => "alarm_channel",
        Subject::None if route.starts_with("/api/v1/alarm-channels") => "alarm_channel",
        Subject::None if route.starts_with("/api/v1/workflow-instances") => "workflow_instance",
        Subject::None if route.starts_with("/api/v1/workflows") => "workflow",
        Subject::Token => "token",
        Subject::None if route.starts_with("/api/v1/jobs") => "job",
        Subject::None if route.starts_with("/api/v1/logs/{id}") => "log",
        Subject::None => return String::new(),
    };
    id.map_or_else(String::new, |id| format!("{kind} {id}"))
}

/// What the request said, where that is the change: a trigger's parameter and addresses, a
/// clear's filter, the user name of a login (never its password), a secret's name.
fn detail(action: &Action, body: Option<&Bytes>, name: Option<&str>) -> Option<Value> {
    if let Some(name) = name {
        // A node marked done, approved or rejected: which node, and the output it is taken to
        // have produced or the decision's comment. Other named routes (secrets among them)
        // record the name alone.
        if matches!(
            action.name,
            "workflow.instance.mark_done" | "workflow.instance.approve" | "workflow.instance.reject"
        ) && let Some(Value::Object(mut body)) = body.and_then(|b| serde_json::from_slice(b).ok())
        {
            body.insert("name".to_owned(), json!(name));
            return Some(Value::Object(body));
        }
        return Some(json!({ "name": name }));
    }
    let body: Value = serde_json::from_slice(body?).ok()?;
    match action.name {
        // The LDAP provider a login went through, if any (docs/sso.md).
        "session.login" if body["provider"].is_string() => {
            Some(json!({ "username": body["username"], "provider": body["provider"] }))
        }
        "session.login" => Some(json!({ "username": body["username"] })),
        _ => Some(body),
    }
}

/// The created resource's id from the answer (`{"id": …}`), and the answer rebuilt.
async fn created_id(response: Response) -> (Response, Option<i64>) {
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_JSON_BYTES).await else {
        return (Response::from_parts(parts, Body::empty()), None);
    };
    let id = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| v["id"].as_i64());
    (Response::from_parts(parts, Body::from(bytes)), id)
}

/// What a resource module gives the audit log: the resource as the API shows it, so a
/// snapshot holds only what a reader of the API may see.
#[async_trait::async_trait]
pub(crate) trait AuditSnapshot: Send + Sync {
    /// The resource with id `id`; `None` if it does not exist.
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<Value>, ApiError>;
}

/// Which module reads which [`Subject`]; built once by the router.
pub(crate) struct Snapshots(Vec<(Subject, &'static dyn AuditSnapshot)>);

impl Snapshots {
    pub(crate) fn new(readers: Vec<(Subject, &'static dyn AuditSnapshot)>) -> Self {
        Self(readers)
    }

    fn reader(&self, subject: Subject) -> Option<&'static dyn AuditSnapshot> {
        self.0.iter().find(|(s, _)| *s == subject).map(|(_, reader)| *reader)
    }
}

/// A resource's id as the `i32` of upstream's tables; `None` when it cannot be one.
pub(crate) fn small_id(id: i64) -> Option<i32> {
    i32::try_from(id).ok()
}

/// A view as JSON for a snapshot.
pub(crate) fn to_json(view: impl serde::Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(view).map_err(|e| ApiError::Internal(e.into()))
}

/// The resource as the API shows it, without history lists; `None` if it does not exist or
/// nothing reads `subject`.
async fn snapshot(state: &MgmtState, subject: Subject, id: i64) -> Option<Value> {
    let reader = state.audit_snapshots.reader(subject)?;
    match reader.read(state, id).await {
        Ok(value) => value.map(|mut v| {
            if let Some(object) = v.as_object_mut() {
                object.remove("history");
            }
            v
        }),
        Err(error) => {
            tracing::warn!(%error, ?subject, id, "audit: cannot read the resource");
            None
        }
    }
}
