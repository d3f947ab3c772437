//! Wires the admin together and runs it until shutdown.
//!
//! Start: open the database (migrations), settle the first-start secrets, build the core, serve.
//! Shutdown: stop accepting connections and let in-flight requests finish, then apply every
//! queued callback — each bounded by the configured grace period, with what was abandoned
//! logged — because executors never resend a callback the admin acknowledged.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jobwheel_daemon::MetricsListener;
use jobwheel_protocol::DEAD_TIMEOUT_SECS;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::config::AdminConfig;
use crate::credentials::{AccessToken, GroupTokens};
use crate::executor_client::DialHub;
use crate::http::{
    self, AdminCore, CallbackQueue, ExecutorApiState, HttpState, McpState, MgmtState, OpsState,
    RecentRegistrations,
};
use crate::metrics::AdminMetrics;
use crate::sealing::SecretBox;
use crate::secrets::{self, TokenSource};
use crate::store::{self, Store};

/// What an [`AdminCore`] is built from, once the store is open and the secrets are settled.
pub struct CoreContext {
    pub store: Arc<dyn Store>,
    /// The access token executors share with this admin (configured, stored or generated).
    pub access_token: String,
    /// This admin's base URL, as shown in trigger messages.
    pub admin_address: String,
    /// Opens the secret values a Wasm job's trigger carries.
    pub secret_box: Arc<SecretBox>,
    /// Where the core counts what it does (`/metrics`).
    pub metrics: Arc<AdminMetrics>,
    /// Groups' own access tokens: the engine calls those groups' executors with them.
    pub group_tokens: Arc<GroupTokens>,
    /// The dial-out executors connected to this admin: the edge attaches them, the engine's
    /// client calls them.
    pub dial: Arc<DialHub>,
}

/// Logs executor groups that share an AppName (review L6): an adopted 2.x/3.4 database may hold
/// them (upstream's schema has no unique index), and such groups share their executors'
/// registrations — and so their triggers, tokens and secrets. jobwheel creates no new ones.
async fn report_shared_app_names(store: &dyn Store) -> Result<(), store::StoreError> {
    let mut by_name: std::collections::BTreeMap<String, Vec<i32>> = std::collections::BTreeMap::new();
    for group in store.list_groups().await? {
        by_name.entry(group.group.app_name.to_lowercase()).or_default().push(group.id.0);
    }
    for (app_name, ids) in by_name.into_iter().filter(|(_, ids)| ids.len() > 1) {
        tracing::error!(
            app = %app_name,
            groups = ?ids,
            "executor groups share one AppName: each one's executors register for all of them, and with them \
             each one's triggers, secrets and token; rename or delete all but one (Executors page)"
        );
    }
    Ok(())
}

