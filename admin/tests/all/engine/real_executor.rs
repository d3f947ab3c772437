//! End to end with a real executor in-process: it registers with a tiny admin edge that
//! forwards to the store and `Engine::refresh_group`, the engine triggers a BEAN job through
//! `HttpExecutorClient`, the executor's callback comes back through `Engine::on_callbacks`, and
//! the rolling log is read through the engine.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::engine::{Engine, EngineConfig, EngineServices};
use jobwheel_admin::executor_client::HttpExecutorClient;
use jobwheel_admin::protocol::{CallbackBody, RegistryParam};
use jobwheel_admin::routing::Router;
use jobwheel_admin::store::{RegistryKey, Store};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use tokio_util::sync::CancellationToken;

use crate::engine::support::{Db, group, job, logs, wait_for};

const TOKEN: &str = "engine-e2e-token";

#[derive(Clone)]
struct Edge {
    store: Arc<dyn Store>,
    engine: Arc<Engine>,
}

async fn registry(
    State(edge): State<Edge>,
    axum::Json(p): axum::Json<RegistryParam>,
) -> axum::Json<serde_json::Value> {
    let key = RegistryKey {
        registry_group: p.registry_group,
        registry_key: p.registry_key.clone(),
        registry_value: p.registry_value,
    };
    let ok = edge.store.registry_upsert(&key, chrono::Utc::now()).await.is_ok()
        && edge.engine.registry().refresh_group(&p.registry_key).await.is_ok();
    axum::Json(serde_json::json!({"code": if ok { 200 } else { 500 }}))
}

async fn callback(
    State(edge): State<Edge>,
    axum::Json(body): axum::Json<CallbackBody>,
) -> axum::Json<serde_json::Value> {
    let ok = edge.engine.completion().on_callbacks(body.into_items()).await.is_ok();
    axum::Json(serde_json::json!({"code": if ok { 200 } else { 500 }}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bean_job_runs_on_a_real_executor_and_its_callback_completes_the_log() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let client = Arc::new(HttpExecutorClient::new(Some(TOKEN.to_owned()), Duration::from_secs(3))?);
    let engine = Engine::new(
        store.clone(),
        client,
        Router::default(),
        UpstreamAlarms::default(),
        EngineConfig::new("127.0.0.1"),
        EngineServices::new(),
    );
    let shutdown = CancellationToken::new();
    engine.start(shutdown.clone());

    // The admin edge the executor talks to.
    let edge = Edge { store: store.clone(), engine: engine.clone() };
    let app = axum::Router::new()
        .route("/api/registry", axum::routing::post(registry))
        .route(
            "/api/registryRemove",
            axum::routing::post(|| async { axum::Json(serde_json::json!({"code": 200})) }),
        )
        .route("/api/callback", axum::routing::post(callback))
        .with_state(edge);
    let admin_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let admin_url = format!("http://{}", admin_listener.local_addr()?);
    tokio::spawn(async move { axum::serve(admin_listener, app).await });

    let g = group(&*store, "e2e-app", &[]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    j.executor_handler = Some("hello".to_owned());
    let id = store.add_job(&j).await?;

    let logs_dir = tempfile::tempdir()?;
    let mut config = ExecutorConfig::new("e2e-app", logs_dir.path().to_path_buf(), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin_url];
    config.timings.registry_interval = Duration::from_millis(200);
    config.timings.callback_retry_interval = Duration::from_millis(200);
    let mut handlers = Handlers::new();
    handlers.register("hello", |ctx: JobContext| async move {
        ctx.log(format!("hello from the executor, param={}", ctx.param()));
        Ok(())
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let executor_stop = CancellationToken::new();
    let stop = executor_stop.clone();
    let executor =
        tokio::spawn(jobwheel_executor::run(
            config,
            handlers,
            listener,
            async move { stop.cancelled().await },
        ));

    // Registration makes the executor routable at once (refresh_group).
    let address = wait_for(Duration::from_secs(10), "executor registered", || {
        let store = store.clone();
        async move { Ok(store.load_group(g).await?.and_then(|g| g.group.address_list)) }
    })
    .await?;

    engine.trigger_manual(id, Some("world".to_owned()), None).await?;
    let log = wait_for(Duration::from_secs(15), "callback applied", || {
        let store = store.clone();
        async move { Ok(logs(&*store, id).await?.into_iter().find(|l| l.handle_code > 0)) }
    })
    .await?;
    assert_eq!(log.trigger_code, 200, "{:?}", log.trigger_msg);
    assert_eq!(log.handle_code, 200, "{:?}", log.handle_msg);
    assert_eq!(log.executor_address.as_deref(), Some(address.as_str()));

    let page = engine.read_log(log.id, 1).await?;
    assert!(page.log_content.contains("hello from the executor, param=world"), "{}", page.log_content);

    executor_stop.cancel();
    executor.await??;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(20), engine.stopped()).await?;
    Ok(())
}
