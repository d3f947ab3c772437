//! The data the authorization matrix runs against: an admin with its engine, a real in-process
//! executor behind two executor groups ("own", which user `alice` was given, and "other"),
//! users `root` (administrator), `alice` and `bob`, and a fresh target — job, log, group, user
//! or token, plus a valid body — for every request, so an allowed delete or clear never takes
//! a later request's data away and an answer is never a 400 hiding a missing check.

use std::sync::atomic::{AtomicU32, Ordering};

use chrono::Utc;
use jobwheel_admin::store::{
    ApprovalKind, ChannelSwitch, Group, GroupId, JobId, LogId, LogTriggerUpdate, NewApiToken, NewApproval,
    NewCalendar, NewChannel, NewLog, NewWasmVersion, UserId, VariableOwner,
};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::sync::oneshot;

use super::matrix::Row;
use super::{Env, PASSWORD};
use crate::http::TOKEN;
use crate::http::executor::job;

/// Whose data a request is aimed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Alice's group (her own token).
    Own,
    /// A group Alice was not given (Bob's token).
    Other,
}

/// A request body.
pub(crate) enum Body {
    None,
    Json(Value),
    Wasm(Vec<u8>),
    Calendar(&'static str),
}

impl Body {
    pub(crate) fn attach(self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self {
            Body::None => request,
            Body::Json(value) => request.json(&value),
            Body::Wasm(bytes) => request.header("content-type", "application/wasm").body(bytes),
            Body::Calendar(text) => request.header("content-type", "text/calendar").body(text),
        }
    }
}

/// Where a request goes and what it sends.
pub(crate) struct Target {
    pub(crate) path: String,
    pub(crate) body: Body,
}

pub(crate) struct World {
    pub(crate) env: Env,
    pub(crate) alice_token: String,
    own: GroupId,
    other: GroupId,
    alice: UserId,
    bob: UserId,
    executor_address: String,
    stop_executor: oneshot::Sender<()>,
    executor: tokio::task::JoinHandle<anyhow::Result<()>>,
    _executor_dir: tempfile::TempDir,
    counter: AtomicU32,
}

/// The name of the secret `{name}` stands for.
pub(super) const MATRIX_SECRET: &str = "MATRIX_SECRET";
/// An `.ics` file with one all-day event.
const MATRIX_ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//matrix//EN\r\nBEGIN:VEVENT\r\nUID:m\r\n\
    SUMMARY:Matrix\r\nDTSTART;VALUE=DATE:20310101\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// The smallest module the upload check accepts: a WASI command.
fn module() -> Vec<u8> {
    wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "_start")))"#).expect("module")
}

