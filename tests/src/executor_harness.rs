//! An executor running in-process on a free loopback port, driven through its real HTTP API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jobwheel_executor::{ExecutorConfig, Handlers};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The access token test executors and fake admins share.
pub const TOKEN: &str = "test-token-5b1c";

pub struct TestExecutor {
    pub addr: SocketAddr,
    pub log_path: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    http: reqwest::Client,
}

/// Test defaults: token set, fast callback retries, short stop grace.
pub fn test_config(log_path: &Path) -> ExecutorConfig {
    let mut config = ExecutorConfig::new("test-app", log_path.to_path_buf(), Some(TOKEN.to_owned()));
    config.timings.callback_retry_interval = Duration::from_millis(200);
    config.timings.stop_grace = Duration::from_secs(2);
    config.shutdown_grace = Duration::from_secs(5);
    config
}

impl TestExecutor {
    /// Starts an executor logging under `log_path` with `config` (see [`test_config`]).
    pub async fn start(config: ExecutorConfig, handlers: Handlers) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind executor");
        let addr = listener.local_addr().expect("local addr");
        let (tx, rx) = oneshot::channel::<()>();
        let log_path = config.log_path.clone();
        let task = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
            let _ = rx.await;
        }));
        Self { addr, log_path, shutdown: Some(tx), task: Some(task), http: reqwest::Client::new() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// POSTs `body` as JSON with the test token and returns the reply's JSON.
    pub async fn post(&self, path: &str, body: Value) -> Value {
        self.post_raw(path, &body.to_string(), Some(TOKEN)).await
    }

    /// POSTs a raw body with an optional token; asserts HTTP 200 and returns the JSON.
    pub async fn post_raw(&self, path: &str, body: &str, token: Option<&str>) -> Value {
        let mut request = self.http.post(self.url(path)).body(body.to_owned());
        if let Some(token) = token {
            request = request.header(jobwheel_protocol::ACCESS_TOKEN_HEADER, token);
        }
        let response = request.send().await.expect("executor reachable");
        assert_eq!(response.status(), 200, "executor replies are always HTTP 200");
        response.json().await.expect("executor reply is JSON")
    }

    /// Sends `/run` and returns the reply.
    pub async fn run(&self, trigger: Value) -> Value {
        self.post("/run", trigger).await
    }

    /// Reads `/log` of a run from `from_line`.
    pub async fn log(&self, log_id: i64, log_date_time: i64, from_line: i32) -> Value {
        self.post("/log", json!({"logDateTim": log_date_time, "logId": log_id, "fromLineNum": from_line}))
            .await
    }

    /// The whole job log text of a run (via `/log`).
    pub async fn log_text(&self, log_id: i64, log_date_time: i64) -> String {
        let reply = self.log(log_id, log_date_time, 1).await;
        reply["content"]["logContent"].as_str().unwrap_or_default().to_owned()
    }

    /// Shuts down gracefully and waits for `run` to return.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.stop_in_place().await
    }

    async fn stop_in_place(&mut self) -> anyhow::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("executor task"),
            None => Ok(()),
        }
    }
}

impl Drop for TestExecutor {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// A `/run` body with upstream's 12 fields.
pub fn trigger(job_id: i32, log_id: i64, glue_type: &str, handler: &str, param: &str) -> Value {
    json!({
        "jobId": job_id,
        "executorHandler": handler,
        "executorParams": param,
        "executorBlockStrategy": "SERIAL_EXECUTION",
        "executorTimeout": 0,
        "logId": log_id,
        "logDateTime": now_ms(),
        "glueType": glue_type,
        "glueSource": "",
        "glueUpdatetime": 0,
        "broadcastIndex": 0,
        "broadcastTotal": 1,
    })
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A `GLUE_WASM` `/run` body for the module `digest`, fetched from the admin at `api/wasm/{digest}`.
pub fn wasm_trigger(job_id: i32, log_id: i64, digest: &str, param: &str) -> Value {
    let mut body = trigger(job_id, log_id, "GLUE_WASM", "", param);
    body["wasmModule"] = json!({"digest": digest, "url": format!("api/wasm/{digest}")});
    body
}
