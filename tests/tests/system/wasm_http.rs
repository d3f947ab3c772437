//! A Wasm component job doing a real job's work through real processes: the Rust `http-check`
//! sample calls an HTTP server on loopback that its network policy allows, with a URL from a
//! job variable and a bearer token from a job secret. The server sees the token; the job log
//! has the host's request line and never the token; no API read returns it. A second job whose
//! policy names another origin is refused with a job-log line and still reports. On the SQLite
//! stack the same job written in Python (componentize-py) and JavaScript (componentize-js) runs
//! too ([`other_languages`]) — once, because each executor compiles a 15–19 MB component.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use jobwheel_tests::sample_jobs::{FIRST_COMPONENT_COMPILE, guest_components, sample_component};
use jobwheel_tests::wait::wait_until;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::Stack;
use jobwheel_tests::api::all_done;

const SECRET: &str = "sys-secret-token-42";

/// An HTTP server on loopback answering `GET /check` and keeping each request's
/// `Authorization` header; the accept loop ends when the value is dropped.
pub(crate) struct CheckServer {
    pub(crate) origin: String,
    seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl CheckServer {
    pub(crate) async fn start() -> anyhow::Result<CheckServer> {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = Arc::clone(&seen);
        let app = Router::new().route(
            "/check",
            get(move |headers: HeaderMap| async move {
                let auth =
                    headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                record.lock().expect("lock").push(auth);
                "healthy"
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let origin = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
        let task = tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(CheckServer { origin, seen, task })
    }

    pub(crate) fn saw(&self, authorization: &str) -> bool {
        self.seen.lock().expect("lock").iter().any(|auth| auth == authorization)
    }

    /// How many requests it has answered.
    pub(crate) fn hits(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

impl Drop for CheckServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn run(stack: &Stack) -> anyhow::Result<()> {
    let server = CheckServer::start().await?;
    scenario(stack, &server).await
}

async fn scenario(stack: &Stack, server: &CheckServer) -> anyhow::Result<()> {
    let api = &stack.api;
    let origin = &server.origin;
    let allowed = upload(stack, "http-check allowed").await?;
    api.put(
        &format!("/jobs/{allowed}/grant"),
        json!({"httpAllow": [origin], "variables": {"CHECK_URL": format!("{origin}/check?key=abc")}}),
    )
    .await?;
    api.put(&format!("/jobs/{allowed}/secrets/CHECK_TOKEN"), json!({"value": SECRET})).await?;
    let refused = upload(stack, "http-check refused").await?;
    api.put(
        &format!("/jobs/{refused}/grant"),
        json!({"httpAllow": ["https://api.example.com"], "variables": {"CHECK_URL": format!("{origin}/check")}}),
    )
    .await?;
    api.trigger(allowed, None).await?;
    api.trigger(refused, None).await?;

    let logs = api.wait_logs(allowed, Duration::from_secs(90), "the allowed run", |l| all_done(l, 1)).await?;
    let log_id = logs[0]["id"].as_i64().context("log id")?;
    let content = api.content(log_id).await?;
    ensure!(logs[0]["handleCode"] == 200, "{logs:#?}\n{content}");
    ensure!(logs[0]["handleMsg"].as_str().unwrap_or_default().contains("status=200"), "{logs:#?}");
    ensure!(content.contains(&format!("[jobwheel] http GET {origin}/check -> 200")), "{content}");
    ensure!(!content.contains(SECRET), "the secret is in the job log: {content}");
    ensure!(server.saw(&format!("Bearer {SECRET}")), "the server saw no token");
    for path in [
        format!("/jobs/{allowed}/grant"),
        format!("/jobs/{allowed}"),
        format!("/logs/{log_id}"),
        format!("/logs?jobId={allowed}"),
    ] {
        let text = api.get_text(&path).await?;
        ensure!(!text.contains(SECRET), "GET {path} returns the secret: {text}");
    }
    let grant = api.get(&format!("/jobs/{allowed}/grant")).await?;
    ensure!(grant["secrets"][0]["name"] == "CHECK_TOKEN" && grant["secrets"][0]["set"] == true, "{grant}");
    ensure!(
        grant["history"].as_array().is_some_and(|h| h.len() == 2),
        "policy and secret changes recorded: {grant}"
    );

    let logs = api.wait_logs(refused, Duration::from_secs(90), "the refused run", |l| all_done(l, 1)).await?;
    let content = api.content(logs[0]["id"].as_i64().context("log id")?).await?;
    ensure!(logs[0]["handleCode"] == 500, "{logs:#?}");
    ensure!(content.contains("is not in the job's network policy"), "{content}");
    group_secret_goes_only_to_jobs_that_name_it(stack, server).await
}

/// An administrator's group secret reaches a job only when the job names it in `uses` (review
/// M7): a member's job that does not name it calls the same server without it.
async fn group_secret_goes_only_to_jobs_that_name_it(
    stack: &Stack,
    server: &CheckServer,
) -> anyhow::Result<()> {
    const GROUP_SECRET: &str = "group-secret-7f3a";
    let (api, origin) = (&stack.api, &server.origin);
    api.put(&format!("/groups/{}/secrets/CHECK_TOKEN", stack.group), json!({"value": GROUP_SECRET})).await?;
    let grant = |uses: &[&str]| json!({"httpAllow": [origin], "variables": {"CHECK_URL": format!("{origin}/check")}, "uses": uses});
    let unnamed = upload(stack, "http-check without the group secret").await?;
    api.put(&format!("/jobs/{unnamed}/grant"), grant(&[])).await?;
    api.trigger(unnamed, None).await?;
    let logs =
        api.wait_logs(unnamed, Duration::from_secs(90), "the run not naming it", |l| all_done(l, 1)).await?;
    ensure!(logs[0]["handleCode"] == 200, "{logs:#?}");
    ensure!(
        !server.saw(&format!("Bearer {GROUP_SECRET}")),
        "a job that does not name the group secret got it"
    );

    let named = upload(stack, "http-check with the group secret").await?;
    api.put(&format!("/jobs/{named}/grant"), grant(&["CHECK_TOKEN"])).await?;
    let view = api.get(&format!("/jobs/{named}/grant")).await?;
    ensure!(view["uses"] == json!(["CHECK_TOKEN"]), "the grant shows what the job names: {view}");
    api.trigger(named, None).await?;
    let logs = api.wait_logs(named, Duration::from_secs(90), "the run naming it", |l| all_done(l, 1)).await?;
    ensure!(logs[0]["handleCode"] == 200, "{logs:#?}");
    ensure!(server.saw(&format!("Bearer {GROUP_SECRET}")), "the job naming the group secret did not get it");
    let content = api.content(logs[0]["id"].as_i64().context("log id")?).await?;
    ensure!(!content.contains(GROUP_SECRET), "the group secret is in the job log: {content}");
    Ok(())
}

/// The same job in Python and JavaScript, run alone after the other scenarios: the executor
/// compiles each 15–19 MB component on its first run, which takes both cores for a while.
pub(crate) async fn other_languages(stack: &Stack) -> anyhow::Result<()> {
    let server = CheckServer::start().await?;
    let (api, origin) = (&stack.api, &server.origin);
    for (language, bytes) in guest_components("http-check")? {
        let digest = hex::encode(Sha256::digest(&bytes));
        let job = stack.wasm_job(&format!("http-check {language}"), bytes).await?;
        // The upload is announced to the group's executors (the ones still running: the lost-job
        // scenario killed one), which compile it before any trigger.
        let prepared = format!("wasm module prepared digest={digest}");
        wait_until(FIRST_COMPONENT_COMPILE, "every executor compiled the upload", || {
            stack.executors.iter().filter(|e| e.is_running()).all(|e| e.log_count(&prepared) == 1)
        })
        .await;
        let token = format!("{SECRET}-{language}");
        let grant = json!({"httpAllow": [origin], "variables": {"CHECK_URL": format!("{origin}/check")}});
        api.put(&format!("/jobs/{job}/grant"), grant).await?;
        api.put(&format!("/jobs/{job}/secrets/CHECK_TOKEN"), json!({"value": token})).await?;
        api.trigger(job, None).await?;
        let logs = api.wait_logs(job, FIRST_COMPONENT_COMPILE, "the run", |l| all_done(l, 1)).await?;
        let content = api.content(logs[0]["id"].as_i64().context("log id")?).await?;
        ensure!(logs[0]["handleCode"] == 200, "{language}: {logs:#?}\n{content}");
        ensure!(
            content.contains(&format!("[jobwheel] http GET {origin}/check -> 200")),
            "{language}: {content}"
        );
        ensure!(!content.contains(&token), "{language}: the secret is in the job log");
        ensure!(
            content.contains("(compiled module cached in memory)"),
            "{language}: the run compiled again: {content}"
        );
        ensure!(server.saw(&format!("Bearer {token}")), "{language}: the server saw no token");
    }
    Ok(())
}

/// A GLUE_WASM job running the Rust `http-check` component; its id.
async fn upload(stack: &Stack, desc: &str) -> anyhow::Result<i64> {
    stack.wasm_job(desc, sample_component("http-check")).await
}
