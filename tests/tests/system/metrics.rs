//! `/metrics` during a system run: a stack of its own (admin with `--metrics-listen`, three
//! executors) runs a cron job, a Wasm job, a failing script and a job whose handler no executor
//! has; then both daemons' pages are parsed by the Prometheus project's OpenMetrics parser and
//! their counters compared with the log rows in the database.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use jobwheel_tests::TOKEN;
use jobwheel_tests::api::{Api, all_done};
use jobwheel_tests::cluster::free_port;
use jobwheel_tests::openmetrics::{Samples, parse, scrape};
use jobwheel_tests::sample_jobs::sample_job;
use serde_json::{Value, json};

use crate::{API_TOKEN, APP, Stack};

/// Log rows of a job whose `field` equals `value`.
fn count(logs: &[Value], field: &str, value: i64) -> f64 {
    logs.iter().filter(|l| l[field].as_i64() == Some(value)).count() as f64
}

/// The sum over the executors' pages.
fn executor_sum(pages: &[Samples], name: &str, labels: &[(&str, &str)]) -> f64 {
    pages.iter().map(|page| page.sum(name, labels)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_match_the_database_and_both_pages_parse() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("jobwheel.db").display());
    let metrics_port = free_port()?;
    let metrics_listen = format!("127.0.0.1:{metrics_port}");
    let stack = Stack::start(&url, &["--metrics-listen", &metrics_listen]).await?;
    let outcome = scenario(&stack, &metrics_listen).await;
    if outcome.is_err() {
        let tail = stack.admin.log_tail(40);
        stack.stop().await?;
        return outcome.context(tail);
    }
    stack.stop().await
}

async fn scenario(stack: &Stack, metrics_listen: &str) -> anyhow::Result<()> {
    let api = &stack.api;
    let admin_metrics = format!("{}/metrics", stack.admin_base());
    // The main listener wants an administrator's credentials.
    let anonymous = reqwest::get(&admin_metrics).await?;
    ensure!(anonymous.status() == 401, "anonymous /metrics: {}", anonymous.status());

    let cron = api
        .job(stack.group, "every second", json!({"scheduleType": "CRON", "scheduleConf": "* * * * * ?"}))
        .await?;
    let wasm = stack.wasm_job("wasm", sample_job("hello")).await?;
    let failing = api
        .job(
            stack.group,
            "exit 3",
            json!({"glueType": "GLUE_SHELL", "glueSource": "exit 3", "executorHandler": ""}),
        )
        .await?;
    let unknown = api.job(stack.group, "nobody has it", json!({"executorHandler": "noSuchHandler"})).await?;

    api.post(&format!("/jobs/{cron}/start"), json!({})).await?;
    for job in [wasm, wasm, failing, failing, unknown] {
        api.trigger(job, None).await?;
    }
    api.wait_logs(cron, Duration::from_secs(30), "three cron runs", |l| all_done(l, 3)).await?;
    api.post(&format!("/jobs/{cron}/stop"), json!({})).await?;
    // A trigger already in the ring still fires; every log of every job must have its end.
    let done = |logs: &[Value]| {
        logs.iter()
            .all(|l| l["triggerCode"].as_i64() != Some(200) || l["handleCode"].as_i64().unwrap_or(0) > 0)
    };
    let mut logs = Vec::new();
    for job in [cron, wasm, failing, unknown] {
        logs.push(api.wait_logs(job, Duration::from_secs(30), "every run ended", done).await?);
    }
    // Failed triggers and runs are alarmed by the fail monitor (no channel: status 3).
    for job in [failing, unknown] {
        api.wait_logs(job, Duration::from_secs(30), "the alarms", |l| {
            l.iter().all(|l| l["alarmStatus"] != 0)
        })
        .await?;
    }
    let logs = wait_stable(api, [cron, wasm, failing, unknown]).await?;
    let all: Vec<Value> = logs.concat();
    let (cron_logs, unknown_logs) = (&logs[0], &logs[3]);

    let admin_text = scrape(&admin_metrics, Some(API_TOKEN)).await?;
    let admin = parse(&admin_text).await?;
    let open = parse(&scrape(&format!("http://{metrics_listen}/metrics"), None).await?).await?;
    let mut executors = Vec::new();
    let mut texts = vec![admin_text];
    for executor in &stack.executors {
        let text = scrape(&format!("{}/metrics", executor.base), Some(TOKEN)).await?;
        executors.push(parse(&text).await?);
        texts.push(text);
    }
    dashboard_queries_exist(&texts.concat())?;

    let triggers = "jobwheel_triggers_total";
    for page in [&admin, &open] {
        ensure!(
            page.sum(triggers, &[("type", "cron"), ("result", "success")])
                == count(cron_logs, "triggerCode", 200)
        );
        ensure!(page.sum(triggers, &[("type", "manual"), ("result", "success")]) == 4.0, "{page:?}");
        ensure!(
            page.sum(triggers, &[("type", "manual"), ("result", "fail")])
                == count(unknown_logs, "triggerCode", 500)
        );
    }
    ensure!(admin.sum(triggers, &[]) == count(&all, "triggerCode", 200) + count(&all, "triggerCode", 500));
    let stored = "jobwheel_results_stored_total";
    ensure!(admin.sum(stored, &[("result", "success")]) == count(&all, "handleCode", 200), "{admin:?}");
    ensure!(admin.sum(stored, &[("result", "fail")]) == count(&all, "handleCode", 500), "{admin:?}");
    ensure!(
        admin.sum("jobwheel_trigger_lateness_seconds_count", &[]) == count(cron_logs, "triggerCode", 200)
    );
    ensure!(
        admin.sum("jobwheel_alarms_total", &[])
            == count(&all, "alarmStatus", 3) + count(&all, "alarmStatus", 2)
    );
    ensure!(admin.sum("jobwheel_executors_registered", &[("group", APP)]) == 3.0, "{admin:?}");
    ensure!(admin.sum("jobwheel_db_statement_seconds_count", &[]) > 0.0);
    ensure!(admin.has("jobwheel_ring_depth") && admin.has("jobwheel_callback_store_seconds_count"));

    let runs = "jobwheel_executor_runs_total";
    ensure!(
        executor_sum(&executors, runs, &[])
            == count(&all, "handleCode", 200) + count(&all, "handleCode", 500)
    );
    let by_glue =
        |glue, outcome| executor_sum(&executors, runs, &[("glue_type", glue), ("outcome", outcome)]);
    ensure!(by_glue("BEAN", "success") == count(cron_logs, "handleCode", 200));
    ensure!(by_glue("GLUE_WASM", "success") == 2.0 && by_glue("GLUE_SHELL", "fail") == 2.0);
    ensure!(executor_sum(&executors, "jobwheel_executor_wasm_fuel_used_count", &[]) == 2.0);
    ensure!(executor_sum(&executors, "jobwheel_executor_wasm_module_loads_total", &[]) >= 2.0);
    ensure!(
        executor_sum(&executors, "jobwheel_executor_run_duration_seconds_count", &[])
            == executor_sum(&executors, runs, &[])
    );
    prometheus_runs_the_dashboard(stack, metrics_listen).await
}

