//! The system under test, in-process: `jobwheel-admin` as its binary wires it (HTTP edge plus
//! scheduling engine) on a temporary SQLite database, an administrator created through the
//! store, a real executor registered with the admin, and a real OpenID provider (npm
//! `oidc-provider`) the admin offers single sign-on with.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jobwheel_admin::app::{self, CoreContext};
use jobwheel_admin::config::AdminConfig;
use jobwheel_admin::engine_core::EngineCore;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::sso::SsoConfig;
use jobwheel_admin::store::User;
use jobwheel_executor::{ExecutorConfig, Handlers};
use jobwheel_tests::sso_servers::OidcProvider;
use tokio::sync::oneshot;

/// The executors' access token.
const TOKEN: &str = "browser-test-token-42";
/// The AppName the story's executor registers with (the story creates its group in the UI).
pub(crate) const APP_NAME: &str = "ui-story-app";
pub(crate) const ADMIN_USER: &str = "uiadmin";
pub(crate) const ADMIN_PASSWORD: &str = "ui-pass-1";
/// The id of the OpenID provider in the admin's SSO settings (`#sso-idp` on the login page).
pub(crate) const IDP: &str = "idp";

/// The admin's single sign-on settings: `oidc_provider.mjs`'s groups mapped to an
/// administrator and to a user of the story's executor group.
fn sso_settings(base: &str, issuer: &str) -> String {
    format!(
        r#"
public_url = "{base}"

[[oidc]]
id = "{IDP}"
name = "Test IdP"
issuer = "{issuer}"
insecure = true
client_id = "jobwheel"
client_secret = "{OIDC_SECRET}"

[[oidc.map]]
group = "jobwheel-admins"
role = "admin"

[[oidc.map]]
group = "team-billing"
executor_groups = ["{APP_NAME}"]
"#
    )
}
const OIDC_SECRET: &str = "browser-oidc-client-secret";

type Task = tokio::task::JoinHandle<anyhow::Result<()>>;

pub(crate) struct Stack {
    pub(crate) base: String,
    /// `127.0.0.1:port` of the executor (as it appears in its registered address).
    pub(crate) executor_address: String,
    admin: Option<(oneshot::Sender<()>, Task)>,
    executor: Option<(oneshot::Sender<()>, Task)>,
    /// The OpenID provider, when it is installed (always under `CI=true`).
    pub(crate) idp: Option<OidcProvider>,
}

impl Stack {
    pub(crate) async fn start(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir.join("db"))?;
        let url = format!("sqlite://{}", dir.join("db/jobwheel.db").display());
        let mut config = AdminConfig::new(url, Some(TOKEN.to_owned()));
        config.i18n = MessageLang::En;
        config.shutdown_grace = Duration::from_secs(5);
        // The alarm page's WeCom stand-in listens on loopback (docs/alarms.md: --alarm-allow-private).
        config.alarm_allow_private =
            jobwheel_admin::alarm::AlarmNetworks::parse("127.0.0.0/8").expect("networks");
        let engine_config = config.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let idp = OidcProvider::start(&format!("{base}/api/v1/sso/oidc/{IDP}/callback"), OIDC_SECRET).await?;
        if let Some(idp) = &idp {
            let settings = SsoConfig::parse(&sso_settings(&base, &idp.issuer)).map_err(anyhow::Error::msg)?;
            config.sso = Some(settings);
        }
        let (store_tx, store_rx) = oneshot::channel();
        let make_core = move |context: CoreContext| {
            let _ = store_tx.send(Arc::clone(&context.store));
            EngineCore::start(context, &engine_config).map(|core| core as Arc<dyn AdminCore>)
        };
        let (stop_admin, admin_stopped) = oneshot::channel::<()>();
        let admin = tokio::spawn(app::run(config, make_core, listener, async move {
            let _ = admin_stopped.await;
        }));
        let Ok(store) = store_rx.await else {
            return Err(match admin.await {
                Ok(Err(e)) => e,
                other => anyhow::anyhow!("the admin stopped before building its core: {other:?}"),
            });
        };
        let password = jobwheel_admin::secrets::hash_password(ADMIN_PASSWORD)?;
        store
            .add_user(&User {
                username: ADMIN_USER.to_owned(),
                password,
                token: None,
                role: 1,
                permission: None,
            })
            .await
            .context("cannot add the test's administrator")?;

        // A real executor; it beats every second so a group created later in the UI picks it up
        // at once instead of after upstream's 30 s.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let executor_address = listener.local_addr()?.to_string();
        let mut executor_config =
            ExecutorConfig::new(APP_NAME, dir.join("executor-logs"), Some(TOKEN.to_owned()));
        executor_config.admin_addresses = vec![base.clone()];
        // Its lines are also kept by the admin, so the log page can search them.
        executor_config.job_logs = jobwheel_executor::JobLogs::Both;
        executor_config.timings.registry_interval = Duration::from_secs(1);
        executor_config.timings.callback_retry_interval = Duration::from_millis(200);
        executor_config.shutdown_grace = Duration::from_secs(5);
        let (stop_executor, executor_stopped) = oneshot::channel::<()>();
        let executor =
            tokio::spawn(jobwheel_executor::run(executor_config, Handlers::new(), listener, async move {
                let _ = executor_stopped.await;
            }));
        Ok(Self {
            base,
            executor_address,
            admin: Some((stop_admin, admin)),
            executor: Some((stop_executor, executor)),
            idp,
        })
    }

    /// Stops the executor, then the admin, and reports how each ended.
    pub(crate) async fn stop(mut self) -> anyhow::Result<()> {
        for (stop, task) in [self.executor.take(), self.admin.take()].into_iter().flatten() {
            let _ = stop.send(());
            task.await.context("a server task panicked")??;
        }
        Ok(())
    }
}
