//! Interop: the admin (edge + engine) drives a third-party executor, pyxxl from PyPI, through the
//! upstream protocol — registration, routing, callbacks, log reading and kill — and our own
//! executor through the very same scenario.
//!
//! The pyxxl side runs `admin/tests/interop/pyxxl_executor.py` with the Python named by
//! `JOBWHEEL_PYXXL_PYTHON` (a venv with `pyxxl` installed; `scripts/test.sh` creates it).

use std::process::Stdio;
use std::sync::Arc;

use jobwheel_admin::engine_core::EngineCore;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::store::{Group, GroupId, JobId, LogFilter, LogId, LogRow, Page, Store};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use tokio::process::Command;
use tokio::sync::oneshot;

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
    let done = eventually("the hello run's callback", || async {
        newest_log(store, hello_job).await.filter(|l| l.handle_code != 0)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyxxl_from_pypi_is_driven_by_our_admin() -> anyhow::Result<()> {
    let python = match std::env::var("JOBWHEEL_PYXXL_PYTHON") {
        Ok(python) => python,
        Err(_) if std::env::var_os("CI").is_some() => panic!("JOBWHEEL_PYXXL_PYTHON must be set in CI"),
        Err(_) => return Ok(()), // a developer without the venv: scripts/test.sh provides it
    };
    let dir = tempfile::tempdir()?;
    let (admin, core) = admin_with_engine(dir.path()).await?;
    let group = add_group(&*admin.store, "pyxxl-interop").await?;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/pyxxl_executor.py");
    let mut pyxxl = Command::new(python)
        .arg(script)
        .env("PYXXL_ADMIN_URL", format!("{}/api/", admin.base))
        .env("PYXXL_APP_NAME", "pyxxl-interop")
        .env("PYXXL_PORT", free_port().to_string())
        .env("PYXXL_TOKEN", TOKEN)
        .env("PYXXL_LOG_DIR", dir.path().join("pyxxl-logs"))
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new("ours-interop", dir.path().join("logs"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin.base.clone()];
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
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    scenario(&admin, &core, group, "hello", "sleep").await?;
    let _ = stop.send(());
    executor.await??;
    admin.stop().await
}
