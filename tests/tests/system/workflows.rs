//! A workflow across real processes: a diamond whose nodes are a Rust Wasm module, a Python
//! Wasm component, a shell script and a BEAN handler, each on whichever executor of the group
//! the route picks, passing data all the way — the start input to the Rust node, its rows to
//! the Python and shell nodes, and all of it to the BEAN node that joins them.

use anyhow::{Context as _, ensure};
use jobwheel_tests::openmetrics::{parse, scrape};
use jobwheel_tests::sample_jobs::{FIRST_COMPONENT_COMPILE, guest_components, sample_job};
use jobwheel_tests::wait::wait_until_async;
use serde_json::{Value, json};

use crate::Stack;

/// Counts the rows the `extract` node output, from the context file, without a JSON tool.
const COUNT_ROWS: &str = r#"rows=$(grep -o '"rows":\[[^]]*\]' "$JOBWHEEL_WORKFLOW_CONTEXT_FILE")
count=$(( $(printf '%s' "$rows" | tr -cd ',' | wc -c) + 1 ))
echo "counted $count rows"
printf '{"count": %d, "by": "shell"}' "$count" > "$JOBWHEEL_WORKFLOW_OUTPUT_FILE"
"#;

/// Runs alone (the Python component's first compile takes both cores for a while).
pub(crate) async fn diamond(stack: &Stack) -> anyhow::Result<()> {
    let Some((_, python)) = guest_components("workflow-step")?.into_iter().find(|(l, _)| *l == "python")
    else {
        return Ok(()); // not under CI and no components built: scripts/test.sh builds them
    };
    let api = &stack.api;
    let extract = stack.wasm_job("workflow: extract (Rust)", sample_job("workflow-step")).await?;
    let sum = stack.wasm_job("workflow: sum (Python)", python).await?;
    let shell = json!({"glueType": "GLUE_SHELL", "glueSource": COUNT_ROWS, "executorHandler": ""});
    let count = api.job(stack.group, "workflow: count (shell)", shell).await?;
    let report = api.job(stack.group, "workflow: report (BEAN)", json!({})).await?;
    let graph = json!({
        "nodes": [
            {"name": "extract", "jobId": extract, "param": "3"},
            {"name": "sum", "jobId": sum},
            {"name": "count", "jobId": count},
            {"name": "report", "jobId": report, "param": "ops"}
        ],
        "edges": [
            {"from": "extract", "to": "sum"}, {"from": "extract", "to": "count"},
            {"from": "sum", "to": "report"}, {"from": "count", "to": "report"}
        ]
    });
    let created = api
        .post("/workflows", json!({"name": "system diamond", "jobGroup": stack.group, "graph": graph}))
        .await?;
    let workflow = created["id"].as_i64().context("workflow id")?;
    let started = api
        .post(&format!("/workflows/{workflow}/instances"), json!({"context": {"day": "2031-02-03"}}))
        .await?;
    let instance = started["instanceId"].as_i64().context("instance id")?;

    let path = format!("/workflow-instances/{instance}");
    let view = wait_until_async(FIRST_COMPONENT_COMPILE, "the workflow instance ends", || {
        let path = &path;
        async move {
            let view = api.get(path).await.ok()?;
            (view["status"] != "RUNNING").then_some(view)
        }
    })
    .await;
    ensure!(view["status"] == "SUCCEEDED", "{view:#}");
    let runs = view["runs"].as_array().context("runs")?;
    let nodes: Vec<(&str, &str)> =
        runs.iter().map(|r| (r["node"].as_str().unwrap_or(""), r["status"].as_str().unwrap_or(""))).collect();
    ensure!(runs.len() == 4 && nodes.iter().all(|(_, s)| *s == "SUCCEEDED"), "each node once: {nodes:?}");
    let context = &view["context"];
    // Each Wasm node handed on its fire key as its SDK read it: `node:<instance>/<node>/<run>`.
    let fire = |node: &str| {
        let run = runs.iter().find(|r| r["node"] == node).and_then(|r| r["id"].as_i64()).unwrap_or(0);
        json!(format!("node:{instance}/{node}/{run}"))
    };
    ensure!(
        context["extract"] == json!({"day": "2031-02-03", "rows": [1, 2, 3], "fire": fire("extract")}),
        "{context:#}"
    );
    ensure!(context["sum"] == json!({"sum": 6, "of": "extract", "fire": fire("sum")}), "{context:#}");
    ensure!(context["count"] == json!({"count": 3, "by": "shell"}), "{context:#}");
    let mut inputs: Vec<Value> = context["report"]["inputs"].as_array().cloned().unwrap_or_default();
    inputs.sort_by_key(|v| v.as_str().unwrap_or("").to_owned());
    ensure!(
        context["report"]["hello"] == "ops"
            && inputs == vec![json!("count"), json!("day"), json!("extract"), json!("sum")],
        "the BEAN node saw every output before it: {context:#}"
    );
    // The admin counted the instance and measured the three hand-offs after a stored result.
    let text = scrape(&format!("{}/metrics", stack.admin_base()), Some(crate::API_TOKEN)).await?;
    let samples = parse(&text).await?;
    let succeeded = samples.sum("jobwheel_workflow_instances_ended_total", &[("result", "succeeded")]);
    let handoffs = samples.sum("jobwheel_workflow_handoff_seconds_count", &[]);
    ensure!(succeeded >= 1.0 && handoffs >= 3.0, "instances {succeeded}, hand-offs {handoffs}");
    // Each node's run is an ordinary job log, with the node's job and one trigger each.
    for (job, name) in [(extract, "extract"), (sum, "sum"), (count, "count"), (report, "report")] {
        let logs = api.logs(job).await?;
        ensure!(logs.len() == 1 && logs[0]["handleCode"] == 200, "{name}: {logs:#?}");
        let msg = logs[0]["triggerMsg"].as_str().unwrap_or_default();
        ensure!(msg.contains("Workflow trigger"), "{name}: {msg}");
    }
    Ok(())
}