/// Runs the admin on `listener` until `shutdown` resolves, then shuts down gracefully.
///
/// `make_core` builds the [`AdminCore`] the HTTP edge calls: `jobwheel-admin` passes the
/// scheduling engine ([`EngineCore`](crate::engine_core::EngineCore)); tests pass fakes or the
/// store-only core.
pub async fn run<F>(
    config: AdminConfig,
    make_core: F,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()>
where
    F: FnOnce(CoreContext) -> anyhow::Result<Arc<dyn AdminCore>> + Send,
{
    let local = listener.local_addr().context("listener has no local address")?;
    let store = store::connect(&config.database_url).await.context("cannot open the database")?;
    if config.keep_upstream_password_hashes {
        // Unsalted MD5/SHA-256 for every password set here: only worth it while an upstream admin
        // really shares the database (review N11).
        anyhow::ensure!(
            store.schema().found != store::Generation::Created,
            "--keep-upstream-password-hashes: this database was created by jobwheel, so no upstream admin \
             shares it; leave the flag out to keep passwords as argon2 hashes"
        );
        tracing::warn!(
            generation = store.schema().found.label(),
            "--keep-upstream-password-hashes: passwords set here are stored as upstream's unsalted hashes, \
             readable by anyone with a copy of the database; drop the flag once no upstream admin uses it"
        );
    }
    let secrets = secrets::prepare(
        store.as_ref(),
        config.access_token.as_deref(),
        config.secret_key.as_deref(),
        &config.data_dir,
    )
    .await
    .context("cannot prepare the access token, the secret key and the first admin user")?;
    let secret_box = Arc::clone(&secrets.secret_box);
    if let Some(notice) = secrets.first_start_notice(&admin_url(local)) {
        show_once(&notice);
    }
    if let Some(module) = &config.demo_job
        && crate::demo::seed(store.as_ref(), module).await?
    {
        tracing::info!(module = %module.display(), "created the sample group and GLUE_WASM job");
    }
    match &secrets.token_source {
        TokenSource::Configured => tracing::info!("using the configured access token"),
        TokenSource::Stored(path) | TokenSource::Generated(path) => {
            tracing::info!(file = %path.display(), "using the access token stored in a file");
        }
    }

    // Secrets everybody knows are refused, and named at every start until they are replaced
    // (review N1): the configured token, groups' stored tokens, the seed password's hash.
    let token = match crate::credentials::token_weakness(&secrets.access_token) {
        None => AccessToken::new(&secrets.access_token),
        Some(weakness) => {
            tracing::error!(
                reason = weakness.describe(),
                "the access token is refused: no executor or script can use it. Give every admin and \
                 executor a new token (--access-token / JOBWHEEL_ACCESS_TOKEN), at least 8 random characters"
            );
            AccessToken::refusing()
        }
    };
    secrets::report_published_passwords(store.as_ref()).await.context("reading the users")?;
    let metrics = Arc::new(AdminMetrics::new());
    let group_tokens = Arc::new(GroupTokens::new(Arc::clone(&store), Arc::clone(&secret_box)));
    group_tokens.report_refused().await.context("reading the groups' access tokens")?;
    report_shared_app_names(store.as_ref()).await.context("reading the executor groups")?;
    let dial = Arc::new(DialHub::default());
    let core = make_core(CoreContext {
        store: Arc::clone(&store),
        access_token: secrets.access_token.clone(),
        admin_address: admin_url(local),
        secret_box: Arc::clone(&secret_box),
        metrics: Arc::clone(&metrics),
        group_tokens: Arc::clone(&group_tokens),
        dial: Arc::clone(&dial),
    })
    .context("cannot start the admin core")?;
    let tasks = TaskTracker::new();
    let callbacks = CallbackQueue::spawn(Arc::clone(&core), &tasks);
    let registrations = Arc::new(RecentRegistrations::new(Duration::from_secs(DEAD_TIMEOUT_SECS)));
    let clock = core.clock();
    let mgmt = Arc::new(MgmtState {
        store: Arc::clone(&store),
        core: Arc::clone(&core),
        clock: Arc::clone(&clock),
        registrations: Arc::clone(&registrations),
        login_limit: http::LoginLimiter::default(),
        refused_logins: http::RefusedLogins::default(),
        secure_cookie: config.secure_cookie,
        keep_upstream_password_hashes: config.keep_upstream_password_hashes,
        trusted_proxies: config.trusted_proxies.clone(),
        executor_dead_timeout: config.executor_dead_timeout,
        lang: config.i18n,
        module_info: http::ModuleInfoCache::default(),
        secret_box,
        group_tokens: Arc::clone(&group_tokens),
        audit_snapshots: http::audit_snapshots(),
        sso: Arc::new(
            config
                .sso
                .clone()
                .map_or_else(crate::sso::Sso::disabled, crate::sso::Sso::new)
                .context("starting the HTTP client for single sign-on")?,
        ),
    });
    let state = HttpState {
        executor_api: Arc::new(ExecutorApiState {
            store: Arc::clone(&store),
            core: Arc::clone(&core),
            clock,
            token,
            group_tokens,
            callbacks: callbacks.clone(),
            registrations,
            openapi_limit: http::OpenApiLimit::new(config.openapi_rate_limit),
            token_failures: http::TokenFailures::default(),
            trusted_proxies: config.trusted_proxies.clone(),
            metrics: Arc::clone(&metrics),
            mgmt: Arc::clone(&mgmt),
            dial: Arc::clone(&dial),
        }),
        mgmt,
        mcp: Arc::new(McpState {
            store: Arc::clone(&store),
            trusted_proxies: config.trusted_proxies.clone(),
            metrics: Arc::clone(&metrics),
        }),
        ops: Arc::new(OpsState { store, core: Arc::clone(&core), callbacks: callbacks.clone(), metrics }),
    };
    drop(secrets);
    let metrics_listener = MetricsListener::bind(config.metrics_listen).await?;

    let server_stop = CancellationToken::new();
    let mut server = tokio::spawn(
        // The peer address feeds the login throttle.
        axum::serve(
            listener,
            http::router(state.clone()).into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(server_stop.clone().cancelled_owned())
        .into_future()
        .in_current_span(),
    );
    if let Some(listener) = metrics_listener {
        listener.serve(http::metrics_router(Arc::clone(&state.ops)), server_stop.clone())?;
    }
    tracing::info!(%local, "jobwheel admin started");

    tokio::select! {
        () = shutdown => {}
        result = &mut server => {
            // The server never ends on its own; if it did, report why instead of idling.
            callbacks.close();
            return match result {
                Ok(Ok(())) => Err(anyhow::anyhow!("the HTTP server stopped unexpectedly")),
                Ok(Err(e)) => Err(anyhow::Error::new(e).context("the HTTP server failed")),
                Err(e) => Err(anyhow::Error::new(e).context("the HTTP server task failed")),
            };
        }
    }
    tracing::info!("shutting down: finishing requests and queued callbacks");
    server_stop.cancel();
    // Upgraded sockets are not the server's to finish: dial-out executors are told to go.
    dial.close_all();
    match tokio::time::timeout(config.shutdown_grace, &mut server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::error!(error = %e, "the HTTP server failed"),
        Ok(Err(e)) => tracing::error!(error = %e, "the HTTP server task failed"),
        Err(_) => {
            tracing::warn!("requests still open after the shutdown grace period; closing them");
            server.abort();
        }
    }
    callbacks.close();
    tasks.close();
    if tokio::time::timeout(config.shutdown_grace, tasks.wait()).await.is_err() {
        tracing::error!(
            batches = callbacks.pending(),
            "callback batches not applied within the shutdown grace period; their results are lost"
        );
    }
    core.shutdown().await;
    tracing::info!("jobwheel admin stopped");
    Ok(())
}

/// The base URL executors should be given, for the first-start notice.
fn admin_url(local: SocketAddr) -> String {
    if local.ip().is_unspecified() {
        format!("http://<this host>:{}", local.port())
    } else {
        format!("http://{local}")
    }
}

/// Writes the first-start notice to stderr, outside the log stream: it must reach the operator
/// once and in full, whatever `RUST_LOG` says, and log collectors should not index secrets
/// under a log level.
#[allow(clippy::print_stderr, reason = "the generated secrets are shown to the operator exactly once")]
fn show_once(notice: &str) {
    eprintln!("{notice}");
}
