//! Runs beyond one trigger: a child job started by its parent's success, retries of a failing
//! job, a kill of a running script, a Wasm job and a script job side by side — and, once those
//! are done, a running job marked lost after its executor is SIGKILLed.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::sample_jobs::sample_job;
use serde_json::json;

use crate::Stack;
use jobwheel_tests::api::{addresses, all_done};

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let (child, retry, kill, glue) =
        tokio::join!(child_job(stack), retries(stack), kill(stack), side_by_side(stack));
    child.context("child job")?;
    retry.context("retries")?;
    kill.context("kill")?;
    glue.context("Wasm and script GLUE side by side")
}

async fn child_job(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let child = api.job(stack.group, "the child", json!({})).await?;
    let parent = api.job(stack.group, "the parent", json!({"childJobId": child.to_string()})).await?;
    api.trigger(parent, None).await?;
    let parent_logs =
        api.wait_logs(parent, Duration::from_secs(20), "the parent run", |l| all_done(l, 1)).await?;
    let child_logs =
        api.wait_logs(child, Duration::from_secs(20), "the child run", |l| all_done(l, 1)).await?;
    ensure!(child_logs[0]["handleCode"] == 200, "{child_logs:#?}");
    let trigger_msg = child_logs[0]["triggerMsg"].as_str().unwrap_or_default();
    ensure!(trigger_msg.contains("Parent job trigger"), "started by its parent: {trigger_msg}");
    // The parent's result is stored before its completion appends the child-trigger report, so
    // wait for the report rather than reading the first finished snapshot.
    let has_report = |l: &[serde_json::Value]| {
        l.first().and_then(|l| l["handleMsg"].as_str()).is_some_and(|m| m.contains("Trigger child job"))
    };
    let parent_logs = if has_report(&parent_logs) {
        parent_logs
    } else {
        api.wait_logs(parent, Duration::from_secs(20), "the parent's child report", |l| has_report(l)).await?
    };
    let report = parent_logs[0]["handleMsg"].as_str().unwrap_or_default();
    ensure!(report.contains("Trigger child job") && report.contains(&format!("Job ID={child}")), "{report}");
    Ok(())
}

async fn retries(stack: &Stack) -> anyhow::Result<()> {
    // Exactly once (docs/engine.md): each retry is a fire of its own with its own key, so the
    // executor's fire journal runs every one of them.
    let fields = json!({"glueType": "GLUE_SHELL", "glueSource": "echo \"failing: fire=$JOBWHEEL_FIRE_KEY\"; exit 3", "executorHandler": "",
                        "executorFailRetryCount": 2, "deliveryMode": "EXACTLY_ONCE"});
    let job = stack.api.job(stack.group, "fails every time", fields).await?;
    stack.api.trigger(job, None).await?;
    // The fail monitor looks every 10 s (upstream): two retries take up to ~30 s.
    let logs = stack
        .api
        .wait_logs(job, Duration::from_secs(60), "the run and two retries", |l| all_done(l, 3))
        .await?;
    ensure!(logs.len() == 3, "exactly two retries: {logs:#?}");
    let counts: Vec<i64> = logs.iter().map(|l| l["executorFailRetryCount"].as_i64().unwrap_or(-1)).collect();
    ensure!(counts == [2, 1, 0], "each retry has one attempt less: {counts:?}");
    ensure!(logs.iter().all(|l| l["handleCode"] == 500), "{logs:#?}");
    ensure!(logs[1]["triggerMsg"].as_str().unwrap_or_default().contains("Fail retry trigger"), "{logs:#?}");
    // The manual run and each retry are fires of their own: each its own key, from its log row.
    for log in &logs {
        let id = log["id"].as_i64().context("log id")?;
        let content = stack.api.content(id).await?;
        let key: String = content
            .split("failing: fire=")
            .nth(1)
            .map(|rest| {
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || ":@#/".contains(*c)).collect()
            })
            .unwrap_or_default();
        ensure!(key == format!("log:{id}"), "log {id} saw the key {key:?}: {content}");
    }
    Ok(())
}

async fn kill(stack: &Stack) -> anyhow::Result<()> {
    let fields =
        json!({"glueType": "GLUE_SHELL", "glueSource": "echo started; sleep 120", "executorHandler": ""});
    let job = stack.api.job(stack.group, "runs for two minutes", fields).await?;
    stack.api.trigger(job, None).await?;
    let logs = stack
        .api
        .wait_logs(job, Duration::from_secs(20), "the run started", |l| {
            l.len() == 1 && l[0]["triggerCode"] == 200
        })
        .await?;
    let log = logs[0]["id"].as_i64().context("log id")?;
    let started = tokio::time::Instant::now();
    stack.api.post(&format!("/logs/{log}/kill"), json!({})).await?;
    let logs = stack.api.wait_logs(job, Duration::from_secs(20), "the kill", |l| all_done(l, 1)).await?;
    ensure!(started.elapsed() < Duration::from_secs(10), "killed after {:?}", started.elapsed());
    ensure!(logs[0]["handleCode"] == 500, "{logs:#?}");
    let msg = logs[0]["handleMsg"].as_str().unwrap_or_default();
    ensure!(msg.contains("Manual operation") || msg.contains("killed"), "a kill note: {msg}");
    Ok(())
}

async fn side_by_side(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let wasm = stack.wasm_job("wasm hello", sample_job("hello")).await?;
    let script = api
        .job(stack.group, "shell hello", json!({"glueType": "GLUE_SHELL", "glueSource": "echo \"hello from bash\"", "executorHandler": ""}))
        .await?;
    for job in [wasm, script] {
        api.trigger(job, None).await?;
    }
    for (job, says) in [(wasm, "hello, world!"), (script, "hello from bash")] {
        let logs = api.wait_logs(job, Duration::from_secs(60), "the run", |l| all_done(l, 1)).await?;
        ensure!(logs[0]["handleCode"] == 200, "{logs:#?}");
        let content = api.content(logs[0]["id"].as_i64().context("log id")?).await?;
        ensure!(content.contains(says), "job {job} said {says:?}: {content}");
    }
    Ok(())
}

/// A running script whose executor is SIGKILLed is marked lost once the executor's
/// registration has expired.
pub(crate) async fn lost_job(stack: &mut Stack) -> anyhow::Result<()> {
    let fields = json!({"glueType": "GLUE_SHELL", "glueSource": "sleep 120", "executorHandler": ""});
    let job = stack.api.job(stack.group, "outlived by nothing", fields).await?;
    let victim = stack.addresses[2].clone();
    stack.api.trigger(job, Some(&victim)).await?;
    stack
        .api
        .wait_logs(job, Duration::from_secs(20), "the run started", |l| {
            l.len() == 1 && l[0]["triggerCode"] == 200
        })
        .await?;
    stack.kill_executor(&victim).await?;
    let logs = stack.api.wait_logs(job, Duration::from_secs(30), "the lost mark", |l| all_done(l, 1)).await?;
    ensure!(addresses(&logs) == [victim], "{logs:#?}");
    ensure!(logs[0]["handleCode"] == 500, "{logs:#?}");
    let msg = logs[0]["handleMsg"].as_str().unwrap_or_default();
    ensure!(msg.contains("Job result lost"), "the lost note: {msg}");
    Ok(())
}
