//! The flight recorder through a live admin and real executors (docs/replay.md): the Rust
//! `http-check` component, given a URL variable and a bearer-token secret, calls an HTTP server
//! on loopback; its run is recorded by default and replayed through
//! `POST /api/v1/logs/{id}/replay` — identical, while the server hears nothing and no run is
//! added to the job's history. A changed secret is not opened for a replay; module versions
//! uploaded as candidates are never run by triggers, and replaying the run against one shows
//! where they part (one run, or the job's recorded runs as a what-if table); a record past the
//! job's cap, and a run of a job that switched recording off, are refused with the reason; a
//! `read` API token may not replay.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::api::all_done;
use jobwheel_tests::sample_jobs::{sample_component, sample_job, with_marker};
use serde_json::{Value, json};

use crate::Stack;
use crate::wasm_http::CheckServer;

const SECRET: &str = "replay-secret-5d1e";
const WAIT: Duration = Duration::from_secs(90);

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let server = CheckServer::start().await?;
    let (api, origin) = (&stack.api, &server.origin);
    let job = stack.wasm_job("replayed http-check", sample_component("http-check")).await?;
    let grant = |extra: Value| {
        let mut grant =
            json!({"httpAllow": [origin], "variables": {"CHECK_URL": format!("{origin}/check?k=1")}});
        grant.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        grant
    };
    api.put(&format!("/jobs/{job}/grant"), grant(json!({}))).await?;
    api.put(&format!("/jobs/{job}/secrets/CHECK_TOKEN"), json!({"value": SECRET})).await?;
    let view = api.get(&format!("/jobs/{job}/grant")).await?;
    ensure!(view["recordRuns"] == true, "recording is on by default: {view}");

    api.trigger(job, None).await?;
    let logs = api.wait_logs(job, WAIT, "the recorded run", |l| all_done(l, 1)).await?;
    let log = logs[0]["id"].as_i64().context("log id")?;
    ensure!(logs[0]["handleCode"] == 200, "{logs:#?}\n{}", api.content(log).await?);
    let heard = server.hits();
    ensure!(heard == 1, "the run called the server once: {heard}");

    // The same run again, from its journal: identical, and the network is never reached.
    let replay = api.post(&format!("/logs/{log}/replay"), json!({})).await?;
    ensure!(replay["comparison"]["identical"] == true, "{replay:#}");
    ensure!(replay["sameModule"] == true && replay["unanswered"] == json!([]), "{replay:#}");
    ensure!(replay["original"]["lines"].as_u64().unwrap_or(0) >= 1, "{replay:#}");
    ensure!(stack.addresses.iter().any(|a| replay["executor"] == a.as_str()), "{replay:#}");
    ensure!(server.hits() == heard, "the replay reached the server");
    ensure!(!replay.to_string().contains(SECRET), "the secret is in the answer: {replay}");
    ensure!(api.logs(job).await?.len() == 1, "a replay is not a run of the job");
    // A body-less request replays the run's own module too.
    let bare = reqwest::Client::new()
        .post(format!("{}/api/v1/logs/{log}/replay", stack.admin_base()))
        .bearer_auth(crate::API_TOKEN)
        .send()
        .await?;
    ensure!(bare.status() == 200, "{}", bare.text().await?);

    // A replay runs the job's module with its secrets: a read token may not ask for one.
    let reader = api.post("/tokens", json!({"name": "replay reader", "scope": "read"})).await?;
    let reader =
        jobwheel_tests::api::Api::new(stack.admin_base(), reader["token"].as_str().context("token")?);
    let refused = reader.post(&format!("/logs/{log}/replay"), json!({})).await.expect_err("a read token");
    ensure!(
        refused.to_string().contains("403") && refused.to_string().contains("needs a run token"),
        "{refused}"
    );

    // A secret that changed since the run is not opened: refused before any executor is asked.
    api.put(&format!("/jobs/{job}/secrets/CHECK_TOKEN"), json!({"value": "another-value"})).await?;
    let refused = api.post(&format!("/logs/{log}/replay"), json!({})).await.expect_err("a changed secret");
    let text = refused.to_string();
    ensure!(text.contains("400") && text.contains("the secret CHECK_TOKEN changed since the run"), "{text}");
    ensure!(
        !text.contains("another-value") && !text.contains(SECRET),
        "a secret value in the refusal: {text}"
    );
    api.put(&format!("/jobs/{job}/secrets/CHECK_TOKEN"), json!({"value": SECRET})).await?;
    let again = api.post(&format!("/logs/{log}/replay"), json!({})).await?;
    ensure!(again["comparison"]["identical"] == true, "the same value opens again: {again:#}");

    // Candidates: uploaded for what-if replays, never run by triggers. Against the hello module
    // the run differs from its first line; the same code under a new digest does not.
    let current = api.get(&format!("/jobs/{job}/wasm")).await?["current"]["digest"].clone();
    let hello = candidate(stack, job, sample_job("hello")).await?;
    let same = candidate(stack, job, with_marker(&sample_component("http-check"), 1)).await?;
    let versions = api.get(&format!("/jobs/{job}/wasm")).await?;
    ensure!(versions["current"]["digest"] == current, "a candidate is not the current version: {versions:#}");
    ensure!(versions["versions"][0]["candidate"] == true, "{versions:#}");
    let what_if = api.post(&format!("/logs/{log}/replay"), json!({"version": hello})).await?;
    let comparison = &what_if["comparison"];
    ensure!(what_if["sameModule"] == false && comparison["identical"] == false, "{what_if:#}");
    ensure!(comparison["differs"].as_array().is_some_and(|d| d.contains(&json!("lines"))), "{what_if:#}");
    let first = &comparison["firstLine"];
    ensure!(first["line"] == 1, "{what_if:#}");
    ensure!(first["replay"].as_str().is_some_and(|l| l.starts_with("hello, world!")), "{what_if:#}");
    ensure!(
        first["original"].as_str().is_some_and(|l| l.starts_with(&format!("GET {origin}/check"))),
        "{what_if:#}"
    );
    let missing = api.post(&format!("/logs/{log}/replay"), json!({"version": hello + 1000})).await;
    ensure!(missing.is_err_and(|e| e.to_string().contains("has no module version")), "an unknown version");
    for (version, identical) in [(same, 1), (hello, 0)] {
        let table =
            api.post(&format!("/jobs/{job}/wasm/what-if"), json!({"version": version, "runs": 5})).await?;
        ensure!(table["runs"].as_array().map(Vec::len) == Some(1), "the one recorded run: {table:#}");
        ensure!(table["identical"] == identical && table["different"] == 1 - identical, "{table:#}");
        ensure!(table["runs"][0]["logId"] == log && table["notReplayed"] == 0, "{table:#}");
    }
    ensure!(server.hits() == heard, "the what-if replays reached the server");
    ensure!(api.logs(job).await?.len() == 1, "what-ifs add no run");

    // A record past the job's cap is kept as a reason, and the replay refused with it.
    api.put(&format!("/jobs/{job}/grant"), grant(json!({"journalMaxBytes": 256}))).await?;
    api.trigger(job, None).await?;
    let logs = api.wait_logs(job, WAIT, "the run past its cap", |l| all_done(l, 2)).await?;
    let capped = logs[1]["id"].as_i64().context("log id")?;
    ensure!(
        logs[1]["handleMsg"].as_str().is_some_and(|m| m.contains("status=200")),
        "triggers run the current version, not a candidate: {logs:#?}"
    );
    let refused = api.post(&format!("/logs/{capped}/replay"), json!({})).await.expect_err("past the cap");
    let text = refused.to_string();
    ensure!(
        text.contains("cannot be replayed") && text.contains("over the job's cap of 256 bytes"),
        "{text}"
    );

    // A job that switched recording off leaves no record.
    api.put(&format!("/jobs/{job}/grant"), grant(json!({"recordRuns": false}))).await?;
    let view = api.get(&format!("/jobs/{job}/grant")).await?;
    ensure!(
        view["recordRuns"] == false
            && view["history"][0]["change"].as_str().is_some_and(|c| c.contains("recording for replay: off")),
        "{view}"
    );
    api.trigger(job, None).await?;
    let logs = api.wait_logs(job, WAIT, "the unrecorded run", |l| all_done(l, 3)).await?;
    let plain = logs[2]["id"].as_i64().context("log id")?;
    ensure!(logs[2]["handleCode"] == 200, "{logs:#?}");
    let refused = api.post(&format!("/logs/{plain}/replay"), json!({})).await.expect_err("no record");
    ensure!(refused.to_string().contains("has no flight record"), "{refused}");
    Ok(())
}

/// Uploads `module` to `job` as a candidate; its version id.
async fn candidate(stack: &Stack, job: i64, module: Vec<u8>) -> anyhow::Result<i64> {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/jobs/{job}/wasm?remark=candidate&candidate=true", stack.admin_base()))
        .bearer_auth(crate::API_TOKEN)
        .header("content-type", "application/wasm")
        .body(module)
        .send()
        .await?;
    ensure!(response.status().is_success(), "upload: {}", response.text().await?);
    let version: Value = response.json().await?;
    ensure!(version["candidate"] == true, "{version}");
    version["id"].as_i64().context("version id")
}
