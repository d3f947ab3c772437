//! Exactly-once delivery (issue 58, docs/engine.md "Delivery guarantee") with real processes on
//! all three databases: an `EXACTLY_ONCE` shell job fires every 10 s, ROUND over two
//! `jobwheel-executor` processes. Every admin is armed at its `dispatch` fault point, so the
//! first admin to send a `/run` is SIGKILLed right after the executor accepted it and before the
//! outcome is stored — the fire is in doubt. Once its script has started, the executor it went
//! to is SIGKILLed too and restarted on the same address. The recovering admin (the other of two
//! on PostgreSQL and MariaDB; the same one restarted on SQLite) must resend that fire to that
//! address — not the one ROUND would pick — with its log id and key, and the executor's fire
//! journal must answer with the interrupted run's end instead of running it again. Afterwards
//! every fire's key ran exactly as often as its trigger succeeded: once, or never.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_admin::fault::FAULT_FILE_VAR;
use jobwheel_admin::store::{DueSend, Group, JobId, LogFilter, LogRow, LogStatusFilter, Page, Store};
use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::databases::{FreshDatabase, Server};
use jobwheel_tests::{now_ms, wait_until_async};

const APP: &str = "exactly-once-app";
/// How long each run takes: long enough for its executor to be killed mid-run.
const RUN_SECS: u32 = 4;
/// `trigger_msg` of a resent fire names it so (the two message languages).
const RESENT: [&str; 2] = ["resent after its admin stopped", "重新发送"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_resends_a_fire_in_doubt_after_a_restart_and_it_runs_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("jobwheel.db").display());
    scenario(&url, 1, dir.path()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_resends_a_fire_in_doubt_from_the_other_admin_and_it_runs_once() -> anyhow::Result<()> {
    on_server(Server::Postgres).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_resends_a_fire_in_doubt_from_the_other_admin_and_it_runs_once() -> anyhow::Result<()> {
    on_server(Server::MySql).await
}

async fn on_server(server: Server) -> anyhow::Result<()> {
    let Some(db) = FreshDatabase::create(server).await? else { return Ok(()) };
    let dir = tempfile::tempdir()?;
    let outcome = scenario(&db.url, 2, dir.path()).await;
    db.drop_it().await?;
    outcome
}

async fn scenario(url: &str, admin_count: usize, dir: &Path) -> anyhow::Result<()> {
    let store = jobwheel_admin::store::connect(url).await?;
    let mut admins = Vec::new();
    for n in 0..admin_count {
        let data = dir.join(format!("admin{n}"));
        let fault = data.join("fault").display().to_string();
        let env = [("RUST_LOG", "warn"), (FAULT_FILE_VAR, fault.as_str())];
        admins.push(Daemon::start_admin(url, &data, &[], &env).await?);
    }
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let mut executors = Vec::new();
    for n in 0..2 {
        let data = dir.join(format!("executor{n}"));
        executors.push(Daemon::start_executor(APP, &bases, &data, &["--enable-script-glue"]).await?);
    }
    let runs = dir.join("runs.txt");
    let job = add_job(&*store, &executors, &runs).await?;
    let outcome = check(&*store, job, &mut admins, &mut executors, dir, &runs).await;
    for daemon in admins.iter_mut().chain(executors.iter_mut()) {
        daemon.stop().await?;
    }
    outcome.with_context(|| {
        let tails: Vec<String> = admins.iter().map(|a| a.log_tail(30)).collect();
        format!("admin logs:\n{}", tails.join("\n---\n"))
    })
}

/// The job: a manual group of both executors, ROUND, `EXACTLY_ONCE`, every 10 s, a script that
/// writes its fire key to `runs` and then takes [`RUN_SECS`].
async fn add_job(store: &dyn Store, executors: &[Daemon], runs: &Path) -> anyhow::Result<JobId> {
    let addresses: Vec<String> = executors.iter().map(Daemon::address).collect();
    let group = store
        .add_group(&Group {
            app_name: APP.to_owned(),
            title: APP.to_owned(),
            address_type: 1,
            address_list: Some(addresses.join(",")),
            update_time: None,
        })
        .await?;
    let mut job = jobwheel_tests::fixtures::bean_job(group, "exactly once", "");
    job.glue_type = "GLUE_SHELL".into();
    job.glue_source = Some(format!("echo \"$JOBWHEEL_FIRE_KEY\" >> '{}'\nsleep {RUN_SECS}", runs.display()));
    job.executor_route_strategy = Some("ROUND".into());
    job.schedule_type = "CRON".into();
    job.schedule_conf = Some("0/10 * * * * ?".to_owned());
    job.trigger_status = 1;
    // An idle scheduler looks for new jobs every 5 s: the first fire lies beyond that.
    job.trigger_next_time = (now_ms() / 10_000 + 1) * 10_000 + 10_000;
    let id = store.add_job(&job).await?;
    store.set_job_delivery(id, Some("EXACTLY_ONCE")).await?;
    Ok(id)
}

async fn check(
    store: &dyn Store,
    job: JobId,
    admins: &mut [Daemon],
    executors: &mut [Daemon],
    dir: &Path,
    runs: &Path,
) -> anyhow::Result<()> {
    // Every admin dies at its next `/run` answered; the first to send one dies, the others are
    // disarmed before the next fire.
    let faults: Vec<_> = (0..admins.len()).map(|n| dir.join(format!("admin{n}")).join("fault")).collect();
    for fault in &faults {
        std::fs::write(fault, "dispatch")?;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    let victim = loop {
        let mut dead = None;
        for (n, admin) in admins.iter_mut().enumerate() {
            if admin.has_exited()? {
                dead = Some(n);
            }
        }
        if let Some(n) = dead {
            break n;
        }
        ensure!(tokio::time::Instant::now() < deadline, "no admin reached its dispatch point in 45 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for fault in &faults {
        std::fs::remove_file(fault)?;
    }

    // The fire in doubt: recorded before its `/run`, with no outcome.
    let doubt: DueSend = {
        let due = store.sends_due(i64::MAX, 10).await?;
        let doubtful: Vec<DueSend> = due.into_iter().filter(DueSend::in_doubt).collect();
        ensure!(doubtful.len() == 1, "one fire in doubt after the kill: {doubtful:?}");
        doubtful.into_iter().next().context("one fire")?
    };
    let param: serde_json::Value = serde_json::from_str(&doubt.param)?;
    let key = param["fireKey"].as_str().context("the recorded trigger has its fire key")?.to_owned();
    ensure!(param["deliveryMode"] == "EXACTLY_ONCE", "sent as exactly once: {param}");
    ensure!(!doubt.param.contains("wasmGrant"), "no grant is stored with the send");

    // Its run started; its executor dies mid-run and comes back on the same address.
    wait_until_async(Duration::from_secs(15), "the fire in doubt started its script", || async {
        run_counts(runs).get(&key).copied()
    })
    .await;
    let at = executors.iter().position(|e| e.address() == doubt.address).context("the send's executor")?;
    executors[at].kill9().await?;
    executors[at].restart().await?;
    ensure!(executors[at].address() == doubt.address, "back on the same address");
    if admins.len() == 1 {
        admins[victim].restart().await?;
    }

    // Resent to that address with the same log id and key: the journal answers with the
    // interrupted run's end, which fails the log; nothing runs again.
    let log = wait_until_async(Duration::from_secs(90), "the fire in doubt resent and closed", || async {
        store.load_log(doubt.log_id).await.ok().flatten().filter(|l| l.handle_code != 0)
    })
    .await;
    let trigger_msg = log.trigger_msg.clone().unwrap_or_default();
    ensure!(log.trigger_code == 200, "the resend was accepted: {log:?}");
    ensure!(RESENT.iter().any(|r| trigger_msg.contains(r)), "trigger_msg names the resend: {trigger_msg}");
    ensure!(
        log.executor_address.as_deref() == Some(doubt.address.as_str()),
        "resent to its address: {log:?}"
    );
    ensure!(log.handle_code == 500, "the interrupted run failed, not re-run: {log:?}");

    // Later fires go on; then every fire's key ran as often as its trigger succeeded.
    wait_until_async(Duration::from_secs(60), "a later fire succeeded", || async {
        logs(store, job).await.ok()?.iter().any(|l| l.id > doubt.log_id && l.handle_code == 200).then_some(())
    })
    .await;
    store.stop_job(job, chrono::Utc::now()).await?;
    let settled = wait_until_async(Duration::from_secs(60), "every fire settled", || async {
        let rows = logs(store, job).await.ok()?;
        rows.iter()
            .all(|l| l.handle_code != 0 || (l.trigger_code != 0 && l.trigger_code != 200))
            .then_some(rows)
    })
    .await;
    let counts = run_counts(runs);
    ensure!(counts.get(&key) == Some(&1), "the fire in doubt ran once: {counts:?}");
    for row in &settled {
        let scheduled = row.trigger_time.context("trigger time")?.timestamp_millis();
        let row_key = format!("job:{}@{scheduled}", job.0);
        let ran = counts.get(&row_key).copied().unwrap_or(0);
        let expected = usize::from(row.trigger_code == 200);
        ensure!(ran == expected, "{row_key} ran {ran} times, trigger {}: {counts:?}", row.trigger_code);
    }
    ensure!(
        counts.len() == settled.iter().filter(|l| l.trigger_code == 200).count(),
        "no stray runs: {counts:?}"
    );
    ensure!(store.sends_due(i64::MAX, 10).await?.iter().all(|s| !s.in_doubt()), "nothing left in doubt");
    Ok(())
}

/// Each key in `runs` and how often it was written.
fn run_counts(runs: &Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(runs).unwrap_or_default().lines() {
        *counts.entry(line.trim().to_owned()).or_default() += 1;
    }
    counts
}

async fn logs(store: &dyn Store, job: JobId) -> anyhow::Result<Vec<LogRow>> {
    let filter = LogFilter { job_id: Some(job), status: LogStatusFilter::All, ..LogFilter::default() };
    let page = store.page_logs(&filter, Page { offset: 0, limit: 1000 }).await?;
    Ok(page.rows)
}
