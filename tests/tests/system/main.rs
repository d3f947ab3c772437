//! System tests: a real `jobwheel-admin` and three `jobwheel-executor` processes on loopback,
//! driven through the management API, on SQLite, PostgreSQL and MariaDB. The scenarios run
//! side by side on one stack per database: cron and fix-rate jobs on time (`schedules`), the
//! ten routing strategies observed live (`routing`), child jobs, retries, kill, Wasm and script
//! GLUE together (`flows`), Wasm components calling an HTTP server under their network policy
//! with a variable and a secret (`wasm_http`), a job's own fuel and memory grants
//! (`grant_limits`), a recorded run replayed from its journal (`replays`), an executor restarted on its own address with a run
//! in flight (`restarts`), and lost-job marking after an executor is killed (last, as it
//! takes an executor away); on SQLite, alone, the Python and JavaScript components and a
//! workflow whose nodes pass data across Rust, Python, shell and BEAN (`workflows`). `metrics`
//! runs a stack of its own, whose counters it compares with the database; `packages` installs
//! the `.deb` packages and starts what their units start; `dial_out` runs a dial-out executor
//! beside a listening one against one admin on SQLite and two on PostgreSQL, `pods` churns
//! two dial-out executors and an admin while jobs fire, and `kubernetes` validates the
//! manifests and runs each daemon as its image and manifest say.

mod approvals;
mod dial_out;
mod flows;
mod glue_switch;
mod grant_limits;
mod key_rotation;
mod kubernetes;
mod login_flood;
mod metrics;
mod packages;
mod pods;
mod replays;
mod restarts;
mod routing;
mod schedules;
mod wasm_http;
mod workflows;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use jobwheel_admin::store::Store;
use jobwheel_tests::api::Api;
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use serde_json::json;

const API_TOKEN: &str = "system-test-api-token-0123456789";
/// The executors' AppName.
const APP: &str = "system-app";
/// Executors beat every second; three missed beats and one is dead.
const DEAD_AFTER: &str = "4";

/// One admin, three executors registered under [`APP`], and an automatic group for them.
pub(crate) struct Stack {
    pub(crate) api: Api,
    pub(crate) url: String,
    pub(crate) group: i64,
    /// The executors' addresses, sorted as the admin sorts them.
    pub(crate) addresses: Vec<String>,
    admin: Daemon,
    executors: Vec<Daemon>,
    _store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

impl Stack {
    /// Starts the stack; `admin_extra` flags go to the admin.
    async fn start(url: &str, admin_extra: &[&str]) -> anyhow::Result<Stack> {
        let dir = tempfile::tempdir()?;
        let store = jobwheel_admin::store::connect(url).await?;
        jobwheel_tests::fixtures::api_administrator(&*store, "ops", API_TOKEN).await?;
        let admin = Daemon::start_admin(
            url,
            &dir.path().join("admin"),
            &[
                &["--i18n", "en", "--lost-job-timeout", "4", "--executor-dead-timeout", DEAD_AFTER],
                admin_extra,
            ]
            .concat(),
            &[],
        )
        .await?;
        let mut executors = Vec::new();
        for n in 0..3 {
            let path = dir.path().join(format!("executor-{n}"));
            executors.push(
                Daemon::start_executor(
                    APP,
                    std::slice::from_ref(&admin.base),
                    &path,
                    // Wasm jobs may call the test's HTTP server on loopback (jobwheel's
                    // executor-wide allow-list; each job's own policy narrows it further).
                    &["--enable-script-glue", "--wasm-http-allow", "http://127.0.0.1:*,127.0.0.1"],
                )
                .await?,
            );
        }
        let mut addresses: Vec<String> = executors.iter().map(Daemon::address).collect();
        addresses.sort();
        let api = Api::new(&admin.base, API_TOKEN);
        let created =
            api.post("/groups", json!({"appname": APP, "title": "System", "addressType": 0})).await?;
        let group = created["id"].as_i64().context("group id")?;
        let expected = addresses.join(",");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let current = api.get(&format!("/groups/{group}")).await?;
            if current["addressList"].as_str() == Some(expected.as_str()) {
                break;
            }
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "executors not registered: {current}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(Stack { api, url: url.to_owned(), group, addresses, admin, executors, _store: store, _dir: dir })
    }

    /// `http://127.0.0.1:<port>` of the admin.
    pub(crate) fn admin_base(&self) -> &str {
        &self.admin.base
    }

    /// A GLUE_WASM job in the stack's group running `module` (uploaded through the API); its id.
    pub(crate) async fn wasm_job(&self, desc: &str, module: Vec<u8>) -> anyhow::Result<i64> {
        let job =
            self.api.job(self.group, desc, json!({"glueType": "GLUE_WASM", "executorHandler": ""})).await?;
        let response = reqwest::Client::new()
            .post(format!("{}/api/v1/jobs/{job}/wasm?remark=system", self.admin_base()))
            .bearer_auth(API_TOKEN)
            .header("content-type", "application/wasm")
            .body(module)
            .send()
            .await?;
        let status = response.status();
        anyhow::ensure!(status.is_success(), "upload: {status} {}", response.text().await?);
        Ok(job)
    }

