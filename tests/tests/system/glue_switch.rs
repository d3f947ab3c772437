//! A BEAN-only executor (`--glue-enabled=false`, xxl-job 3.5's `xxl.job.executor.glueenabled`)
//! as a real process beside the stack: a GLUE job routed to it fails at once with 3.5's message,
//! a BEAN job runs, and the admin's executor page says the executor runs BEAN handlers only.
//! And a script-enabled executor on a host without Python 2's `python` or PowerShell's `pwsh`:
//! those GLUE types fail with a message that names the missing interpreter.

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

/// Creates an automatic group for `app` and waits until the executor at `address` is its one
/// registered address; the group's id.
async fn registered_group(stack: &Stack, app: &str, title: &str, address: &str) -> anyhow::Result<i64> {
    let api = &stack.api;
    let created = api.post("/groups", json!({"appname": app, "title": title, "addressType": 0})).await?;
    let group = created["id"].as_i64().context("group id")?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while api.get(&format!("/groups/{group}")).await?["addressList"].as_str() != Some(address) {
        ensure!(tokio::time::Instant::now() < deadline, "the executor of {app} did not register");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(group)
}

/// GLUE(Python2) (`python`, as upstream 3.4.2 runs it) and GLUE(PowerShell) (`pwsh`) on an
/// executor process whose `PATH` is an empty directory: each run fails with the interpreter's
/// name and what to do, not an opaque error.
pub(crate) async fn missing_interpreters(stack: &Stack) -> anyhow::Result<()> {
    const APP: &str = "system-no-interpreters";
    let dir = tempfile::tempdir()?;
    let empty_path = dir.path().join("empty-bin");
    std::fs::create_dir_all(&empty_path)?;
    let path = empty_path.display().to_string();
    let admin = stack.admin_base().to_owned();
    let mut executor = Daemon::start_executor_with_env(
        APP,
        std::slice::from_ref(&admin),
        dir.path(),
        &["--enable-script-glue"],
        &[("PATH", path.as_str())],
    )
    .await?;
    let outcome = async {
        let group = registered_group(stack, APP, "no interpreters", &executor.address()).await?;
        for (glue_type, interpreter, source) in
            [("GLUE_PYTHON2", "python", "print 'hi'"), ("GLUE_POWERSHELL", "pwsh", "Write-Output hi")]
        {
            let job = stack
                .api
                .job(
                    group,
                    glue_type,
                    json!({"glueType": glue_type, "glueSource": source, "executorHandler": ""}),
                )
                .await?;
            stack.api.trigger(job, None).await?;
            let done = stack
                .api
                .wait_logs(job, Duration::from_secs(20), "the run's result", |l| {
                    l.len() == 1 && l[0]["handleCode"] != 0
                })
                .await?;
            let message = done[0]["handleMsg"].as_str().unwrap_or_default();
            ensure!(
                done[0]["handleCode"] == 500
                    && message
                        .contains(&format!("interpreter `{interpreter}`; is it installed and on PATH?")),
                "{glue_type}: {done:#?}"
            );
        }
        anyhow::Ok(())
    }
    .await;
    executor.stop().await?;
    outcome
}

async fn scenario(stack: &Stack, address: &str) -> anyhow::Result<()> {
    let api = &stack.api;
    let group = registered_group(stack, APP, "BEAN only", address).await?;

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