/// The jobs' logs once nothing changes between two reads a second apart (the last cron trigger
/// and the fail monitor's pass are done), so the counters have caught up with the rows.
async fn wait_stable(api: &Api, jobs: [i64; 4]) -> anyhow::Result<Vec<Vec<Value>>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut last = Vec::new();
    loop {
        let mut now = Vec::new();
        for job in jobs {
            now.push(api.logs(job).await?);
        }
        if now == last {
            return Ok(now);
        }
        ensure!(tokio::time::Instant::now() < deadline, "the logs kept changing: {now:#?}");
        last = now;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The Grafana dashboard's JSON (docs/grafana).
fn dashboard() -> anyhow::Result<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/grafana/jobwheel-dashboard.json");
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    Ok(serde_json::from_str(&text)?)
}

/// Every series the Grafana dashboard (docs/grafana) queries is a family one of the pages
/// declares.
fn dashboard_queries_exist(pages: &str) -> anyhow::Result<()> {
    let dashboard = dashboard()?.to_string();
    let mut names = std::collections::BTreeSet::new();
    let mut rest = dashboard.as_str();
    while let Some(at) = rest.find("jobwheel_") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    ensure!(names.len() >= 15, "the dashboard queries {names:?}");
    for name in &names {
        let family = ["_total", "_bucket", "_count", "_sum"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name);
        ensure!(
            pages.contains(&format!("# TYPE {family} ")),
            "the dashboard queries {name}, which no page declares"
        );
    }
    Ok(())
}

/// A real Prometheus (Debian's `prometheus`) scrapes the admin's `--metrics-listen` and every
/// executor with its access token as a bearer token; once each target is up, every query of
/// the dashboard's panels runs without error and returns series.
async fn prometheus_runs_the_dashboard(stack: &Stack, metrics_listen: &str) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let port = free_port()?;
    let executors: Vec<String> =
        stack.executors.iter().map(|e| format!("\"{}\"", e.base.trim_start_matches("http://"))).collect();
    let config = format!(
        "global: {{scrape_interval: 1s}}\n\
         scrape_configs:\n\
         - job_name: admin\n  static_configs: [{{targets: [\"{metrics_listen}\"]}}]\n\
         - job_name: executor\n  authorization: {{credentials: \"{TOKEN}\"}}\n  static_configs: [{{targets: [{}]}}]\n",
        executors.join(", ")
    );
    let config_file = dir.path().join("prometheus.yml");
    std::fs::write(&config_file, config)?;
    let log = dir.path().join("prometheus.log");
    let _prometheus = tokio::process::Command::new("prometheus")
        .arg(format!("--config.file={}", config_file.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .context("starting prometheus (Debian package `prometheus`; scripts/test.sh installs it)")?;
    let http = reqwest::Client::new();
    let query = |expr: String| {
        let http = http.clone();
        async move {
            let url = format!("http://127.0.0.1:{port}/api/v1/query");
            let answer: Value = http.get(url).query(&[("query", expr.as_str())]).send().await?.json().await?;
            anyhow::Ok(answer)
        }
    };
    // All four targets up, each scraped at least three times, so every rate has samples.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let up = query("count(count_over_time(up[1m]) >= 3 and up == 1)".to_owned()).await.ok();
        let value = up.as_ref().and_then(|a| a["data"]["result"][0]["value"][1].as_str()).unwrap_or_default();
        if value == "4" {
            break;
        }
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        ensure!(
            tokio::time::Instant::now() < deadline,
            "Prometheus did not scrape all four targets: {up:?}\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let panels = dashboard()?["panels"].as_array().cloned().unwrap_or_default();
    let mut checked = 0;
    for target in panels.iter().flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default()) {
        let expr =
            target["expr"].as_str().context("a query")?.replace("$admin", ".*").replace("$executor", ".*");
        let answer = query(expr.clone()).await?;
        ensure!(answer["status"] == "success", "{expr}: {answer}");
        let series = answer["data"]["result"].as_array().map_or(0, Vec::len);
        ensure!(series > 0, "{expr} returned no series: {answer}");
        checked += 1;
    }
    ensure!(checked >= 20, "dashboard queries checked: {checked}");
    Ok(())
}
