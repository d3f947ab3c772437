//! An executor that dies with a run in flight and comes back on the **same address** — what the
//! shipped systemd unit does (a fixed port, `Restart=on-failure`). Its registration never
//! lapses, so upstream's lost-job monitor (which waits for the address to leave the registry)
//! would keep the run "running" forever, parking its FIX_DELAY job and holding a slot of its
//! group's cap. jobwheel closes it as soon as the new process beats (engine/restarts.rs).

use std::time::Duration;

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use crate::{APP, Stack};

/// How long the close may take: the new process's first beat and one `/outstanding` round trip,
/// far below the admin's lost-job timeout plus the executor dead timeout it must not wait for.
const CLOSE_WITHIN: Duration = Duration::from_secs(15);

pub(crate) async fn restart_same_address(stack: &mut Stack) -> anyhow::Result<()> {
    let api = stack.api.clone();
    let marker = tempfile::tempdir()?;
    let first = marker.path().join("first-run");
    // FIRST routes to the first address: the executor that will die.
    let victim = stack.addresses[0].clone();
    set_cap(stack, 1).await?;
    let script =
        format!("if [ -e {f} ]; then echo 'a later run'; else touch {f}; sleep 120; fi", f = first.display());
    let fields = json!({"glueType": "GLUE_SHELL", "glueSource": script, "executorHandler": "",
                        "scheduleType": "FIX_DELAY", "scheduleConf": "1"});
    let job = api.job(stack.group, "dies with its executor", fields).await?;
    api.post(&format!("/jobs/{job}/start"), json!({})).await?;
    api.wait_logs(job, Duration::from_secs(20), "the first run started", |l| {
        !l.is_empty() && l[0]["triggerCode"] == 200 && first.exists()
    })
    .await?;

    // The group's cap (1) is taken by that run: another job of the group is refused now.
    let probe = api
        .job(
            stack.group,
            "cap probe",
            json!({"glueType": "GLUE_SHELL", "glueSource": "echo probe", "executorHandler": ""}),
        )
        .await?;
    api.trigger(probe, None).await?;
    let refused = api
        .wait_logs(probe, Duration::from_secs(20), "the probe's trigger", |l| {
            l.len() == 1 && l[0]["triggerCode"] != 0
        })
        .await?;
    ensure!(refused[0]["triggerCode"] != 200, "the cap holds while the run is open: {refused:#?}");

    stack.kill_executor(&victim).await?;
    stack.restart_executor(&victim).await?;
    ensure!(stack.addresses.contains(&victim), "came back on the same address");

    let logs = api
        .wait_logs(job, CLOSE_WITHIN, "the run closed after the restart", |l| {
            !l.is_empty() && l[0]["handleCode"] != 0
        })
        .await?;
    let closed = &logs[0];
    ensure!(closed["handleCode"] == 500, "{closed:#}");
    let msg = closed["handleMsg"].as_str().unwrap_or_default();
    ensure!(
        msg.contains("restarted") && msg.contains(&victim),
        "closed by the restart check (the address never left the registry), not the lost monitor: {msg}"
    );

    // FIX_DELAY fires again once its run is closed.
    api.wait_logs(job, Duration::from_secs(20), "the next FIX_DELAY run", |l| {
        l.iter().skip(1).any(|log| log["handleCode"] == 200)
    })
    .await
    .context("FIX_DELAY re-armed")?;
    api.post(&format!("/jobs/{job}/stop"), json!({})).await?;
    api.wait_logs(job, Duration::from_secs(20), "every run of the stopped job done", |l| {
        l.iter().all(|log| {
            log["handleCode"] != 0 || log["triggerCode"].as_i64().is_some_and(|c| c != 200 && c != 0)
        })
    })
    .await?;

    // And the cap's slot is free again.
    api.trigger(probe, None).await?;
    let probed = api
        .wait_logs(probe, Duration::from_secs(20), "the second probe", |l: &[Value]| {
            l.len() == 2 && l[1]["handleCode"] != 0
        })
        .await?;
    ensure!(probed[1]["handleCode"] == 200, "the slot was freed: {probed:#?}");
    set_cap(stack, 0).await
}

/// The group's cap on runs in flight (0: none).
async fn set_cap(stack: &Stack, max_running: i64) -> anyhow::Result<()> {
    let body = json!({"appname": APP, "title": "System", "addressType": 0, "maxRunning": max_running});
    stack.api.put(&format!("/groups/{}", stack.group), body).await.map(drop)
}
