//! Interop: the admin (edge + engine) drives a third-party executor, pyxxl from PyPI, through the
//! upstream protocol — registration, routing, callbacks, log reading and kill — and our own
//! executor through the very same scenario; then both and an xxl-job 3.5 executor at once.
//!
//! The pyxxl side runs `admin/tests/interop/pyxxl_executor.py` with the Python named by
//! `JOBWHEEL_PYXXL_PYTHON` (a venv with `pyxxl` installed; `scripts/test.sh` creates it).

use std::process::Stdio;
use std::sync::Arc;

use anyhow::ensure;
use jobwheel_admin::credentials::GroupTokens;
use jobwheel_admin::engine_core::EngineCore;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::sealing::SecretBox;
use jobwheel_admin::store::{Group, GroupId, JobId, LogFilter, LogId, LogRow, Page, Store, StoredToken};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::json;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::gen_c_executor::GenCExecutor;
use crate::http::executor::job;
use crate::http::{Admin, TOKEN, eventually, sqlite_url, test_config};

/// An admin running the real engine, with a handle on the engine itself.
async fn admin_with_engine(dir: &std::path::Path) -> anyhow::Result<(Admin, Arc<EngineCore>)> {
    let config = test_config(&sqlite_url(dir));
    let engine_config = config.clone();
    let (core_tx, core_rx) = oneshot::channel();
    let admin = Admin::start_core(config, move |context| {
        let core = EngineCore::start(context, &engine_config)?;
        let _ = core_tx.send(Arc::clone(&core));
        Ok(core as Arc<dyn AdminCore>)
    })
    .await?;
    Ok((admin, core_rx.await?))
}

async fn add_group(store: &dyn Store, app: &str) -> anyhow::Result<GroupId> {
    Ok(store
        .add_group(&Group {
            app_name: app.to_owned(),
            title: app.to_owned(),
            address_type: 0,
            address_list: None,
            update_time: None,
        })
        .await?)
}

async fn add_bean_job(store: &dyn Store, group: GroupId, handler: &str) -> anyhow::Result<JobId> {
    let mut bean = job(group);
    bean.executor_handler = Some(handler.to_owned());
    Ok(store.add_job(&bean).await?)
}

async fn newest_log(store: &dyn Store, job_id: JobId) -> Option<LogRow> {
    let filter = LogFilter { job_id: Some(job_id), ..LogFilter::default() };
    let page = store.page_logs(&filter, Page { offset: 0, limit: 10 }).await.ok()?;
    page.rows.into_iter().max_by_key(|r| r.id.0)
}

