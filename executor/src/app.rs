//! Wires the executor together and runs it until shutdown (upstream `XxlJobExecutor.start/stop`).
//!
//! Shutdown order: deregister from the admin and stop accepting requests, let running and queued
//! jobs finish for the grace period, kill what is left (their results are still reported), then
//! drain the callback queue — delivering or spooling every result — before returning.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::Context as _;
use jobwheel_daemon::MetricsListener;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::admin_client::AdminClient;
use crate::config::ExecutorConfig;
use crate::fire_journal::FireJournal;
use crate::glue::GlueFactory;
use crate::glue::wasm::WasmGlue;
use crate::handler::Handlers;
use crate::joblog::{LogDir, LogShipper, spawn_cleaner};
use crate::jobs::{JobThreads, RunSlots, WorkerSettings};
use crate::metrics::ExecutorMetrics;
use crate::server::{ApiState, metrics_router, probe_router, router};
use crate::{callback, heartbeat};

/// Runs an executor on `listener` until `shutdown` resolves, then shuts down gracefully.
pub async fn run(
    config: ExecutorConfig,
    handlers: Handlers,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let client = AdminClient::new(
        &config.admin_addresses,
        config.access_token.clone(),
        config.app_name.clone(),
        config.admin_timeout,
    )?;
    std::fs::create_dir_all(&config.log_path)
        .with_context(|| format!("cannot create log path {}", config.log_path.display()))?;
    let shipper = if config.job_logs.ships() {
        let spool = config.log_path.join("logship");
        Some(LogShipper::new(spool, client.clone()).context("cannot create the log shipping spool")?)
    } else {
        None
    };
    let logs = match &shipper {
        Some(shipper) => {
            LogDir::shipping(config.log_path.clone(), config.job_logs.files(), Arc::clone(shipper))
        }
        None => LogDir::new(config.log_path.clone()),
    };
    let local = listener.local_addr().context("listener has no local address")?;
    // Drawn anew by every process: an admin tells a restart on the same address by it.
    let incarnation = crate::owed::incarnation();
    let address = match (&config.address, config.dial_out) {
        // An embedder may name its instance (`--dial-out` refuses `--address`).
        (Some(address), true)
            if jobwheel_protocol::dial::dial_app(address) == Some(config.app_name.as_str()) =>
        {
            address.clone()
        }
        (_, true) => jobwheel_protocol::dial::dial_address(&config.app_name, &incarnation),
        (Some(address), false) => address.clone(),
        (None, false) => default_address(local, &config.path_prefix),
    };
    if config.access_token.is_none() && !config.dial_out {
        tracing::warn!("running WITHOUT an access token: anyone who can reach {local} can run jobs");
    }

    let metrics = Arc::new(ExecutorMetrics::new());
    let metrics_listener = MetricsListener::bind(config.metrics_listen).await?;
    let background = TaskTracker::new();
    let background_stop = CancellationToken::new();
    let callback_stop = CancellationToken::new();
    // Shipping stops last: the callback task writes the runs' end lines.
    let shipping = TaskTracker::new();
    let ship_stop = CancellationToken::new();
    if let Some(shipper) = &shipper {
        shipping.spawn(Arc::clone(shipper).run(ship_stop.clone()));
    }
    let callbacks = callback::spawn(
        &background,
        client.clone(),
        logs.clone(),
        config.timings.callback_retry_interval,
        callback_stop.clone(),
    );
    spawn_cleaner(&background, logs.root().to_path_buf(), config.log_retention_days, background_stop.clone());
    let registered = client.is_configured().then(|| Arc::new(std::sync::atomic::AtomicBool::new(false)));
    // Dial-out: the sockets open to admins; no beat registers the address while none is, so no
    // admin routes a trigger to an executor no admin can reach.
    let dialled: Option<Arc<std::sync::atomic::AtomicUsize>> = config.dial_out.then(Arc::default);
    if let Some(flag) = &registered {
        background.spawn(heartbeat::run(
            client.clone(),
            heartbeat::Beat {
                app_name: config.app_name.clone(),
                address: address.clone(),
                incarnation: incarnation.clone(),
                interval: config.timings.registry_interval,
                reachable: dialled.clone(),
            },
            Arc::clone(flag),
            background_stop.clone(),
        ));
    }

    let mut wasm_config = jobwheel_wasm::RuntimeConfig::new(config.wasm.cache_dir.clone());
    wasm_config.max_memory_bytes = config.wasm.max_memory_bytes;
    if let jobwheel_wasm::Metering::Fuel { budget, .. } = &mut wasm_config.metering {
        *budget = config.wasm.max_fuel;
    }
    wasm_config.http_allow = Arc::clone(&config.wasm.http_allow);
    wasm_config.http_limits = config.wasm.http_limits;
    if let Some(slots) = config.wasm.pool_slots {
        wasm_config.allocation = jobwheel_wasm::Allocation::Pooling { slots };
    }
    let runtime = jobwheel_wasm::Runtime::new(wasm_config).context("cannot start the Wasm runtime")?;
    let wasm = WasmGlue::new(runtime, client.clone(), config.wasm.max_module_bytes, Arc::clone(&metrics));
    if config.script_glue {
        let how = crate::glue::tree::init(config.script_tree)?;
        tracing::info!(how, "script runs are kept with their whole process tree");
    }
    let glue = GlueFactory::new(handlers, config.script_glue.then(|| logs.glue_source_dir()), Arc::new(wasm));
    let glue = if config.glue_enabled { glue } else { glue.bean_only() };
    let jobs = JobThreads::new(
        glue,
        WorkerSettings {
            fires: Arc::new(
                FireJournal::open(&logs.callback_spool_dir(), crate::fire_journal::now_ms())
                    .context("cannot open the fire journal")?,
            ),
            logs: logs.clone(),
            callbacks,
            idle_timeout: config.timings.idle_timeout,
            stop_grace: config.timings.stop_grace,
            max_log_bytes: config.max_log_bytes,
            max_queue: config.max_queue,
            metrics: Arc::clone(&metrics),
            slots: (config.max_concurrent_runs > 0).then(|| RunSlots::new(config.max_concurrent_runs)),
        },
    );
    let state = Arc::new(ApiState {
        jobs: Arc::clone(&jobs),
        spool_dir: logs.callback_spool_dir(),
        logs,
        access_token: config.access_token.clone(),
        app_name: config.app_name.clone(),
        path_prefix: config.path_prefix.clone(),
        registered,
        dialled,
        metrics,
        incarnation,
    });

    let server_stop = CancellationToken::new();
    if let Some(listener) = metrics_listener {
        listener.serve(metrics_router(Arc::clone(&state)), server_stop.clone())?;
    }
    // Dial-out: the sockets to the admins carry the executor API; the port serves probes.
    let dialling = TaskTracker::new();
    let dial_stop = CancellationToken::new();
    let api = if config.dial_out {
        let identity = crate::dial::Identity {
            access_token: config.access_token.clone(),
            app_name: config.app_name.clone(),
            address: address.clone(),
            key: crate::dial::random_key().context("cannot draw the dial key")?,
        };
        crate::dial::spawn(&dialling, &config.admin_addresses, &identity, &state, &dial_stop);
        probe_router(state)
    } else {
        router(state)
    };
    let server = tokio::spawn(
        axum::serve(listener, api)
            .with_graceful_shutdown(server_stop.clone().cancelled_owned())
            .into_future()
            .in_current_span(),
    );
    tracing::info!(%local, %address, app = %config.app_name, script_glue = config.script_glue, glue_enabled = config.glue_enabled, "executor started");

    shutdown.await;
    tracing::info!("shutting down: deregistering and waiting for running jobs");
    background_stop.cancel();
    server_stop.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = %e, "executor API server failed"),
        Err(e) => tracing::error!(error = %e, "executor API server task failed"),
    }
    jobs.shutdown(config.shutdown_grace).await;
    // Kept until the runs are over, so an admin can still `/kill` them or read their logs.
    dial_stop.cancel();
    dialling.close();
    dialling.wait().await;
    callback_stop.cancel();
    background.close();
    background.wait().await;
    ship_stop.cancel();
    shipping.close();
    shipping.wait().await;
    tracing::info!("executor stopped");
    Ok(())
}

/// `http://{ip}:{port}{prefix}/`, using the machine's address when listening on all interfaces.
fn default_address(local: SocketAddr, prefix: &str) -> String {
    let ip = if local.ip().is_unspecified() {
        local_ip_address::local_ip().unwrap_or(IpAddr::from([127, 0, 0, 1]))
    } else {
        local.ip()
    };
    let host = match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    };
    format!("http://{host}:{}{prefix}/", local.port())
}
