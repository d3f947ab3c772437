//! The main story, as an operator clicks it: log in, add an executor group, add a GLUE_WASM
//! job, upload the `hello` sample module (after a rejected bad file), trigger it once, watch
//! the rolling log show the job's output and the log list show success. Along the way: the
//! next fire times, a GLUE shell job's editor with history and rollback, a user with a group
//! permission, calendars (`calendars.rs`), the dashboard and the language switch. Screenshots of each page are saved when
//! `JOBWHEEL_SCREENSHOTS` is set.

use std::path::Path;

use anyhow::{Context as _, ensure};
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::driver::Browser;
use crate::stack::{ADMIN_PASSWORD, ADMIN_USER, APP_NAME, Stack};

pub(crate) const GROUP_TITLE: &str = "Story executors";
const PARAM: &str = "browser";

/// Runs the story; answers the id of the GLUE_WASM job it created (it echoes its parameter).
pub(crate) async fn run(browser: &Browser, stack: &Stack, dir: &Path) -> anyhow::Result<i64> {
    log_in(browser).await.context("logging in")?;
    add_group(browser, stack).await.context("adding the executor group")?;
    let job = add_wasm_job(browser).await.context("adding the GLUE_WASM job")?;
    upload_module(browser, dir).await.context("uploading the module")?;
    trigger(browser, job).await.context("triggering the job once")?;
    watch_run(browser, job).await.context("following the run")?;
    what_if(browser, job, dir).await.context("a candidate tried on the recorded run")?;
    glue_editor(browser).await.context("the GLUE editor")?;
    glue_java(browser).await.context("a GLUE(Java) job")?;
    job_search(browser).await.context("tags and the fuzzy job search")?;
    crate::calendars::run(browser, dir, job).await.context("calendars and exclusion windows")?;
    transfer(browser, dir).await.context("exporting and importing jobs")?;
    add_user(browser).await.context("adding a user")?;
    group_token(browser).await.context("the group's own access token")?;
    audit_log(browser).await.context("the audit log")?;
    dashboard(browser).await.context("the dashboard")?;
    languages(browser).await.context("switching languages")?;
    Ok(job)
}

async fn log_in(browser: &Browser) -> anyhow::Result<()> {
    browser.go("/").await?;
    browser.find("#login-username").await?;
    browser.screenshot("login").await?;
    browser.fill("#login-username", ADMIN_USER).await?;
    browser.fill("#login-password", "wrong-password").await?;
    browser.click("#login-submit").await?;
    browser.wait_text("#login-error", "the login error", |t| !t.is_empty()).await?;
    browser.fill("#login-password", ADMIN_PASSWORD).await?;
    browser.click("#login-submit").await?;
    browser.find("#stat-jobs").await?;
    browser.wait_contains("#user-menu", ADMIN_USER).await?;
    Ok(())
}

async fn add_group(browser: &Browser, stack: &Stack) -> anyhow::Result<()> {
    browser.click("#menu-groups").await?;
    browser.click("#group-add").await?;
    browser.fill("#group-appname", APP_NAME).await?;
    browser.fill("#group-title", GROUP_TITLE).await?;
    // jobwheel's cap on the group's runs in flight, shown under the title.
    browser.fill("#group-maxRunning", "5").await?;
    browser.click("#group-modal [data-action=save]").await?;
    browser.wait_contains("#group-table", "cap: 5 runs in flight").await?;
    // The executor beats every second; its address shows once the group picks it up.
    browser
        .refresh_until("#group-filters button[type=submit]", "#group-table", &stack.executor_address)
        .await?;
    browser.screenshot("groups").await
}