/// The scenario both executors must pass: registered and routable, a run whose callback and
/// log arrive, and a kill of a long run.
async fn scenario(
    admin: &Admin,
    core: &EngineCore,
    group: GroupId,
    hello: &str,
    sleep: &str,
) -> anyhow::Result<()> {
    let store = &*admin.store;
    let address = eventually("the executor registered and routable", || async {
        store.load_group(group).await.ok().flatten().and_then(|g| g.group.address_list)
    })
    .await;

    let hello_job = add_bean_job(store, group, hello).await?;
    core.engine().trigger_manual(hello_job, Some("interop".to_owned()), None).await?;
    // A fast executor's callback may be stored before the trigger's own outcome: wait for both.
    let done = eventually("the hello run's trigger outcome and callback", || async {
        newest_log(store, hello_job).await.filter(|l| l.handle_code != 0 && l.trigger_code != 0)
    })
    .await;
    assert_eq!((done.trigger_code, done.handle_code), (200, 200), "{done:?}");
    assert_eq!(done.executor_address.as_deref(), Some(address.as_str()), "routed to the registered executor");
    let log = core.engine().read_log(LogId(done.id.0), 1).await?;
    assert!(log.log_content.contains("interop"), "the executor's log through /log: {log:?}");

    let sleep_job = add_bean_job(store, group, sleep).await?;
    core.engine().trigger_manual(sleep_job, Some("60".to_owned()), None).await?;
    let running = eventually("the long run accepted", || async {
        newest_log(store, sleep_job).await.filter(|l| l.trigger_code == 200)
    })
    .await;
    // Whether the run is still queued or already executing, `/kill` fails it (upstream kills
    // per job id), and the admin marks the log at once.
    core.engine().completion().kill(LogId(running.id.0)).await?;
    let killed = eventually("the killed run marked failed", || async {
        store.load_log(LogId(running.id.0)).await.ok().flatten().filter(|l| l.handle_code != 0)
    })
    .await;
    assert_eq!(killed.handle_code, 500, "{killed:?}");
    // Either the admin's manual-kill mark ("人为操作，主动终止:…") or the executor's own failure
    // callback lands first; the other is then ignored as a repeat, exactly as upstream.
    let msg = killed.handle_msg.as_deref().unwrap_or_default();
    assert!(!msg.is_empty(), "a kill leaves a reason: {killed:?}");
    Ok(())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

/// The Python of the pyxxl venv; `None` for a developer without it (CI must have it).
fn pyxxl_python() -> Option<String> {
    match std::env::var("JOBWHEEL_PYXXL_PYTHON") {
        Ok(python) => Some(python),
        Err(_) if std::env::var_os("CI").is_some() => panic!("JOBWHEEL_PYXXL_PYTHON must be set in CI"),
        Err(_) => None, // scripts/test.sh provides it
    }
}

/// pyxxl serving group `app` of the admin at `admin` with the global token.
fn spawn_pyxxl(python: &str, admin: &str, app: &str, dir: &std::path::Path) -> anyhow::Result<Child> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/pyxxl_executor.py");
    Ok(Command::new(python)
        .arg(script)
        .env("PYXXL_ADMIN_URL", format!("{admin}/api/"))
        .env("PYXXL_APP_NAME", app)
        .env("PYXXL_PORT", free_port().to_string())
        .env("PYXXL_TOKEN", TOKEN)
        .env("PYXXL_LOG_DIR", dir.join(format!("{app}-logs")))
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?)
}

