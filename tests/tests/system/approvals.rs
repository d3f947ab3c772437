//! Approval of new capabilities through a live admin and real executors (docs/replay.md,
//! "Capabilities and approval"): a job runs the `hello` module; an agent's `write` token uploads
//! the `http-check` component, which calls out over HTTP — held (202), and the executor goes on
//! running `hello` for the job's triggers; a version that reaches no further (`hello` under a new
//! digest), uploaded through the same token, runs at once; an administrator's approval makes
//! `http-check` what the next trigger runs. Which module ran is read from each run's flight
//! record, written by the executor.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::api::all_done;
use jobwheel_tests::sample_jobs::{sample_component, sample_job, with_marker};
use serde_json::{Value, json};

use crate::Stack;

const WAIT: Duration = Duration::from_secs(90);

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let job = stack.wasm_job("approved http-check", sample_job("hello")).await?;
    let hello = api.get(&format!("/jobs/{job}/wasm")).await?["current"]["digest"].clone();
    let made = api.post("/tokens", json!({"name": "an agent", "scope": "write"})).await?;
    let agent = made["token"].as_str().context("token")?;

    let (status, held) = upload(stack, agent, job, sample_component("http-check")).await?;
    ensure!(status == 202, "a version that calls out waits: {status} {held}");
    let widening = &held["approval"]["widening"];
    ensure!(widening.as_array().is_some_and(|w| w.contains(&json!("imports http"))), "{held}");
    let ran = run_once(stack, job, 1).await?;
    ensure!(ran == hello, "the executor ran {ran}, not the current hello module {hello}");

    let (status, same) = upload(stack, agent, job, with_marker(&sample_job("hello"), 7)).await?;
    ensure!(status == 201, "a version that reaches no further runs at once: {status} {same}");
    let ran = run_once(stack, job, 2).await?;
    ensure!(ran == same["digest"], "the executor ran {ran}: {same}");

    let id = held["approval"]["id"].as_i64().context("approval id")?;
    let decided = api.post(&format!("/approvals/{id}/approve"), json!({"note": "system test"})).await?;
    ensure!(decided["status"] == "approved", "{decided}");
    let ran = run_once(stack, job, 3).await?;
    ensure!(ran == held["digest"], "after approval the executor ran {ran}: {held}");
    Ok(())
}

/// Uploads `module` to `job` through `token`: the status and the answer.
async fn upload(stack: &Stack, token: &str, job: i64, module: Vec<u8>) -> anyhow::Result<(u16, Value)> {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/jobs/{job}/wasm?remark=agent", stack.admin_base()))
        .bearer_auth(token)
        .header("content-type", "application/wasm")
        .body(module)
        .send()
        .await?;
    Ok((response.status().as_u16(), response.json().await?))
}

/// Triggers `job` (its `n`th run) and answers the digest of the module the executor ran, from
/// the run's flight record.
async fn run_once(stack: &Stack, job: i64, n: usize) -> anyhow::Result<Value> {
    stack.api.trigger(job, None).await?;
    let logs = stack.api.wait_logs(job, WAIT, "the run", |l| all_done(l, n)).await?;
    let log = logs[n - 1]["id"].as_i64().context("log id")?;
    let view = stack.api.get(&format!("/logs/{log}")).await?;
    ensure!(view["flight"]["module"].is_string(), "run {log} has a flight record: {view}");
    Ok(view["flight"]["module"].clone())
}