async fn add_wasm_job(browser: &Browser) -> anyhow::Result<i64> {
    browser.click("#menu-jobs").await?;
    browser.click("#job-add").await?;
    browser.find("#job-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.fill("#job-jobDesc", "Say hello from the browser").await?;
    browser.fill("#job-author", "ui-test").await?;
    browser.fill("#job-tags", "Browser, story").await?;
    browser.choose("#job-scheduleType", "CRON").await?;
    browser.fill("#job-scheduleConf", "0 0 3 * * ?").await?;
    browser.choose("#job-glueType", "GLUE_WASM").await?;
    browser.fill("#job-executorParam", PARAM).await?;
    // Upstream's "next 5 fire times" for the schedule being typed.
    browser.click("#job-next-times").await?;
    let times = browser.wait_text("#next-times", "five fire times", |t| t.lines().count() == 5).await?;
    ensure!(times.lines().all(|l| l.ends_with("03:00:00")), "every fire time is at 03:00:00: {times}");
    browser.click("#next-times-modal .modal-x").await?;
    browser.js("window.scrollTo(0, 0);").await?;
    browser.screenshot("job-form").await?;
    browser.click("#job-save").await?;
    let hash = browser.wait_hash("/wasm").await?;
    let id = hash.trim_start_matches("/jobs/").trim_end_matches("/wasm");
    id.parse().with_context(|| format!("a job id in {hash}"))
}

async fn upload_module(browser: &Browser, dir: &Path) -> anyhow::Result<()> {
    // A file that is not a module is refused before anything is stored, with the reason.
    let bad = dir.join("not-a-module.wasm");
    std::fs::write(&bad, b"this is text, not WebAssembly")?;
    browser.find("#wasm-file").await?.send_keys(&bad.display().to_string()).await?;
    let error = browser.wait_contains("#wasm-error", "not-a-module.wasm").await?;
    ensure!(error.len() > "not-a-module.wasm cannot be used: ".len() + 5, "the error says why: {error}");
    ensure!(!browser.find("#wasm-upload").await?.is_enabled().await?, "upload stays disabled for a bad file");

    let module = jobwheel_tests::sample_jobs::sample_job("hello");
    let digest = hex::encode(Sha256::digest(&module));
    let path = dir.join("hello.wasm");
    std::fs::write(&path, &module)?;
    browser.find("#wasm-file").await?.send_keys(&path.display().to_string()).await?;
    browser.wait_contains("#wasm-digest", &digest).await?;
    browser.wait_contains("#wasm-info", "_start").await?;
    ensure!(browser.find("#wasm-error").await?.attr("hidden").await?.is_some(), "the earlier error is gone");
    browser.fill("#wasm-remark", "first hello").await?;
    browser.click("#wasm-upload").await?;
    let versions = browser.wait_contains("#wasm-version-table", &digest[..12]).await?;
    ensure!(
        versions.contains("first hello") && versions.contains("Current"),
        "the new version is current: {versions}"
    );
    // What the job is granted: a policy, a variable, and a secret that never comes back.
    browser.fill("#grant-policy", "https://api.example.com").await?;
    browser.fill("#grant-variables", "CHECK_URL=https://api.example.com/health").await?;
    browser.click("#grant-save").await?;
    browser.wait_contains("#grant-history", "network policy").await?;
    browser.fill("#grant-secret-name", "API_TOKEN").await?;
    browser.fill("#grant-secret-value", "browser-secret-value-1").await?;
    browser.click("#grant-secret-set").await?;
    let secrets = browser.wait_contains("#grant-secrets", "API_TOKEN").await?;
    ensure!(secrets.contains("set"), "the secret shows as set: {secrets}");
    let page = browser.js("return document.body.innerHTML").await?.to_string();
    ensure!(!page.contains("browser-secret-value-1"), "the secret value is not on the page");
    // Pick the file again so the screenshot shows the checked module next to the history.
    browser.find("#wasm-file").await?.send_keys(&path.display().to_string()).await?;
    browser.wait_contains("#wasm-digest", &digest).await?;
    browser.screenshot("wasm").await
}

async fn trigger(browser: &Browser, job: i64) -> anyhow::Result<()> {
    browser.click("#menu-jobs").await?;
    browser.wait_contains("#job-table", "Say hello from the browser").await?;
    browser.job_action(job, "trigger").await?;
    let param = browser.find("#trigger-param").await?;
    ensure!(
        param.prop("value").await?.as_deref() == Some(PARAM),
        "the trigger form starts with the job's param"
    );
    browser.click("#trigger-modal [data-action=trigger]").await?;
    browser.wait_contains("#notices", "Triggered").await?;
    browser.screenshot("jobs").await
}

async fn watch_run(browser: &Browser, job: i64) -> anyhow::Result<()> {
    // An explicit range, so a run just before midnight still matches "today".
    let list = format!("#/logs?jobId={job}&from=2000-01-01T00:00:00&to=2100-01-01T00:00:00");
    browser.route(&list).await?;
    browser.refresh_until("#log-search", "#log-table", "Execution log").await?;
    browser.click("#log-table [data-rolling]").await?;
    let output = browser.wait_contains("#log-console", &format!("hello, {PARAM}!")).await?;
    ensure!(output.contains(&format!("job {job}")), "the job's own log line: {output}");
    browser.wait_contains("#log-status", "[Rolling Log").await?;
    // The executor's `<br>` separators are line breaks, as in upstream's log view.
    let console = browser.wait_contains("#log-console", "Result").await?;
    let breaks = browser.js("return document.querySelectorAll('#log-console br').length;").await?;
    ensure!(
        breaks.as_u64().unwrap_or(0) > 0 && !console.contains("<br>"),
        "line breaks from <br>: {console:?}"
    );
    browser.screenshot("rolling-log").await?;
    replay(browser).await.context("replaying the run")?;
    browser.route(&list).await?;
    browser.refresh_until("#log-search", "#log-table .handle-result", "Success").await?;
    browser.wait_contains("#log-table .trigger-result", "Success").await?;
    browser.screenshot("logs").await?;
    // The admin keeps the run's lines (the executor ships them): the job's logs are searched.
    browser.route(&format!("{list}&text=HELLO,%20{PARAM}")).await?;
    browser.refresh_until("#log-search", "#log-matches", &format!("hello, {PARAM}!")).await?;
    browser.screenshot("log-search").await
}

/// The run was recorded (every Wasm run is, by default): from its page, replayed from its
/// journal, it is identical to the original, and the job's history gains no run.
async fn replay(browser: &Browser) -> anyhow::Result<()> {
    let hash = browser.wait_hash_containing("/logs/").await?;
    // Loaded again after the run ended, so the page knows its record: away and back.
    browser.route("#/logs").await?;
    browser.find("#log-table").await?;
    browser.route(&format!("#{hash}")).await?;
    browser.click("#log-replay").await?;
    let verdict = browser.wait_contains("#replay-verdict", "Identical to the original").await?;
    ensure!(verdict.contains("on http://127.0.0.1:"), "the executor that replayed it: {verdict}");
    let table = browser.wait_contains("#replay-table", "succeeded").await?;
    ensure!(table.contains("Output lines"), "{table}");
    browser.screenshot("replay").await
}

/// The same module uploaded again as a candidate: it does not become current, and its what-if
/// over the job's recorded run says it would have done the same.
async fn what_if(browser: &Browser, job: i64, dir: &Path) -> anyhow::Result<()> {
    browser.route(&format!("#/jobs/{job}/wasm")).await?;
    let path = dir.join("hello.wasm");
    browser.find("#wasm-file").await?.send_keys(&path.display().to_string()).await?;
    browser.wait_contains("#wasm-info", "_start").await?;
    browser.fill("#wasm-remark", "the same, as a candidate").await?;
    browser.click("#wasm-candidate").await?;
    browser.click("#wasm-upload").await?;
    let versions = browser.wait_contains("#wasm-version-table", "Candidate").await?;
    ensure!(versions.contains("Current"), "the first version stays current: {versions}");
    // The newest row is the candidate.
    browser.click("#wasm-version-table tbody tr:first-child [data-what-if]").await?;
    let summary = browser.wait_contains("#what-if-summary", "1 the same").await?;
    ensure!(summary.contains("0 different"), "{summary}");
    browser.wait_contains("#what-if-table", "Same").await?;
    browser.screenshot("what-if").await?;
    browser.click("#what-if-modal .modal-x").await?;
    Ok(())
}

async fn glue_editor(browser: &Browser) -> anyhow::Result<()> {
    browser.route("#/jobs/new").await?;
    browser.find("#job-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.fill("#job-jobDesc", "Shell job with history").await?;
    browser.fill("#job-author", "ui-test").await?;
    browser.choose("#job-scheduleType", "NONE").await?;
    browser.choose("#job-glueType", "GLUE_SHELL").await?;
    // The retry backoff's fields reach the job as typed.
    browser.fill("#job-executorFailRetryCount", "3").await?;
    browser.fill("#job-retryBackoff", "10").await?;
    browser.choose("#job-retryBackoffStrategy", "EXPONENTIAL").await?;
    browser.fill("#job-retryBackoffMax", "120").await?;
    browser.fill("#job-retryJitter", "20").await?;
    browser.click("#job-save").await?;
    browser.wait_hash("/glue").await?;
    let saved = browser
        .js("const id = location.hash.split('/')[2]; const x = new XMLHttpRequest();
             x.open('GET', '/api/v1/jobs/' + id, false); x.send(); return JSON.parse(x.responseText);")
        .await?;
    let backoff = (
        &saved["retryBackoff"],
        &saved["retryBackoffStrategy"],
        &saved["retryBackoffMax"],
        &saved["retryJitter"],
    );
    ensure!(backoff == (&10.into(), &"EXPONENTIAL".into(), &120.into(), &20.into()), "{saved}");
    browser.find(".CodeMirror").await?;
    // Highlighted by CodeMirror's shell mode (the template has a shebang comment and `echo`).
    browser
        .find(".CodeMirror .cm-comment, .CodeMirror .cm-builtin")
        .await
        .context("shell syntax highlighting")?;
    let first = "#!/bin/bash\necho \"hello from the GLUE editor\"\ndate\nexit 0\n";
    save_glue(browser, first, "print the date too").await?;
    save_glue(browser, "#!/bin/bash\necho \"second\"\n", "a second version").await?;
    // Upstream's "version backtrack": pick the earlier version, the editor shows its source,
    // and saving it makes it current again.
    let older = browser
        .js("return [...document.querySelectorAll('#glue-versions option')]
                .find((o) => o.value !== 'current' && o.text.includes('print the date too')).value;")
        .await?;
    browser.choose("#glue-versions", older.as_str().context("the earlier version in the list")?).await?;
    ensure!(editor_text(browser).await? == first, "the earlier version is loaded");
    save_glue(browser, first, "back to the date version").await?;
    let versions = browser.find("#glue-versions").await?.text().await?;
    ensure!(versions.lines().next().is_some_and(|l| l.contains("back to the date version")), "{versions}");
    browser.screenshot("glue").await
}

/// A GLUE(Java) job: created in the form, its Java template in the GLUE IDE with Java
/// highlighting, a notice that the group's one executor is jobwheel's (which fails GLUE(Java)),
/// and a new version saved.
async fn glue_java(browser: &Browser) -> anyhow::Result<()> {
    browser.route("#/jobs/new").await?;
    browser.find("#job-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.fill("#job-jobDesc", "GLUE(Java) job").await?;
    browser.fill("#job-author", "ui-test").await?;
    browser.choose("#job-scheduleType", "NONE").await?;
    browser.choose("#job-glueType", "GLUE_GROOVY").await?;
    browser.click("#job-save").await?;
    browser.wait_hash("/glue").await?;
    browser.find(".CodeMirror").await?;
    let template = editor_text(browser).await?;
    ensure!(template.contains("extends IJobHandler"), "the Java template: {template}");
    browser.find(".CodeMirror .cm-keyword").await.context("Java syntax highlighting")?;
    browser.wait_contains("#glue-java-notice", "1 jobwheel executor").await?;
    let source = template.replace("hello GLUE(Java)", "hello from the UI");
    save_glue(browser, &source, "java from the ui").await
}

/// Replaces the editor's text with `source` and saves it with `remark`.
async fn save_glue(browser: &Browser, source: &str, remark: &str) -> anyhow::Result<()> {
    browser
        .client
        .execute(
            "document.querySelector('.CodeMirror').CodeMirror.setValue(arguments[0]);",
            vec![json!(source)],
        )
        .await?;
    browser.click("#glue-save").await?;
    browser.fill("#glue-remark", remark).await?;
    browser.click("#glue-save-modal [data-action=save]").await?;
    browser.wait_contains("#glue-versions", remark).await?;
    ensure!(editor_text(browser).await? == source, "the editor shows the saved source");
    Ok(())
}

async fn editor_text(browser: &Browser) -> anyhow::Result<String> {
    let text = browser.js("return document.querySelector('.CodeMirror').CodeMirror.getValue();").await?;
    Ok(text.as_str().unwrap_or_default().to_owned())
}

async fn add_user(browser: &Browser) -> anyhow::Result<()> {
    browser.click("#menu-users").await?;
    browser.click("#user-add").await?;
    browser.fill("#user-username", "operator1").await?;
    browser.fill("#user-password", "op-pass-1").await?;
    browser.click("#user-modal .checkboxes input").await?;
    browser.click("#user-modal [data-action=save]").await?;
    let users = browser.wait_contains("#user-table", "operator1").await?;
    ensure!(users.contains(GROUP_TITLE), "the permitted group is listed: {users}");
    browser.screenshot("users").await
}

/// The job list shows the Wasm job's tags, finds it by a sloppy query and filters by its tag;
/// the shell job (no tags, another description) is left out both times.
async fn job_search(browser: &Browser) -> anyhow::Result<()> {
    browser.click("#menu-jobs").await?;
    let all = browser.wait_contains("#job-table", "Shell job with history").await?;
    ensure!(all.contains("browser") && all.contains("story"), "the tags are shown, lower-case: {all}");
    browser.fill("#job-filters input[name=q]", "sy hlo brwsr").await?;
    browser.click("#job-search").await?;
    browser
        .wait_text("#job-table", "only the fuzzy match", |t| {
            t.contains("Say hello from the browser") && !t.contains("Shell job with history")
        })
        .await?;
    browser.fill("#job-filters input[name=q]", "").await?;
    browser.choose("#job-filters select[name=tag]", "story").await?;
    browser.click("#job-search").await?;
    browser
        .wait_text("#job-table", "only the tagged job", |t| {
            t.contains("Say hello from the browser") && !t.contains("Shell job with history")
        })
        .await?;
    browser.screenshot("job-search").await
}

/// A sync request of the page's own session to the management API (the UI's cookie, no CSRF
/// needed for reads); the JSON answer.
async fn api_get(browser: &Browser, path: &str) -> anyhow::Result<serde_json::Value> {
    let script = format!(
        "const r = new XMLHttpRequest(); r.open('GET', '/api/v1{path}', false); r.send(); \
         return JSON.parse(r.responseText);"
    );
    browser.js(&script).await
}

/// The story group's three jobs (Wasm, shell, GLUE(Java)) are exported (the browser fetches the
/// file), and a file is imported that names the shell job and carries the exported GLUE(Java)
/// job under a new name: the dry run says "update" and "create", applying it changes the shell
/// job's author and brings the GLUE(Java) job back with its Java source, shown in the GLUE IDE.
async fn transfer(browser: &Browser, dir: &Path) -> anyhow::Result<()> {
    browser.click("#menu-jobs").await?;
    browser.find("#job-filters select[name=jobGroup]").await?.select_by_label(GROUP_TITLE).await?;
    browser.click("#job-search").await?;
    browser
        .wait_text("#job-table", "the story group's jobs", |t| t.contains("Shell job with history"))
        .await?;
    browser.click("#job-export").await?;
    browser.wait_contains("#notices", "3 job(s) exported").await?;
    let jobs = api_get(browser, "/jobs?limit=100").await?;
    let java_id = jobs["items"]
        .as_array()
        .and_then(|items| items.iter().find(|j| j["glueType"] == "GLUE_GROOVY"))
        .and_then(|j| j["id"].as_i64())
        .context("the GLUE(Java) job")?;
    let exported = api_get(browser, &format!("/jobs/export?ids={java_id}")).await?;
    let mut java = exported["jobs"][0].clone();
    ensure!(
        java["glueSource"].as_str().is_some_and(|s| s.contains("hello from the UI")),
        "exported with its source: {java}"
    );
    java["jobDesc"] = json!("GLUE(Java) moved");
    let file = dir.join("import.json");
    let entry = serde_json::json!({"appname": APP_NAME, "jobDesc": "Shell job with history", "author": "imported-author",
        "scheduleType": "NONE", "misfireStrategy": "DO_NOTHING", "executorRouteStrategy": "FIRST",
        "executorBlockStrategy": "SERIAL_EXECUTION", "glueType": "GLUE_SHELL", "tags": ["imported"]});
    std::fs::write(
        &file,
        serde_json::json!({"format": "jobwheel-jobs", "version": 1, "jobs": [entry, java]}).to_string(),
    )?;
    browser.click("#job-import").await?;
    browser.find("#import-file").await?.send_keys(&file.display().to_string()).await?;
    browser.wait_contains("#import-ready", "nothing has been written").await?;
    let items = browser.wait_contains("#import-items", "Shell job with history").await?;
    ensure!(items.contains("update"), "the dry run updates the existing job: {items}");
    ensure!(
        items.contains("GLUE(Java) moved") && items.contains("create"),
        "and creates the Java one: {items}"
    );
    browser.screenshot("import").await?;
    browser.click("#import-modal [data-action=apply]").await?;
    let table = browser.wait_contains("#job-table", "imported-author").await?;
    ensure!(table.contains("imported"), "the imported tag is shown: {table}");
    let moved = api_get(browser, "/jobs?jobDesc=GLUE(Java)%20moved").await?;
    let moved_id = moved["items"][0]["id"].as_i64().context("the imported GLUE(Java) job")?;
    browser.route(&format!("#/jobs/{moved_id}/glue")).await?;
    browser.find(".CodeMirror").await?;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !editor_text(browser).await?.contains("hello from the UI") {
        ensure!(tokio::time::Instant::now() < deadline, "the imported Java source in the GLUE IDE");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    browser.wait_contains("#glue-java-notice", "jobwheel executor").await?;
    Ok(())
}

/// The story's group gets its own access token (xxl-job 3.5): set in the dialog, shown once,
/// listed as the group's own, then removed again (the story's executor holds the global token).
async fn group_token(browser: &Browser) -> anyhow::Result<()> {
    const TOKEN: &str = "story-group-token-1";
    let open_dialog = format!(
        "const row = [...document.querySelectorAll('#group-table tr')].find((r) => r.textContent.includes('{APP_NAME}'));\
         row.querySelector('.group-token').click(); return true;"
    );
    browser.click("#menu-groups").await?;
    browser.wait_contains("#group-table", APP_NAME).await?;
    // The registered nodes dialog also shows what each executor is doing (asked of it).
    let open_nodes = format!(
        "const row = [...document.querySelectorAll('#group-table tr')].find((r) => r.textContent.includes('{APP_NAME}'));\
         row.querySelector('.row-actions button').click(); return true;"
    );
    browser.js(&open_nodes).await?;
    let activity = browser.wait_contains("#executor-activity", "no cap").await?;
    ensure!(activity.contains("127.0.0.1"), "the executor's address and numbers: {activity}");
    ensure!(activity.contains("jobwheel"), "the executor is told apart as jobwheel's: {activity}");
    browser.click("#nodes-modal .modal-x").await?;
    browser.js(&open_dialog).await?;
    browser.wait_contains("#group-token-state", "global token").await?;
    browser.fill("#group-token-value", "short").await?;
    browser.click("#group-token-modal [data-action=set]").await?;
    browser.wait_contains("#group-token-modal .alert-error", "8–255").await?;
    browser.fill("#group-token-value", TOKEN).await?;
    browser.click("#group-token-modal [data-action=set]").await?;
    browser.find("#group-token-shown").await?;
    let shown = browser.js("return document.querySelector('#group-token-shown').value;").await?;
    ensure!(shown == json!(TOKEN), "the token is shown once: {shown}");
    browser.screenshot("group-token").await?;
    browser.click("#group-token-once .modal-x").await?;
    let table = browser.wait_contains("#group-table", "Own (3.5)").await?;
    ensure!(!table.contains(TOKEN), "the list never shows the token: {table}");
    browser.js(&open_dialog).await?;
    browser.wait_contains("#group-token-state", "has its own token").await?;
    browser.click("#group-token-modal [data-action=remove]").await?;
    browser.click("dialog [data-action=ok]").await?;
    browser
        .wait_text("#group-table", "the group back on the global token", |t| {
            t.contains(APP_NAME) && !t.contains("Own (3.5)")
        })
        .await?;
    Ok(())
}

/// Every change of the story so far is in the audit log, with who made it; the filter narrows
/// it to job changes, and an entry's details show the resource after the change.
async fn audit_log(browser: &Browser) -> anyhow::Result<()> {
    browser.click("#menu-audit").await?;
    let all = browser.wait_contains("#audit-table", "user.create").await?;
    for action in [
        "session.login_failed",
        "session.login",
        "group.create",
        "job.create",
        "wasm.upload",
        "job.trigger",
        "glue.update",
        "group.token.set",
        "group.token.clear",
    ] {
        ensure!(all.contains(action), "{action} is in the audit log: {all}");
    }
    ensure!(all.contains(ADMIN_USER) && all.contains("127.0.0.1"), "who and from where: {all}");
    ensure!(!all.contains("op-pass-1"), "no password in the audit log: {all}");
    browser.screenshot("audit").await?;
    browser.choose("#audit-filters select[name=action]", "job.").await?;
    browser.click("#audit-filters button[type=submit]").await?;
    // Wait for the filtered rows themselves: while the table re-renders its text is empty.
    let jobs = browser
        .wait_text("#audit-table", "only job changes", |t| {
            t.contains("job.create") && !t.contains("user.create")
        })
        .await?;
    ensure!(jobs.contains("job.create") && !jobs.contains("group.create"), "{jobs}");
    browser.click("#audit-table tr[data-action='job.create'] .row-actions button").await?;
    browser.wait_contains("#audit-details", "jobDesc").await?;
    browser.click("#audit-modal .modal-x").await?;
    let open = browser.js("return document.querySelector('#audit-modal') !== null;").await?;
    ensure!(open == json!(false), "the details dialog closed");
    Ok(())
}

async fn dashboard(browser: &Browser) -> anyhow::Result<()> {
    browser.click("#menu-dashboard").await?;
    let four = "four jobs (Wasm, shell, GLUE(Java) and its imported copy)";
    browser.wait_text("#stat-jobs .stat-value", four, |t| t == "4").await?;
    browser.find("#chart-line").await?;
    browser.screenshot("dashboard").await
}

async fn languages(browser: &Browser) -> anyhow::Result<()> {
    browser.choose("#lang-select", "zh_CN").await?;
    browser.wait_contains("#menu-jobs", "任务管理").await?;
    browser.choose("#lang-select", "en").await?;
    browser.wait_contains("#menu-jobs", "Jobs").await?;
    Ok(())
}