impl World {
    pub(crate) async fn start() -> anyhow::Result<World> {
        let env = Env::start().await?;
        let dir = tempfile::tempdir()?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let executor_address = format!("http://{}/", listener.local_addr()?);
        let mut config = ExecutorConfig::new("matrix", dir.path().join("logs"), Some(TOKEN.to_owned()));
        config.admin_addresses = vec![env.admin.base.clone()];
        let mut handlers = Handlers::new();
        handlers.register("matrixNoop", |_ctx: JobContext| async move { Ok(()) });
        let (stop_executor, stopped) = oneshot::channel::<()>();
        let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
            let _ = stopped.await;
        }));
        let mut world = World {
            own: GroupId(0),
            other: GroupId(0),
            alice: UserId(0),
            bob: UserId(0),
            alice_token: String::new(),
            executor_address,
            stop_executor,
            executor,
            _executor_dir: dir,
            counter: AtomicU32::new(0),
            env,
        };
        world.own = world.group().await;
        world.other = world.group().await;
        world.env.admin_user("root").await;
        world.alice = world.env.normal_user("alice", &[world.own]).await;
        world.bob = world.env.normal_user("bob", &[world.other]).await;
        world.alice_token = world.token(world.alice).await.1;
        Ok(world)
    }

    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop_executor.send(());
        self.executor.await??;
        self.env.admin.stop().await
    }

    pub(super) fn unique(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    pub(super) fn group_of(&self, side: Side) -> GroupId {
        match side {
            Side::Own => self.own,
            Side::Other => self.other,
        }
    }

    /// A new group whose only (manual) address is the in-process executor.
    async fn group(&self) -> GroupId {
        let app_name = self.unique("matrix-app-");
        let group = Group {
            title: app_name.clone(),
            app_name,
            address_type: 1,
            address_list: Some(self.executor_address.clone()),
            update_time: None,
        };
        self.env.store().add_group(&group).await.expect("group")
    }

    /// A new stopped CRON job in `group` of the given glue type, run by the executor's no-op.
    pub(super) async fn job(&self, group: GroupId, glue_type: &str) -> JobId {
        let mut job = job(group);
        job.schedule_type = "CRON".into();
        job.schedule_conf = Some("0 0 3 * * ?".to_owned());
        job.executor_handler = (glue_type == "BEAN").then(|| "matrixNoop".to_owned());
        job.glue_type = glue_type.into();
        job.glue_source = (glue_type == "GLUE_SHELL").then(|| "echo matrix".to_owned());
        self.env.store().add_job(&job).await.expect("job")
    }

    /// A running log of a new job in `group`, on the in-process executor.
    async fn log(&self, group: GroupId) -> LogId {
        let job_id = self.job(group, "BEAN").await;
        let store = self.env.store();
        let now = Utc::now();
        let id =
            store.insert_log(&NewLog { job_group: group, job_id, trigger_time: now }).await.expect("log");
        let update = LogTriggerUpdate {
            log_id: id,
            trigger_time: now,
            trigger_code: 200,
            trigger_msg: Some("matrix".to_owned()),
            executor_address: Some(self.executor_address.clone()),
            executor_handler: Some("matrixNoop".to_owned()),
            executor_param: None,
            executor_sharding_param: None,
            executor_fail_retry_count: 0,
        };
        store.update_log_trigger(&update).await.expect("trigger info");
        id
    }

    /// A new API token of `user`: its id and secret.
    async fn token(&self, user: UserId) -> (i64, String) {
        let secret = self.unique("matrix-token-secret-");
        let token = NewApiToken {
            user_id: user,
            name: "matrix".to_owned(),
            token_hash: hex::encode(Sha256::digest(secret.as_bytes())),
            created_ms: Utc::now().timestamp_millis(),
            scope: "write".to_owned(),
            expires_ms: None,
        };
        (self.env.store().add_api_token(&token).await.expect("token"), secret)
    }

    /// A GLUE_WASM job in `group` with one stored version: the job and the version.
    async fn wasm_job(&self, group: GroupId) -> (JobId, i64) {
        let job_id = self.job(group, "GLUE_WASM").await;
        let bytes = module();
        let now_ms = Utc::now().timestamp_millis();
        let store = self.env.store();
        store.put_wasm_module(&bytes, now_ms).await.expect("module");
        let version = NewWasmVersion {
            job_id,
            digest: hex::encode(Sha256::digest(&bytes)),
            uploader: Some("root".to_owned()),
            remark: None,
            created_at_ms: now_ms,
            candidate: false,
        };
        (job_id, store.add_wasm_version(&version).await.expect("version"))
    }

    /// The request for `row` aimed at `side`'s data, with fresh data where the row needs some.
    pub(crate) async fn target(&self, row: &Row, side: Side) -> Target {
        let group = self.group_of(side).0;
        let path = row.path.as_str();
        let mut body = Body::None;
        let path = match (row.method.as_str(), path) {
            ("POST", "/api/v1/session") => {
                body = Body::Json(json!({"username": "alice", "password": PASSWORD}));
                path.to_owned()
            }
            ("PUT", "/api/v1/session/password") => {
                body = Body::Json(json!({"oldPassword": PASSWORD, "password": PASSWORD}));
                path.to_owned()
            }
            ("GET", "/api/v1/schedule/next") => {
                format!("{path}?scheduleType=CRON&scheduleConf=0%200%203%20*%20*%20%3F")
            }
            ("POST", "/api/v1/wasm/validate") => {
                body = Body::Wasm(module());
                path.to_owned()
            }
            (
                "GET",
                "/api/v1/jobs"
                | "/api/v1/logs"
                | "/api/v1/jobs/tags"
                | "/api/v1/jobs/export"
                | "/api/v1/workflows",
            ) => {
                format!("{path}?jobGroup={group}")
            }
            ("POST", "/api/v1/calendars") => {
                body = Body::Json(json!({"name": self.unique("cal-"), "dates": ["2031-01-01"]}));
                path.to_owned()
            }
            ("POST", "/api/v1/alarm-channels") => {
                body = Body::Json(
                    json!({"name": self.unique("alarm-"), "kind": "email", "recipients": ["ops@example.com"]}),
                );
                path.to_owned()
            }
            ("POST", "/api/v1/calendars/import") => {
                body = Body::Calendar(MATRIX_ICS);
                format!("{path}?name={}", self.unique("ics-"))
            }
            ("POST", "/api/v1/jobs/import") => {
                body = Body::Json(json!({"format": "jobwheel-jobs", "version": 1, "jobs": []}));
                path.to_owned()
            }
            ("GET", "/api/v1/backfills") => {
                format!("{path}?jobId={}", self.job(self.group_of(side), "BEAN").await.0)
            }
            ("POST", "/api/v1/backfills") => {
                body = Body::Json(self.backfill_form(self.group_of(side)).await);
                path.to_owned()
            }
            ("POST", "/api/v1/workflows") => {
                body = Body::Json(self.workflow_form(self.group_of(side)).await);
                path.to_owned()
            }
            ("POST", "/api/v1/jobs") => {
                body = Body::Json(super::jobs::form(group));
                path.to_owned()
            }
            ("POST", "/api/v1/logs/clear") => {
                body = Body::Json(json!({"jobGroup": group, "type": 9}));
                path.to_owned()
            }
            ("POST", "/api/v1/groups") => {
                body = Body::Json(
                    json!({"appname": self.unique("new-app-"), "title": "matrix", "addressType": 0}),
                );
                path.to_owned()
            }
            ("POST", "/api/v1/users") => {
                body = Body::Json(
                    json!({"username": self.unique("user"), "password": PASSWORD, "role": 0, "permission": []}),
                );
                path.to_owned()
            }
            ("POST", "/api/v1/tokens") => {
                body = Body::Json(json!({"name": "matrix"}));
                path.to_owned()
            }
            (method, templated) if templated.contains("{id}") => {
                let (id, with) = self.resource(method, templated, side).await;
                body = with;
                let filled = templated.replace("{id}", &id.to_string()).replace("{name}", MATRIX_SECRET);
                match templated {
                    "/api/v1/logs/{id}/content" => format!("{filled}?fromLine=1"),
                    "/api/v1/jobs/{id}/log-search" => format!("{filled}?text=line"),
                    _ => filled,
                }
            }
            _ => path.to_owned(),
        };
        Target { path, body }
    }

    /// A secret write's body; a delete needs the secret to exist first.
    async fn secret_body(&self, method: &str, owner: VariableOwner) -> Body {
        if method == "DELETE" {
            // The store holds sealed text; a delete never opens it.
            self.env.store().put_variable(owner, MATRIX_SECRET, true, "00", 0).await.expect("secret");
            return Body::None;
        }
        Body::Json(json!({"value": "matrix-secret-value"}))
    }

    /// The id for a `{id}` path and the body its method needs.
    async fn resource(&self, method: &str, path: &str, side: Side) -> (i64, Body) {
        if let Some(found) = self.workflow_resource(method, path, side).await {
            return found;
        }
        let group = self.group_of(side);
        let json_if = |wanted: bool, value: Value| if wanted { Body::Json(value) } else { Body::None };
        match path {
            "/api/v1/jobs/{id}/glue" => {
                let id = self.job(group, "GLUE_SHELL").await;
                (
                    id.0.into(),
                    json_if(
                        method == "PUT",
                        json!({"glueSource": "echo edited", "glueRemark": "matrix edit"}),
                    ),
                )
            }
            "/api/v1/jobs/{id}/wasm" => {
                let (id, _) = self.wasm_job(group).await;
                (id.0.into(), if method == "POST" { Body::Wasm(module()) } else { Body::None })
            }
            "/api/v1/jobs/{id}/wasm/rollback" => {
                let (id, version) = self.wasm_job(group).await;
                (id.0.into(), Body::Json(json!({"versionId": version})))
            }
            "/api/v1/jobs/{id}/wasm/what-if" => {
                let (id, version) = self.wasm_job(group).await;
                (id.0.into(), Body::Json(json!({"version": version, "runs": 3})))
            }
            "/api/v1/jobs/{id}/secrets/{name}" => {
                let id = self.job(group, "BEAN").await;
                (id.0.into(), self.secret_body(method, VariableOwner::Job(id)).await)
            }
            "/api/v1/groups/{id}/executors" => {
                let id = if side == Side::Own { self.own } else { self.group().await };
                (id.0.into(), Body::None)
            }
            "/api/v1/groups/{id}/access-token" => {
                let id = if side == Side::Own { self.own } else { self.group().await };
                (id.0.into(), json_if(method == "PUT", json!({})))
            }
            "/api/v1/groups/{id}/secrets/{name}" | "/api/v1/groups/{id}/variables" => {
                let id = if side == Side::Own { self.own } else { self.group().await };
                let body = if path.ends_with("/variables") {
                    json_if(method == "PUT", json!({"variables": {"MATRIX": "1"}}))
                } else {
                    self.secret_body(method, VariableOwner::Group(id)).await
                };
                (id.0.into(), body)
            }
            "/api/v1/jobs/{id}" => {
                let id = self.job(group, "BEAN").await;
                (id.0.into(), json_if(method == "PUT", super::jobs::form(group.0)))
            }
            p if p.starts_with("/api/v1/jobs/{id}/") => {
                (self.job(group, "BEAN").await.0.into(), Body::Json(json!({})))
            }
            // A held grant change of a job of the group (one that asks for nothing new, so an
            // administrator's approval applies).
            p if p.starts_with("/api/v1/approvals/{id}") => {
                let new = NewApproval {
                    job_id: self.job(group, "BEAN").await,
                    kind: ApprovalKind::Grant,
                    version_id: None,
                    digest: None,
                    grant_body: Some("{}".to_owned()),
                    widening: "[]".to_owned(),
                    requested_by: "alice".to_owned(),
                    requested_ms: Utc::now().timestamp_millis(),
                };
                let id = self.env.store().add_approval(&new).await.expect("approval");
                (id, json_if(method == "POST", json!({"note": "matrix"})))
            }
            p if p.starts_with("/api/v1/logs/{id}") => (self.log(group).await.0, Body::None),
            "/api/v1/groups/{id}" => {
                // Alice's own group stays; everything aimed elsewhere gets a group of its own.
                let id = if side == Side::Own { self.own } else { self.group().await };
                let body = json!({"appname": self.unique("renamed-app-"), "title": "renamed", "addressType": 1,
                                  "addressList": self.executor_address.trim_end_matches('/')});
                (id.0.into(), json_if(method == "PUT", body))
            }
            "/api/v1/users/{id}" => {
                let name = self.unique("target");
                let id = self.env.normal_user(&name, &[]).await;
                let body = json!({"username": name, "password": "", "role": 0, "permission": []});
                (id.0.into(), json_if(method == "PUT", body))
            }
            "/api/v1/calendars/{id}" => {
                let name = self.unique("cal-");
                let calendar = NewCalendar {
                    name: name.clone(),
                    description: String::new(),
                    days: r#"{"dates":["2031-01-01"]}"#.to_owned(),
                    update_ms: 0,
                };
                let id = self.env.store().add_calendar(&calendar).await.expect("calendar");
                (id.0, json_if(method == "PUT", json!({"name": name, "dates": ["2031-01-02"]})))
            }
            p if p.starts_with("/api/v1/alarm-channels/{id}") => {
                let name = self.unique("alarm-");
                let channel = NewChannel {
                    name: name.clone(),
                    kind: "email".to_owned(),
                    config: "{}".to_owned(),
                    sealed: String::new(),
                    events: "FAILED".to_owned(),
                    fold_secs: 0,
                    enabled: ChannelSwitch::On,
                    update_ms: 0,
                };
                let id = self.env.store().add_channel(&channel).await.expect("channel").expect("new name");
                (id.0, json_if(method == "PUT", json!({"name": name, "kind": "email"})))
            }
            "/api/v1/tokens/{id}" => {
                let owner = if side == Side::Own { self.alice } else { self.bob };
                (self.token(owner).await.0, Body::None)
            }
            other => panic!("the matrix world has no data for {method} {other}"),
        }
    }
}
