//! The MCP server (`/api/mcp`, docs/mcp.md) from the official Python MCP client (PyPI `mcp`,
//! `admin/tests/interop/mcp_client.py`) against a live admin with a real executor: the tools are
//! listed; a read token is refused a dry run and a trigger, a run token an edit; a write token's
//! dry-run create passes (a bad one names the field) and saves nothing; a run token is refused a
//! parameter of its own (review N3), triggers the job with the job's parameter and reads its log, then reads on from where it stopped; changes are in
//! the audit log with the token's name. Raw HTTP checks the edge: no token, a browser Origin.

use std::process::Command;

use jobwheel_admin::store::JobFilter;
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Env;
use crate::http::{TOKEN, eventually};

const APP: &str = "mcp-app";

fn python() -> Option<String> {
    match std::env::var("JOBWHEEL_PYXXL_PYTHON") {
        Ok(python) => Some(python),
        Err(_) if std::env::var_os("CI").is_some() => panic!("JOBWHEEL_PYXXL_PYTHON must be set in CI"),
        Err(_) => None, // scripts/test.sh provides it, with `mcp` installed
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_client_reads_runs_and_is_held_to_its_token_scope() -> anyhow::Result<()> {
    let Some(python) = python() else { return Ok(()) };
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = jobwheel_tests::fixtures::auto_group(env.store(), APP).await?;
    let mut echo = jobwheel_tests::fixtures::bean_job(group, "mcp echo", "echo");
    echo.schedule_type = "CRON".into();
    echo.schedule_conf = Some("0 0 3 * * ?".to_owned());
    echo.executor_param = Some("hello from mcp".to_owned());
    let job = env.store().add_job(&echo).await?;
    let dir = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new(APP, dir.path().join("logs"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![env.admin.base.clone()];
    config.job_logs = jobwheel_executor::JobLogs::Both;
    let mut handlers = Handlers::new();
    handlers.register("echo", |ctx: JobContext| async move {
        ctx.log(format!("echo {}", ctx.param()));
        Ok(())
    });
    let (stop_executor, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    eventually("the executor registered", || async {
        let g = env.store().load_group(group).await.ok()??;
        g.group.address_list.filter(|a| !a.is_empty()).map(|_| ())
    })
    .await;

    let root = env.login("root").await;
    let mut tokens = Vec::new();
    for scope in ["read", "run", "write"] {
        let (status, made) =
            root.post("/api/v1/tokens", json!({"name": format!("agent-{scope}"), "scope": scope})).await;
        assert_eq!((status, made["scope"].clone()), (201, json!(scope)), "{made}");
        tokens.push(made["token"].as_str().expect("token").to_owned());
    }
    let (status, refused) = root.post("/api/v1/tokens", json!({"name": "x", "scope": "admin"})).await;
    assert_eq!(status, 400, "{refused}");

    // The edge: no token, and a browser page's request.
    let url = format!("{}/api/mcp", env.admin.base);
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}});
    let accept = "application/json, text/event-stream";
    let anonymous = http.post(&url).header("Accept", accept).json(&init).send().await?;
    assert_eq!(anonymous.status(), 401);
    assert_eq!(anonymous.headers().get("www-authenticate").and_then(|v| v.to_str().ok()), Some("Bearer"));
    let from_page = http
        .post(&url)
        .bearer_auth(&tokens[0])
        .header("Accept", accept)
        .header("Origin", "https://evil.example")
        .json(&init)
        .send()
        .await?;
    assert_eq!(from_page.status(), 403, "a browser page is refused by its Origin");

    // A workflow instance waiting at its approval, for the agent to decide.
    let gated = json!({"name": "gated", "jobGroup": group.0, "graph": {
        "nodes": [{"name": "gate", "kind": "APPROVAL"}, {"name": "after", "jobId": job.0}],
        "edges": [{"from": "gate", "to": "after"}]}});
    let (status, flow) = root.post("/api/v1/workflows", gated).await;
    assert_eq!(status, 201, "{flow}");
    let (status, started) =
        root.post(&format!("/api/v1/workflows/{}/instances", flow["id"]), json!({})).await;
    assert_eq!(status, 201, "{started}");
    let instance = started["instanceId"].as_i64().expect("instance");

    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/mcp_client.py");
    let out = tokio::task::spawn_blocking({
        let args = [
            url.clone(),
            tokens[0].clone(),
            tokens[1].clone(),
            tokens[2].clone(),
            job.0.to_string(),
            group.0.to_string(),
            instance.to_string(),
        ];
        move || Command::new(python).arg(script).args(args).output()
    })
    .await??;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the MCP client failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout)?;

    let tools: Vec<&str> =
        seen["tools"].as_array().expect("tools").iter().filter_map(Value::as_str).collect();
    for tool in [
        "search_jobs",
        "get_job",
        "explain_schedule",
        "create_job",
        "update_job",
        "start_job",
        "stop_job",
        "trigger_job",
        "list_runs",
        "read_run_log",
        "search_job_logs",
        "search_workflows",
        "get_workflow",
        "start_workflow",
        "decide_workflow_approval",
        "get_workflow_instance",
        "start_backfill",
        "get_backfill",
        "cancel_backfill",
        "replay_run",
        "what_if_version",
        "list_approvals",
        "lateness_report",
        "dashboard",
    ] {
        assert!(tools.contains(&tool), "{tool} in {tools:?}");
    }
    let refused = |key: &str, needle: &str| {
        let step = &seen[key];
        assert_eq!(step["isError"], true, "{key}: {step}");
        assert!(step["text"].as_str().unwrap_or_default().contains(needle), "{key}: {step}");
    };
    refused("readCreate", "scope is read");
    refused("readTrigger", "scope is read");
    refused("runUpdate", "scope is run");
    refused("runParam", "needs a write token");
    refused("readDecide", "scope is read");
    refused("runDecide", "needs a write token");
    refused("decideBadNode", "is not a node name");
    refused("readBackfill", "scope is read");
    refused("readReplay", "scope is read");
    refused("replayBean", "has no flight record");
    refused("readWhatIf", "scope is read");
    refused("whatIfBean", "has no module version 1");
    assert_eq!(
        (seen["approvals"]["isError"].clone(), seen["approvals"]["text"].clone()),
        (json!(false), json!("[]"))
    );
    assert_eq!(seen["backfill"]["isError"], false, "{}", seen["backfill"]);
    let done: Value = serde_json::from_str(seen["backfillDone"]["text"].as_str().unwrap_or("{}"))?;
    assert_eq!(
        (done["status"].clone(), done["total"].clone(), done["succeeded"].clone()),
        (json!("DONE"), json!(3), json!(3)),
        "a run token's agent backfilled three past days on the real executor: {done}"
    );
    assert_eq!(seen["decide"]["isError"], false, "{}", seen["decide"]);
    let (_, view) = root.get(&format!("/api/v1/workflow-instances/{instance}")).await;
    let gate = view["runs"].as_array().into_iter().flatten().find(|r| r["node"] == "gate").cloned();
    let gate = gate.unwrap_or_else(|| panic!("the gate's run: {view}"));
    assert_eq!(
        gate["status"], "SUCCEEDED",
        "the write token's agent approved it (the run token's rejection was refused): {view}"
    );
    assert!(gate["message"].as_str().unwrap_or_default().ends_with(": an agent agrees"), "{view}");
    refused("dryRunBad", "scheduleConf");
    assert_eq!(seen["dryRun"]["isError"], false, "{}", seen["dryRun"]);
    assert!(seen["dryRun"]["text"].as_str().unwrap_or_default().contains("nothing was saved"));
    let made_by_agent = JobFilter { job_desc: Some("made by an agent".to_owned()), ..JobFilter::default() };
    assert_eq!(
        env.store()
            .page_jobs(&made_by_agent, jobwheel_admin::store::Page { offset: 0, limit: 5 })
            .await?
            .total,
        0,
        "a dry run saves nothing"
    );
    assert!(seen["search"]["text"].as_str().unwrap_or_default().contains("mcp echo"), "{}", seen["search"]);
    let explained: Value = serde_json::from_str(seen["explain"]["text"].as_str().unwrap_or("{}"))?;
    assert_eq!(explained["nextFireTimes"].as_array().map(Vec::len), Some(3), "{explained}");
    assert_eq!(seen["update"]["isError"], false, "{}", seen["update"]);
    assert_eq!(env.store().load_job(job).await?.expect("job").job.job_desc, "mcp echo, renamed");

    assert_eq!(seen["trigger"]["isError"], false, "{}", seen["trigger"]);
    let log: Value = serde_json::from_str(seen["log"]["text"].as_str().unwrap_or("{}"))?;
    assert!(log["text"].as_str().unwrap_or_default().contains("echo hello from mcp"), "{log}");
    let again: Value = serde_json::from_str(seen["logAgain"]["text"].as_str().unwrap_or("{}"))?;
    assert!(
        !again["text"].as_str().unwrap_or_default().contains("echo hello from mcp"),
        "read on, not again: {again}"
    );
    // The run's lines reached the admin (the executor ships them) and are found there.
    let found: Value = serde_json::from_str(seen["logSearch"]["text"].as_str().unwrap_or("{}"))?;
    let lines: Vec<&str> =
        found["matches"].as_array().into_iter().flatten().filter_map(|m| m["line"].as_str()).collect();
    assert!(lines.iter().any(|l| l.contains("echo hello from mcp")), "{found}");
    assert!(
        seen["report"]["text"].as_str().unwrap_or_default().contains("missedFireTimesByStrategy"),
        "{}",
        seen["report"]
    );
    assert_eq!(seen["dashboard"]["isError"], false);

    let (_, audit) = root.get("/api/v1/audit?limit=50").await;
    let entries = audit["items"].as_array().cloned().unwrap_or_default();
    let by_agent: Vec<&Value> =
        entries.iter().filter(|e| e["client"] == "MCP token \"agent-write\" from 127.0.0.1").collect();
    assert!(
        by_agent.iter().any(|e| e["action"] == "job.update"),
        "the edit is audited with the token's name: {audit}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["client"] == "MCP token \"agent-run\" from 127.0.0.1" && e["action"] == "job.trigger"),
        "{audit}"
    );
    assert!(!entries.iter().any(|e| e["action"] == "job.create"), "dry runs are not changes: {audit}");

    let _ = stop_executor.send(());
    executor.await??;
    Ok(())
}
