//! Alarm channels in the UI (docs/alarms.md): an administrator adds a WeCom robot channel
//! pointing at a local stand-in of WeCom's webhook, sends a test from the channel list and sees
//! the delivery — with WeCom's answer — in the delivery log; the story's job then chooses the
//! channel and a "should be done within", and the form shows both again when reopened.

use std::sync::{Arc, Mutex};

use anyhow::ensure;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::driver::Browser;

/// A stand-in for WeCom's group robot: it takes what WeCom takes (a markdown message) and
/// answers as WeCom does.
async fn wecom() -> anyhow::Result<(String, Arc<Mutex<Vec<Value>>>)> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route(
            "/cgi-bin/webhook/send",
            axum::routing::post(
                |State(seen): State<Arc<Mutex<Vec<Value>>>>, Json(body): Json<Value>| async move {
                    let ok = body["msgtype"] == "markdown"
                        && body["markdown"]["content"].as_str().is_some_and(|c| !c.is_empty());
                    seen.lock().expect("lock").push(body);
                    if ok {
                        Json(json!({"errcode": 0, "errmsg": "ok"}))
                    } else {
                        Json(json!({"errcode": 40008, "errmsg": "invalid message type"}))
                    }
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/cgi-bin/webhook/send?key=browser-robot-key", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, seen))
}

pub(crate) async fn run(browser: &Browser, job: i64) -> anyhow::Result<()> {
    let (url, seen) = wecom().await?;
    browser.click("#menu-alarms").await?;
    browser.click("#channel-add").await?;
    browser.fill("#channel-name", "ops-wecom").await?;
    browser.choose("#channel-kind", "wecom").await?;
    browser.fill("#channel-url", &url).await?;
    browser.click("#channel-modal [data-action=save]").await?;
    let table = browser.wait_contains("#channel-table", "ops-wecom").await?;
    ensure!(
        table.contains("127.0.0.1") && !table.contains("browser-robot-key"),
        "only the host is shown: {table}"
    );

    browser.click("tr[data-channel=\"ops-wecom\"] [data-action=test]").await?;
    let log = browser.refresh_until("#delivery-refresh", "#delivery-table", "\"errcode\":0").await?;
    ensure!(log.contains("ops-wecom") && log.contains("Test"), "the delivery log: {log}");
    let bodies = seen.lock().expect("lock").clone();
    ensure!(bodies.len() == 1, "one message reached WeCom: {bodies:?}");
    let content = bodies[0]["markdown"]["content"].as_str().unwrap_or_default().to_owned();
    ensure!(content.contains("Test message") && content.contains("ops-wecom"), "{content}");
    browser.click("#delivery-table [data-action=show]").await?;
    let sent = browser.wait_contains("#delivery-modal .delivery-request", "markdown").await?;
    ensure!(!sent.contains("browser-robot-key"), "the URL is not in the log: {sent}");
    browser.screenshot("alarms").await?;
    browser.click("#delivery-modal .modal-x").await?;

    browser.route(&format!("#/jobs/{job}/edit")).await?;
    browser.find("#alarmChannels-select").await?.select_by_label("ops-wecom").await?;
    browser.fill("#job-doneWithin", "600").await?;
    browser.click("#job-save").await?;
    browser.wait_contains("#job-table", "Say hello from the browser").await?;
    browser.route(&format!("#/jobs/{job}/edit")).await?;
    let within = browser.find("#job-doneWithin").await?.prop("value").await?;
    ensure!(within.as_deref() == Some("600"), "the duration is kept: {within:?}");
    let chosen = browser
        .js("return [...document.querySelector('#alarmChannels-select').selectedOptions].map((o) => o.textContent);")
        .await?;
    ensure!(chosen == json!(["ops-wecom"]), "the channel is kept: {chosen}");
    browser.click("#menu-jobs").await?;
    browser.wait_hash("/jobs").await?;
    Ok(())
}