/// A jobwheel executor of group `app` with the global token: `hello` logs its parameter,
/// `sleep` runs until it is killed.
fn start_ours(admin: &str, app: &str, dir: &std::path::Path) -> Ours {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
    let mut config = ExecutorConfig::new(app, dir.join(format!("{app}-logs")), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin.to_owned()];
    let mut handlers = Handlers::new();
    handlers.register("hello", |ctx: JobContext| async move {
        ctx.log(format!("hello {}", ctx.param()));
        Ok(())
    });
    handlers.register("sleep", |ctx: JobContext| async move {
        ctx.stopped().await;
        anyhow::bail!("stopped")
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    Ours { stop, task }
}

/// A running executor of ours.
struct Ours {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Ours {
    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.task.await?
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyxxl_from_pypi_is_driven_by_our_admin() -> anyhow::Result<()> {
    let Some(python) = pyxxl_python() else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let (admin, core) = admin_with_engine(dir.path()).await?;
    let group = add_group(&*admin.store, "pyxxl-interop").await?;
    let mut pyxxl = spawn_pyxxl(&python, &admin.base, "pyxxl-interop", dir.path())?;
    let result = scenario(&admin, &core, group, "pyHello", "pySleep").await;
    let _ = pyxxl.kill().await;
    result?;
    admin.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_executor_passes_the_same_scenario() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (admin, core) = admin_with_engine(dir.path()).await?;
    let group = add_group(&*admin.store, "ours-interop").await?;
    let ours = start_ours(&admin.base, "ours-interop", dir.path());
    scenario(&admin, &core, group, "hello", "sleep").await?;
    ours.stop().await?;
    admin.stop().await
}

/// One admin, three kinds of executor at once (issue 31, item 6): a jobwheel executor and pyxxl
/// with the global token, and an xxl-job 3.5 (Gen C) executor with its group's own token. Each
/// passes the whole scenario (routing, callback, `/log`, kill) while the others run, each group
/// routes only to its own executor, and the tokens stay scoped: the global token cannot register
/// into the 3.5 group, nor the 3.5 group's token into another group, and every request the Gen C
/// executor got carried its own token and AppName over 3.5's paths.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_admin_drives_a_mixed_fleet_at_once() -> anyhow::Result<()> {
    let Some(python) = pyxxl_python() else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let (admin, core) = admin_with_engine(dir.path()).await?;
    let store = &*admin.store;
    let ours_group = add_group(store, "fleet-ours").await?;
    let pyxxl_group = add_group(store, "fleet-pyxxl").await?;
    let gen_c_group = add_group(store, "fleet-genc").await?;
    let gen_c_token = "fleet-genc-group-token";
    let secrets = SecretBox::from_hex(&"6a".repeat(32))?; // test_config's key
    let sealed = GroupTokens::seal(&secrets, gen_c_group, gen_c_token);
    ensure!(store.set_group_token(gen_c_group, Some(&StoredToken::Sealed(sealed)), 0).await?);

    let ours = start_ours(&admin.base, "fleet-ours", dir.path());
    let mut pyxxl = spawn_pyxxl(&python, &admin.base, "fleet-pyxxl", dir.path())?;
    // The admin may hold a token snapshot from before the token was stored (up to 5 s).
    let gen_c = eventually("the 3.5 executor registered with its group's token", || async {
        let (executor, reply) = GenCExecutor::start(&admin.base, "fleet-genc", gen_c_token).await;
        (reply["code"] == 200).then_some(executor)
    })
    .await;

    let outcome = tokio::try_join!(
        scenario(&admin, &core, ours_group, "hello", "sleep"),
        scenario(&admin, &core, pyxxl_group, "pyHello", "pySleep"),
        scenario(&admin, &core, gen_c_group, "genHello", "genSleep"),
    );
    let _ = pyxxl.kill().await;
    outcome?;

    // Each group routes only to its own executor.
    let mut addresses = Vec::new();
    for group in [ours_group, pyxxl_group, gen_c_group] {
        let list = store.load_group(group).await?.and_then(|g| g.group.address_list).unwrap_or_default();
        ensure!(!list.contains(','), "one executor per group: {list}");
        addresses.push(list);
    }
    ensure!(addresses[2] == gen_c.address, "{addresses:?}");
    ensure!(addresses[0] != addresses[1] && addresses[1] != addresses[2], "{addresses:?}");

    // Tokens stay scoped.
    let registry = |app: &str| json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": "http://127.0.0.1:9/"});
    let global_into_gen_c =
        admin.executor_call("registry", &registry("fleet-genc"), Some(TOKEN), Some("fleet-genc")).await;
    ensure!(
        global_into_gen_c["code"] == 500,
        "the global token cannot act for the 3.5 group: {global_into_gen_c}"
    );
    let gen_c_into_ours =
        admin.executor_call("registry", &registry("fleet-ours"), Some(gen_c_token), Some("fleet-genc")).await;
    ensure!(
        gen_c_into_ours["code"] == 500,
        "the 3.5 group's token cannot act for another: {gen_c_into_ours}"
    );
    let seen = gen_c.seen();
    ensure!(
        seen.iter()
            .all(|s| s.token.as_deref() == Some(gen_c_token) && s.appname.as_deref() == Some("fleet-genc")),
        "every call to the 3.5 executor carried its token and AppName: {seen:?}"
    );
    for path in ["/trigger", "/log", "/kill"] {
        ensure!(seen.iter().any(|s| s.path == path), "the 3.5 executor was asked {path}: {seen:?}");
    }
    ensure!(!seen.iter().any(|s| s.path == "/run"), "no /run to a 3.5 executor: {seen:?}");

    ours.stop().await?;
    drop(gen_c);
    admin.stop().await
}
