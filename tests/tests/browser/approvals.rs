//! The approval step (docs/replay.md, "Capabilities and approval"): an agent's `write` token
//! uploads a version of the story's Wasm job that reads the clock, which the current `hello`
//! module does not — held. The administrator sees it on the Approvals page and on the module
//! page with what is new and the version's reach, tries it (What if), and approves it there:
//! it becomes the current version.

use anyhow::{Context as _, ensure};

use crate::driver::Browser;

/// Reads the clock: a kind of host call `hello` does not use.
const CLOCK: &str = r#"(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $c (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;

/// `job` is the story's GLUE_WASM `hello` job; `base` the admin's address.
pub(crate) async fn run(browser: &Browser, base: &str, job: i64) -> anyhow::Result<()> {
    // The administrator makes a `write` token for an agent (as the tokens page would).
    let token = browser
        .js("const s = new XMLHttpRequest(); s.open('GET', '/api/v1/session', false); s.send();
             const x = new XMLHttpRequest(); x.open('POST', '/api/v1/tokens', false);
             x.setRequestHeader('Content-Type', 'application/json');
             x.setRequestHeader('X-CSRF-Token', JSON.parse(s.responseText).csrfToken);
             x.send(JSON.stringify({ name: 'ui agent', scope: 'write' }));
             return JSON.parse(x.responseText).token;")
        .await?;
    let token = token.as_str().context("a token")?;
    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/jobs/{job}/wasm?remark=from%20an%20agent"))
        .bearer_auth(token)
        .header("content-type", "application/wasm")
        .body(wat::parse_str(CLOCK)?)
        .send()
        .await?;
    ensure!(response.status() == 202, "held: {}", response.text().await?);

    browser.click("#menu-approvals").await?;
    let listed = browser.wait_contains("#approvals-table", "imports clocks").await?;
    ensure!(listed.contains("Waiting") && listed.contains("Module version"), "{listed}");
    let described: serde_json::Value = reqwest::Client::new()
        .get(format!("{base}/api/v1/jobs/{job}"))
        .bearer_auth(token)
        .send()
        .await?
        .json()
        .await?;
    let name = described["jobDesc"].as_str().context("the job's name")?;
    ensure!(listed.contains(&format!("{name} (#{job})")), "the list names the job {name:?}: {listed}");
    browser.screenshot("approvals").await?;

    browser.route(&format!("#/jobs/{job}/wasm")).await?;
    let versions = browser.wait_contains("#wasm-version-table", "Candidate").await?;
    ensure!(versions.contains("clocks"), "the held version's reach: {versions}");
    browser.wait_contains("#job-approvals", "imports clocks").await?;
    browser.click("#job-approvals [data-approval-what-if]").await?;
    browser.wait_contains("#what-if-table", "Peak memory").await?;
    browser.click("#what-if-modal .modal-x").await?;
    browser.click("#job-approvals [data-approve]").await?;
    browser.wait_contains("#notices", "approved").await?;
    browser.wait_contains("#job-approvals", "Approved").await?;
    let versions = browser.wait_contains("#wasm-version-table", "approved by").await?;
    let current = browser
        .js("return [...document.querySelectorAll('#wasm-version-table tbody tr')]
                .find((r) => r.textContent.includes('Current')).textContent;")
        .await?;
    let current = current.as_str().unwrap_or_default();
    ensure!(
        current.contains("approved by") && current.contains("clocks"),
        "now current: {current} ({versions})"
    );
    Ok(())
}