    /// Starts the executor at `address` again on that address, with the same flags.
    pub(crate) async fn restart_executor(&mut self, address: &str) -> anyhow::Result<()> {
        let executor =
            self.executors.iter_mut().find(|e| e.address() == address).context("no such executor")?;
        executor.restart().await
    }

    /// SIGKILLs the executor at `address` (no deregistration, runs die with it).
    pub(crate) async fn kill_executor(&mut self, address: &str) -> anyhow::Result<()> {
        let executor =
            self.executors.iter_mut().find(|e| e.address() == address).context("no such executor")?;
        executor.kill9().await
    }

    /// The daemons' stderr went to files, not terminals: their logs hold text, and no colour
    /// codes (an ESC byte) that would land in a log file under systemd or a redirect.
    fn logs_are_plain(&self) -> anyhow::Result<()> {
        for daemon in std::iter::once(&self.admin).chain(&self.executors) {
            let text = daemon.log_text();
            anyhow::ensure!(text.lines().count() >= 2, "{} logged almost nothing: {text:?}", daemon.base);
            let start: String = text.chars().take(300).collect();
            anyhow::ensure!(
                !text.contains('\x1b'),
                "{} wrote colour codes to a file: {start:?}",
                daemon.base
            );
        }
        Ok(())
    }

    async fn stop(mut self) -> anyhow::Result<()> {
        for executor in &mut self.executors {
            if executor.is_running() {
                executor.stop().await?;
            }
        }
        self.admin.stop().await
    }
}

/// Held shared by every stack's timing-sensitive scenarios and alone by the compile-heavy one:
/// an executor compiling a 15–19 MB Python or JavaScript component takes both cores for tens of
/// seconds, enough to make heartbeats late and schedules miss on the other stacks.
static CPU: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Every scenario on one stack over `url`.
async fn scenarios(url: &str) -> anyhow::Result<()> {
    let mut stack = Stack::start(url, &[]).await?;
    let outcome = async {
        let shared = CPU.read().await;
        let (schedules, routing, flows, wasm_http) = tokio::join!(
            schedules::run(&stack),
            routing::run(&stack),
            flows::run(&stack),
            wasm_http::run(&stack)
        );
        schedules.context("schedules")?;
        routing.context("routing")?;
        flows.context("flows")?;
        wasm_http.context("wasm http")?;
        grant_limits::run(&stack).await.context("a job's own fuel and memory grants")?;
        replays::run(&stack).await.context("recorded runs replayed")?;
        approvals::run(&stack).await.context("a new capability waits for approval")?;
        workflows::nested(&stack).await.context("a sub-workflow across Rust Wasm, shell and BEAN")?;
        workflows::mapped(&stack).await.context("map nodes across Rust Wasm, shell and BEAN")?;
        if url.starts_with("sqlite") {
            glue_switch::run(&stack).await.context("a BEAN-only executor")?;
            glue_switch::missing_interpreters(&stack).await.context("interpreters not installed")?;
        }
        restarts::restart_same_address(&mut stack).await.context("executor restarted on its address")?;
        flows::lost_job(&mut stack).await.context("lost job")?;
        stack.logs_are_plain()?;
        drop(shared);
        if url.starts_with("sqlite") {
            let _alone = CPU.write().await;
            wasm_http::other_languages(&stack).await.context("wasm http in Python and JavaScript")?;
            workflows::diamond(&stack).await.context("a workflow across Rust, Python, shell and BEAN")?;
        }
        anyhow::Ok(())
    }
    .await;
    if outcome.is_err() {
        // The admin's own account of what happened, for the failure report.
        let tail = stack.admin.log_tail(40);
        stack.stop().await?;
        return outcome.context(tail);
    }
    stack.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    scenarios(&format!("sqlite://{}", dir.path().join("jobwheel.db").display())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = scenarios(&db.url).await;
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dial_out_on_sqlite() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let _shared = CPU.read().await;
    dial_out::run(&format!("sqlite://{}", dir.path().join("jobwheel.db").display()), 1).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dial_out_on_postgres_with_two_admins() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = {
        let _shared = CPU.read().await;
        dial_out::run(&db.url, 2).await
    };
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_come_and_go_on_sqlite() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let _shared = CPU.read().await;
    pods::run(&format!("sqlite://{}", dir.path().join("jobwheel.db").display()), 1).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_come_and_go_on_postgres_with_two_admins() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = {
        let _shared = CPU.read().await;
        pods::run(&db.url, 2).await
    };
    db.drop_it().await?;
    outcome
}

#[tokio::test]
async fn kubernetes_manifests_are_valid_for_kubernetes_1_34() -> anyhow::Result<()> {
    kubernetes::manifests_validate().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_pods_run_as_their_images_and_manifests_say() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::Postgres).await? else { return Ok(()) };
    let outcome = {
        let _shared = CPU.read().await;
        kubernetes::run(&db.url).await
    };
    db.drop_it().await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb() -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(Server::MySql).await? else { return Ok(()) };
    let outcome = scenarios(&db.url).await;
    db.drop_it().await?;
    outcome
}
