//! An xxl-job 3.5 (Gen C) executor written from upstream's `EmbedServer.dispatchRequest` and
//! `ExecutorBizImpl` (3.5.0-SNAPSHOT): POST only, `XXL-JOB-ACCESS-TOKEN` and `XXL-JOB-APPNAME`
//! equal to its own or refused with 3.5's words, `/trigger` answered at once with the result as
//! a `{"callbackList": …}` callback, `/log` answered with a `data` `LogData`, `/kill` by job id.
//! It registers the way 3.5 does, with its group's token and AppName.
//!
//! Handlers by name: `genSleep` runs until `/kill` names its job (then calls back 500); any
//! other succeeds at once with the message `gen-c ran <param>`, which `/log` also answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use serde_json::{Value, json};

/// What the executor was asked.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) token: Option<String>,
    pub(crate) appname: Option<String>,
}

#[derive(Default)]
struct Memory {
    seen: Vec<Seen>,
    /// Each run's log, by log id.
    logs: HashMap<i64, String>,
    /// Runs of `genSleep` waiting for a kill: job id → (log id, log date time).
    held: HashMap<i64, (i64, i64)>,
}

#[derive(Clone)]
struct GenC {
    admin: String,
    app: String,
    token: String,
    memory: Arc<Mutex<Memory>>,
    http: reqwest::Client,
}

impl GenC {
    async fn admin_call(&self, uri: &str, body: Value) -> Value {
        let response = self
            .http
            .post(format!("{}/api/{uri}", self.admin))
            .header(ACCESS_TOKEN_HEADER, &self.token)
            .header(APPNAME_HEADER, &self.app)
            .json(&body)
            .send()
            .await
            .expect("admin answers");
        response.json().await.expect("JSON reply")
    }

    /// Reports a run's result in the background, as 3.5's callback thread does.
    fn call_back(&self, log_id: i64, log_date_time: i64, code: i32, msg: String) {
        let callback = json!({"callbackList": [{
            "logId": log_id, "logDateTime": log_date_time, "handleCode": code, "handleMsg": msg,
        }]});
        let caller = self.clone();
        tokio::spawn(async move {
            let reply = caller.admin_call("callback", callback).await;
            assert_eq!(reply["code"], 200, "callback refused: {reply}");
        });
    }
}

async fn dispatch(State(me): State<GenC>, uri: Uri, headers: HeaderMap, body: Bytes) -> axum::Json<Value> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let seen = Seen {
        path: uri.path().to_owned(),
        token: header(ACCESS_TOKEN_HEADER),
        appname: header(APPNAME_HEADER),
    };
    me.memory.lock().expect("memory").seen.push(seen.clone());
    match (seen.token.as_deref(), seen.appname.as_deref()) {
        (Some(token), Some(app)) if token == me.token && app == me.app => {}
        (None, _) | (_, None) => {
            return axum::Json(
                json!({"code": 500, "msg": "invalid request, accessToken or appname is empty."}),
            );
        }
        _ => {
            return axum::Json(
                json!({"code": 500, "msg": "invalid request, accessToken or appname invalid."}),
            );
        }
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let success = json!({"code": 200, "msg": "Success"});
    match uri.path() {
        "/beat" | "/idleBeat" => axum::Json(success),
        "/trigger" => {
            let (log_id, at) =
                (request["logId"].as_i64().unwrap_or(0), request["logDateTime"].as_i64().unwrap_or(0));
            let param = request["executorParams"].as_str().unwrap_or_default();
            let message = format!("gen-c ran {param}");
            let mut memory = me.memory.lock().expect("memory");
            memory.logs.insert(log_id, message.clone());
            if request["executorHandler"] == "genSleep" {
                memory.held.insert(request["jobId"].as_i64().unwrap_or(0), (log_id, at));
            } else {
                me.call_back(log_id, at, 200, message);
            }
            axum::Json(success)
        }
        "/kill" => {
            let job = request["jobId"].as_i64().unwrap_or(0);
            if let Some((log_id, at)) = me.memory.lock().expect("memory").held.remove(&job) {
                me.call_back(log_id, at, 500, "job killed".to_owned());
            }
            axum::Json(success)
        }
        "/log" => {
            let log_id = request["logId"].as_i64().unwrap_or(0);
            let memory = me.memory.lock().expect("memory");
            let content = memory.logs.get(&log_id).cloned();
            let data = match content {
                Some(line) => {
                    json!({"fromLineNum": 1, "toLineNum": 1, "logContent": format!("{line}\n"), "isEnd": true})
                }
                None => {
                    json!({"fromLineNum": 1, "toLineNum": 0, "logContent": "readLog fail, logFile not exists", "isEnd": true})
                }
            };
            axum::Json(json!({"code": 200, "msg": null, "data": data}))
        }
        other => axum::Json(
            json!({"code": 500, "msg": format!("invalid request, uri-mapping({other}) not found.")}),
        ),
    }
}

/// A running Gen C executor; stops serving when dropped.
pub(crate) struct GenCExecutor {
    /// Its registered address, `http://127.0.0.1:port/`.
    pub(crate) address: String,
    state: GenC,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl GenCExecutor {
    /// Serves on a free port and registers with the admin at `admin` (base URL) as `app`
    /// with `token`; the admin's answer to the registration.
    pub(crate) async fn start(admin: &str, app: &str, token: &str) -> (Self, Value) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = format!("http://{}/", listener.local_addr().expect("address"));
        let state = GenC {
            admin: admin.to_owned(),
            app: app.to_owned(),
            token: token.to_owned(),
            memory: Arc::default(),
            http: reqwest::Client::new(),
        };
        let router = Router::new().fallback(dispatch).with_state(state.clone());
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        let executor = Self { address, state, server };
        let registered = executor.register().await;
        (executor, registered)
    }

    /// Registers (again), as its 30 s heartbeat does; the admin's answer.
    pub(crate) async fn register(&self) -> Value {
        let registry = json!({"registryGroup": "EXECUTOR", "registryKey": self.state.app, "registryValue": self.address});
        self.state.admin_call("registry", registry).await
    }

    /// Everything it was asked, oldest first.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.state.memory.lock().expect("memory").seen.clone()
    }
}

impl Drop for GenCExecutor {
    fn drop(&mut self) {
        self.server.abort();
    }
}
