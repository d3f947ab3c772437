//! The admin's HTTP edge through real HTTP: `app::run` on a free port over a temporary SQLite
//! database (PostgreSQL/MySQL when their URLs are set), with a recording [`AdminCore`] or the
//! store-only core, plus the `jobwheel-admin` binary and a real `jobwheel-executor`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use async_trait::async_trait;
use jobwheel_admin::app;
use jobwheel_admin::config::AdminConfig;
use jobwheel_admin::engine::EngineError;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER, HandleCallbackParam};
use jobwheel_admin::store::Store;
use serde_json::Value;
use tokio::sync::oneshot;

mod api;
mod binary;
mod config;
mod demo;
mod dial_out;
mod engine;
mod executor;
mod executor_activity;
mod first_start;
mod gen_c;
mod gen_c_executor;
pub(crate) mod health;
mod interop;
mod log_ship;
mod mgmt;
mod servers;
mod shutdown;
mod store_only_core;
mod token_matrix;
mod ui;
mod wasm;

/// The token of admins started with [`test_config`].
pub(crate) const TOKEN: &str = "test-token-0123456789";

/// How long any expected event may take before a test fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// What a [`RecordingCore`] was asked to do.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recorded {
    pub(crate) callback_batches: Vec<Vec<HandleCallbackParam>>,
    pub(crate) refreshes: Vec<String>,
}

/// An [`AdminCore`] that records its calls.
#[derive(Default)]
pub(crate) struct RecordingCore {
    recorded: Mutex<Recorded>,
}

impl RecordingCore {
    pub(crate) fn recorded(&self) -> Recorded {
        self.recorded.lock().expect("recorded").clone()
    }

    fn update(&self, f: impl FnOnce(&mut Recorded)) {
        f(&mut self.recorded.lock().expect("recorded"));
    }
}

#[async_trait]
impl AdminCore for RecordingCore {
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
        self.update(|r| r.callback_batches.push(items));
        Ok(())
    }

    async fn refresh_group(&self, app_name: &str) {
        self.update(|r| r.refreshes.push(app_name.to_owned()));
    }
}

/// A configuration on `database_url` with [`TOKEN`], a fixed secret key (so nothing is written
/// to a default data directory) and a short shutdown grace.
pub(crate) fn test_config(database_url: &str) -> AdminConfig {
    let mut config = AdminConfig::new(database_url, Some(TOKEN.to_owned()));
    config.secret_key = Some("6a".repeat(32));
    config.shutdown_grace = Duration::from_secs(5);
    // Alarm stand-ins listen on loopback; the admin reaches only public addresses by default
    // (alarm_channels.rs tests that with an admin without this).
    config.alarm_allow_private =
        jobwheel_admin::alarm::AlarmNetworks::parse("127.0.0.0/8").expect("networks");
    config
}

/// A running admin.
pub(crate) struct Admin {
    pub(crate) base: String,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Admin {
    /// Starts `app::run` with `core` on a free port and waits until it has connected its store.
    pub(crate) async fn start(config: AdminConfig, core: Arc<dyn AdminCore>) -> anyhow::Result<Self> {
        Self::start_with(config, move |_| core).await
    }

    /// Like [`start`](Self::start), with the core built from the admin's own store.
    pub(crate) async fn start_with(
        config: AdminConfig,
        make_core: impl FnOnce(Arc<dyn Store>) -> Arc<dyn AdminCore> + Send + 'static,
    ) -> anyhow::Result<Self> {
        Self::start_core(config, move |context: app::CoreContext| Ok(make_core(context.store))).await
    }

    /// The admin as `jobwheel-admin` runs it: edge plus scheduling engine.
    pub(crate) async fn start_engine(config: AdminConfig) -> anyhow::Result<Self> {
        let engine_config = config.clone();
        Self::start_core(config, move |context| {
            jobwheel_admin::engine_core::EngineCore::start(context, &engine_config)
                .map(|core| core as Arc<dyn AdminCore>)
        })
        .await
    }

    /// Like [`start`](Self::start), with the core built the way `jobwheel-admin` builds it.
    pub(crate) async fn start_core(
        config: AdminConfig,
        make_core: impl FnOnce(app::CoreContext) -> anyhow::Result<Arc<dyn AdminCore>> + Send + 'static,
    ) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let (store_tx, store_rx) = oneshot::channel();
        let make_core = move |context: app::CoreContext| {
            let _ = store_tx.send(Arc::clone(&context.store));
            make_core(context)
        };
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let task = tokio::spawn(app::run(config, make_core, listener, shutdown));
        // The factory is called with the store once the database is open; if it is dropped
        // instead, `run` failed before that and its result says why.
        let Ok(store) = store_rx.await else {
            return Err(match task.await {
                Ok(Ok(())) => anyhow::anyhow!("run() returned before building its core"),
                Ok(Err(e)) => e,
                Err(e) => anyhow::anyhow!("run() panicked: {e}"),
            });
        };
        Ok(Self { base, store, http: reqwest::Client::new(), stop: Some(stop), task })
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs `body` to the executor API (`/api/{uri}`) with the given token and AppName
    /// headers, as an executor would; the JSON reply.
    pub(crate) async fn executor_call(
        &self,
        uri: &str,
        body: &Value,
        token: Option<&str>,
        app: Option<&str>,
    ) -> Value {
        let mut request = self.http.post(self.url(&format!("/api/{uri}"))).json(body);
        if let Some(token) = token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        if let Some(app) = app {
            request = request.header(APPNAME_HEADER, app);
        }
        request.send().await.expect("admin answers").json().await.expect("JSON")
    }

    /// POSTs `body` and returns the HTTP status and the JSON reply.
    pub(crate) async fn post(&self, path: &str, body: &str, token: Option<&str>) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, body, token).await
    }

    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: &str,
        token: Option<&str>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, self.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(token) = token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        let response = request.send().await.expect("admin answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("reply body");
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("reply {text:?} is not JSON: {e}"));
        (status, json)
    }

    /// Shuts the admin down and returns what `run` returned.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.context("run() panicked")?
    }
}

/// A temporary SQLite database URL inside `dir`.
pub(crate) fn sqlite_url(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("db").join("jobwheel.db").display())
}

/// Polls `check` until it yields a value (for state only visible in the database).
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Upstream's success reply, exactly.
pub(crate) fn success() -> Value {
    serde_json::json!({"code": 200, "msg": null, "content": null})
}

/// Upstream's failure reply with `msg`, exactly.
pub(crate) fn fail(msg: &str) -> Value {
    serde_json::json!({"code": 500, "msg": msg, "content": null})
}
