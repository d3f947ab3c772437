//! Dial-out executors as real processes (docs/executor.md, "Dial-out executors"): a
//! `jobwheel-executor --dial-out` beside a listening one in one group, reporting to every admin
//! (two on PostgreSQL, sharing the database; one on SQLite). Its port takes no `/run`; a run
//! reaches it through whichever admin fires and its log is read through each; a run in flight
//! when it is SIGKILLed is closed, not left running; FAILOVER moves past it once its socket is
//! gone though its registration is not; a new process of it and a restarted admin find each
//! other again; SIGTERM drains it.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::api::{Api, addresses, all_done};
use jobwheel_tests::cluster::Daemon;
use serde_json::json;

use crate::{API_TOKEN, DEAD_AFTER};

const DIAL_APP: &str = "dial-app";

/// The group's dial-out address other than `not`, once it is registered next to `listening`.
async fn dial_address(api: &Api, group: i64, listening: &str, not: Option<&str>) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let current = api.get(&format!("/groups/{group}")).await?;
        let list = current["addressList"].as_str().unwrap_or_default().to_owned();
        let dial = list.split(',').find(|a| a.starts_with("dial://dial-app/") && Some(*a) != not);
        if let Some(dial) = dial.filter(|_| list.split(',').any(|a| a == listening)) {
            return Ok(dial.to_owned());
        }
        ensure!(tokio::time::Instant::now() < deadline, "the executors did not register: {current}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until `admin` has logged `needle` more than `before` times.
async fn logged(admin: &Daemon, needle: &str, before: usize) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while admin.log_count(needle) <= before {
        ensure!(tokio::time::Instant::now() < deadline, "{} never logged {needle:?}", admin.base);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Waits until the executor at `base` answers `/readyz` with `status`.
async fn readiness(http: &reqwest::Client, base: &str, status: u16) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let reply = http.get(format!("{base}/readyz")).send().await?;
        if reply.status() == status {
            return Ok(());
        }
        ensure!(
            tokio::time::Instant::now() < deadline,
            "/readyz never answered {status}: {}",
            reply.text().await?
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `count` admins on `url` under `dir`, each closing lost runs after `lost_secs`, an API
/// administrator holding [`API_TOKEN`], and an automatic group for `app`: the admins and the
/// group's id.
pub(crate) async fn admins_with_group(
    url: &str,
    dir: &std::path::Path,
    count: usize,
    lost_secs: &str,
    app: &str,
) -> anyhow::Result<(Vec<Daemon>, i64)> {
    let store = jobwheel_admin::store::connect(url).await?;
    jobwheel_tests::fixtures::api_administrator(&*store, "system-ops", API_TOKEN).await?;
    let mut admins = Vec::new();
    for n in 0..count {
        let flags = ["--i18n", "en", "--lost-job-timeout", lost_secs, "--executor-dead-timeout", DEAD_AFTER];
        admins.push(Daemon::start_admin(url, &dir.join(format!("admin-{n}")), &flags, &[]).await?);
    }
    let api = Api::new(&admins[0].base, API_TOKEN);
    let created = api.post("/groups", json!({"appname": app, "title": app, "addressType": 0})).await?;
    Ok((admins, created["id"].as_i64().context("group id")?))
}

pub(crate) async fn run(url: &str, admin_count: usize) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut admins, group) = admins_with_group(url, dir.path(), admin_count, "4", DIAL_APP).await?;
    let bases: Vec<String> = admins.iter().map(|a| a.base.clone()).collect();
    let apis: Vec<Api> = bases.iter().map(|b| Api::new(b, API_TOKEN)).collect();
    let mut dial = Daemon::start_executor(
        DIAL_APP,
        &bases,
        &dir.path().join("dial"),
        &["--dial-out", "--enable-script-glue"],
    )
    .await?;
    let mut listening = Daemon::start_executor(
        DIAL_APP,
        &bases[..1],
        &dir.path().join("listening"),
        &["--enable-script-glue"],
    )
    .await?;
    let listening_address = listening.address();
    let address = dial_address(&apis[0], group, &listening_address, None).await?;

    // Its port serves probes, and nothing that takes a trigger.
    let http = reqwest::Client::new();
    for path in ["run", "beat", "kill", "log", "idleBeat", "runBatch"] {
        let reply = http
            .post(format!("{}/{path}", dial.base))
            .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, jobwheel_tests::TOKEN)
            .json(&json!({"jobId": 1, "logId": 1, "executorHandler": "demoJobHandler", "glueType": "BEAN"}))
            .send()
            .await?;
        ensure!(reply.status() == 404, "/{path} on the dial-out executor's port: {}", reply.status());
    }
    ensure!(http.get(format!("{}/readyz", dial.base)).send().await?.status() == 200, "not ready");

    // Whichever admin fires reaches it; each admin reads each run's log from it.
    let job = apis[0].job(group, "dial echo", json!({})).await?;
    for api in &apis {
        api.trigger(job, Some(&address)).await?;
    }
    let logs =
        apis[0].wait_logs(job, Duration::from_secs(20), "every run", |l| all_done(l, admin_count)).await?;
    ensure!(logs.iter().all(|l| l["handleCode"] == 200), "{logs:#?}");
    ensure!(addresses(&logs).iter().all(|a| *a == address), "ran on the dial-out executor: {logs:#?}");
    for log in &logs {
        for api in &apis {
            let id = log["id"].as_i64().context("log id")?;
            let content = api.content(id).await?;
            ensure!(content.contains("XXL-JOB, Hello World."), "log {id} through an admin: {content:?}");
        }
    }

    // SIGKILLed with a run in flight: the run is closed, not left running.
    let script =
        json!({"glueType": "GLUE_SHELL", "glueSource": "echo started; sleep 60", "executorHandler": ""});
    let held = apis[0].job(group, "dies with its pod", script).await?;
    apis[admin_count - 1].trigger(held, Some(&address)).await?;
    apis[0]
        .wait_logs(held, Duration::from_secs(20), "the run accepted", |l| {
            l.len() == 1 && l[0]["triggerCode"] == 200
        })
        .await?;
    dial.kill9().await?;
    let closed = apis[0]
        .wait_logs(held, Duration::from_secs(40), "the run closed", |l| {
            l.len() == 1 && l[0]["handleCode"] != 0
        })
        .await?;
    ensure!(closed[0]["handleCode"] == 500, "{closed:#?}");

    // Its socket gone but its registration not (registered again, as a process killed right
    // after its beat leaves it): no admin routes to it while another executor is there — ROUND
    // would send every other trigger to it — and a trigger with nowhere else to go fails saying
    // why.
    jobwheel_tests::api::registry_call(&bases[0], "registry", DIAL_APP, &address).await?;
    let round = apis[0].job(group, "dial round", json!({"executorRouteStrategy": "ROUND"})).await?;
    let both = format!("{address},{listening_address}");
    for api in &apis {
        for _ in 0..2 {
            api.trigger(round, Some(&both)).await?;
        }
    }
    let logs = apis[0]
        .wait_logs(round, Duration::from_secs(20), "the rounds", |l| all_done(l, 2 * admin_count))
        .await?;
    for log in &logs {
        ensure!(log["handleCode"] == 200 && log["executorAddress"] == listening_address.as_str(), "{log:#}");
    }
    let nowhere = apis[0].job(group, "only a gone pod", json!({})).await?;
    apis[admin_count - 1].trigger(nowhere, Some(&address)).await?;
    let logs = apis[0]
        .wait_logs(nowhere, Duration::from_secs(20), "the failed trigger", |l| {
            l.len() == 1 && l[0]["triggerCode"] != 0
        })
        .await?;
    let msg = logs[0]["triggerMsg"].as_str().unwrap_or_default();
    ensure!(logs[0]["triggerCode"] == 500 && msg.contains("not connected to this admin"), "{:#}", logs[0]);

    // A new process of it registers a new address; an admin killed and started again on its
    // port is dialled again by it.
    let before = admins[0].log_count("dial-out executor connected");
    dial.restart().await?;
    let again = dial_address(&apis[0], group, &listening_address, Some(&address)).await?;
    logged(&admins[0], "dial-out executor connected", before).await?;
    // Its stderr file keeps every start's lines.
    let before = admins[0].log_count("dial-out executor connected");
    admins[0].kill9().await?;
    if admin_count == 1 {
        // No admin to take its triggers: not ready, so a probe takes it out of rotation.
        readiness(&http, &dial.base, 503).await?;
    }
    admins[0].restart().await?;
    logged(&admins[0], "dial-out executor connected", before).await?;
    readiness(&http, &dial.base, 200).await?;
    apis[0].trigger(job, Some(&again)).await?;
    let logs = apis[0]
        .wait_logs(job, Duration::from_secs(20), "the run after the restarts", |l| {
            all_done(l, admin_count + 1)
        })
        .await?;
    let last = logs.last().context("a run")?;
    ensure!(last["handleCode"] == 200 && last["executorAddress"] == again.as_str(), "{last:#}");

    // SIGTERMed with a run in flight, it drains: that run finishes, while a trigger sent down
    // its still-open socket is refused with the reason (not taken to die with the process) and
    // a FAILOVER trigger moves past it. It then exits cleanly (`stopped` checks the status).
    let draining =
        json!({"glueType": "GLUE_SHELL", "glueSource": "sleep 3; echo drained", "executorHandler": ""});
    let draining = apis[0].job(group, "finishes while its pod drains", draining).await?;
    apis[0].trigger(draining, Some(&again)).await?;
    apis[0]
        .wait_logs(draining, Duration::from_secs(20), "the run accepted", |l| {
            l.len() == 1 && l[0]["triggerCode"] == 200
        })
        .await?;
    let before = dial.log_count("deregistered from admin");
    dial.terminate()?;
    logged(&dial, "deregistered from admin", before).await?;
    // Registered again, as an admin that has not refreshed its list since still holds it.
    jobwheel_tests::api::registry_call(&bases[0], "registry", DIAL_APP, &again).await?;
    let pinned = format!("{again},{listening_address}");
    let refused = apis[0].job(group, "sent to a draining pod", json!({})).await?;
    let moved = apis[0]
        .job(group, "failed over from a draining pod", json!({"executorRouteStrategy": "FAILOVER"}))
        .await?;
    for api in &apis {
        api.trigger(refused, Some(&again)).await?;
        api.trigger(moved, Some(&pinned)).await?;
    }
    let logs = apis[0]
        .wait_logs(refused, Duration::from_secs(20), "the refused runs", |l| {
            l.len() == admin_count && l.iter().all(|l| l["triggerCode"] != 0)
        })
        .await?;
    for log in &logs {
        let msg = log["triggerMsg"].as_str().unwrap_or_default();
        ensure!(log["triggerCode"] == 500 && msg.contains("executor is shutting down"), "{log:#}");
    }
    let logs = apis[0]
        .wait_logs(moved, Duration::from_secs(20), "the failed-over runs", |l| all_done(l, admin_count))
        .await?;
    for log in &logs {
        ensure!(log["handleCode"] == 200 && log["executorAddress"] == listening_address.as_str(), "{log:#}");
    }
    dial.stopped().await?;
    let done = apis[0].logs(draining).await?;
    ensure!(done.len() == 1 && done[0]["handleCode"] == 200, "the drained run: {done:#?}");
    listening.stop().await?;
    for admin in &mut admins {
        admin.stop().await?;
    }
    Ok(())
}
