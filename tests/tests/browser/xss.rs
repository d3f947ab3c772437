//! XSS probe: a job named with a `<script>` tag and a parameter with an `<img onerror>` go
//! through the job form, the job list, a trigger, the log list, the trigger message and the
//! log page; then the story's Wasm job, which echoes its parameter, runs with the `<img>`
//! payload so it comes back from the executor inside the job log, and as a workflow node's
//! output on the instance page of a workflow named with the `<script>` payload. Each must show the literal
//! text, no element may be created from it, and no script may run (the flag the payloads
//! would set stays unset).

use anyhow::{Context as _, ensure};
use serde_json::{Value, json};

use crate::driver::Browser;

const NAME: &str = "<script>window.__xss=1</script>";
const PARAM: &str = "<img src=x onerror=\"window.__xss=2\">";

pub(crate) async fn run(browser: &Browser, group_title: &str, echo_job: i64) -> anyhow::Result<()> {
    browser.route("#/jobs/new").await?;
    browser.find("#job-jobGroup").await?.select_by_label(group_title).await?;
    browser.fill("#job-jobDesc", NAME).await?;
    browser.fill("#job-author", "<b>author</b>").await?;
    browser.choose("#job-scheduleType", "NONE").await?;
    browser.choose("#job-glueType", "BEAN").await?;
    // No executor has this handler: the run fails, and its messages are shown too.
    browser.fill("#job-executorHandler", "xssProbeHandler").await?;
    browser.fill("#job-executorParam", PARAM).await?;
    browser.click("#job-save").await?;
    browser.wait_contains("#job-table", NAME).await.context("the job list shows the name as text")?;
    let id: i64 = browser
        .js("return [...document.querySelectorAll('#job-table tr')].find((r) => r.innerText.includes('__xss=1')).dataset.jobId;")
        .await?
        .as_str()
        .context("the probe's row")?
        .parse()?;
    assert_clean(browser, "the job list").await?;

    browser.job_action(id, "trigger").await?;
    ensure!(browser.find("#trigger-param").await?.prop("value").await?.as_deref() == Some(PARAM));
    browser.click("#trigger-modal [data-action=trigger]").await?;
    browser.wait_contains("#notices", "Triggered").await?;

    let list = format!("#/logs?jobId={id}&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00");
    browser.route(&list).await?;
    browser.refresh_until("#log-search", "#log-table .trigger-result", "Fail").await?;
    browser.wait_contains("#log-table", NAME).await.context("the log list shows the name as text")?;
    browser.click("#log-table .trigger-result [data-msg]").await?;
    let message = browser.wait_text("dialog .message", "the trigger message", |t| !t.is_empty()).await?;
    // Upstream's `<br>` separators become line breaks, not literal tags.
    let breaks = browser.js("return document.querySelectorAll('dialog .message br').length;").await?;
    ensure!(
        breaks.as_u64().unwrap_or(0) > 0 && !message.contains("<br>"),
        "line breaks from <br>: {message:?}"
    );
    assert_clean(browser, "the trigger message").await?;
    browser.click("dialog .modal-x").await?;

    let log_id =
        browser.js("return document.querySelector('#log-table tr[data-log-id]').dataset.logId;").await?;
    browser.route(&format!("#/logs/{}", log_id.as_str().context("a log id")?)).await?;
    browser.wait_contains("#main", PARAM).await.context("the log page shows the param as text")?;
    assert_clean(browser, "the log page").await?;
    executor_output(browser, echo_job).await.context("the job's own output in the execution log")?;
    workflow(browser, group_title, echo_job).await.context("a workflow's name and a node's output")
}

/// A workflow named with the `<script>` payload whose one node (the echo job) outputs the
/// `<img>` payload: the list, the drawing, the instance page and its output pane show text.
async fn workflow(browser: &Browser, group_title: &str, job: i64) -> anyhow::Result<()> {
    browser.route("#/workflows/new").await?;
    browser.fill("#workflow-name", NAME).await?;
    browser.find("#workflow-jobGroup").await?.select_by_label(group_title).await?;
    browser.click("#workflow-add-node").await?;
    browser.choose("#workflow-nodes tr[data-index=\"0\"] select[name=jobId]", &job.to_string()).await?;
    browser.fill("#workflow-nodes tr[data-index=\"0\"] .wf-param-input", PARAM).await?;
    browser.click("#workflow-save").await?;
    browser.wait_contains("#workflow-table", NAME).await?;
    assert_clean(browser, "the workflow list").await?;
    let id = browser
        .js("return [...document.querySelectorAll('#workflow-table tr[data-workflow]')]
             .find((r) => r.innerText.includes('__xss=1')).dataset.workflow;")
        .await?;
    let id = id.as_str().context("the probe workflow's row")?;
    browser.click(&format!("tr[data-workflow=\"{id}\"] .action-menu summary")).await?;
    browser.click(&format!("tr[data-workflow=\"{id}\"] [data-action=\"run\"]")).await?;
    browser.click("#workflow-run-modal [data-action=run]").await?;
    browser.wait_contains("#instance-status", "Succeeded").await?;
    browser.click("#instance-canvas g[data-node=step1]").await?;
    browser.wait_contains("#instance-output", PARAM).await?;
    browser.wait_contains("#main h2", NAME).await?;
    assert_clean(browser, "the workflow instance page").await
}

/// Executor-supplied text: the echo job prints `hello, <param>!` into its job log.
async fn executor_output(browser: &Browser, job: i64) -> anyhow::Result<()> {
    browser.click("#menu-jobs").await?;
    browser.job_action(job, "trigger").await?;
    browser.fill("#trigger-param", PARAM).await?;
    browser.click("#trigger-modal [data-action=trigger]").await?;
    browser.wait_contains("#notices", "Triggered").await?;
    let list = format!("#/logs?jobId={job}&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00");
    browser.route(&list).await?;
    // Newest first: the probe's run is the first row once it has succeeded.
    browser.refresh_until("#log-search", "#log-table tr[data-log-id] .handle-result", "Success").await?;
    let log_id =
        browser.js("return document.querySelector('#log-table tr[data-log-id]').dataset.logId;").await?;
    browser.route(&format!("#/logs/{}", log_id.as_str().context("a log id")?)).await?;
    browser.wait_contains("#log-console", &format!("hello, {PARAM}!")).await?;
    assert_clean(browser, "the execution log").await
}

/// No script ran and nothing was built from the payloads.
async fn assert_clean(browser: &Browser, page: &str) -> anyhow::Result<()> {
    let state = browser
        .js("return {
            flag: window.__xss === undefined ? null : window.__xss,
            images: document.querySelectorAll('img').length,
            scripts: [...document.scripts].filter((s) => s.textContent.includes('__xss')).length,
            bold: document.querySelectorAll('#main b').length,
        };")
        .await?;
    let expected = json!({"flag": Value::Null, "images": 0, "scripts": 0, "bold": 0});
    ensure!(state == expected, "on {page}: a payload became markup or ran: {state}");
    Ok(())
}
