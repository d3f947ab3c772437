//! A BEAN-only executor (`--glue-enabled=false`, xxl-job 3.5's `xxl.job.executor.glueenabled`)
//! as a real process beside the stack: a GLUE job routed to it fails at once with 3.5's message,
//! a BEAN job runs, and the admin's executor page says the executor runs BEAN handlers only.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::cluster::Daemon;
use serde_json::json;

use crate::Stack;

const APP: &str = "system-bean-only";

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let admin = stack.admin_base().to_owned();
    let mut executor =
        Daemon::start_executor(APP, std::slice::from_ref(&admin), dir.path(), &["--glue-enabled=false"])
            .await?;
    let outcome = scenario(stack, &executor.address()).await;
    executor.stop().await?;
    outcome
}

async fn scenario(stack: &Stack, address: &str) -> anyhow::Result<()> {
    let api = &stack.api;
    let created =
        api.post("/groups", json!({"appname": APP, "title": "BEAN only", "addressType": 0})).await?;
    let group = created["id"].as_i64().context("group id")?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while api.get(&format!("/groups/{group}")).await?["addressList"].as_str() != Some(address) {
        ensure!(tokio::time::Instant::now() < deadline, "the BEAN-only executor did not register");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let script = api
        .job(
            group,
            "script on a BEAN-only executor",
            json!({"glueType": "GLUE_SHELL", "glueSource": "echo hi", "executorHandler": ""}),
        )
        .await?;
    api.trigger(script, None).await?;
    let refused = api
        .wait_logs(script, Duration::from_secs(20), "the script's trigger", |l| {
            l.len() == 1 && l[0]["triggerCode"] != 0
        })
        .await?;
    let message = refused[0]["triggerMsg"].as_str().unwrap_or_default();
    ensure!(
        refused[0]["triggerCode"] == 500
            && message.contains("fail, current glue type [GLUE(Shell)] not supported."),
        "3.5's refusal: {refused:#?}"
    );

    let bean = api.job(group, "BEAN on a BEAN-only executor", json!({})).await?;
    api.trigger(bean, None).await?;
    api.wait_logs(bean, Duration::from_secs(20), "the BEAN run", |l| {
        l.len() == 1 && l[0]["handleCode"] == 200
    })
    .await?;

    let executors = api.get(&format!("/groups/{group}/executors")).await?;
    ensure!(
        executors[0]["kind"] == "jobwheel" && executors[0]["glueEnabled"] == false,
        "the executor page says BEAN only: {executors}"
    );
    Ok(())
}
