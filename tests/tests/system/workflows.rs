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
    let (instance, view) = run_to_end(stack, "system diamond", graph, json!({"day": "2031-02-03"})).await?;
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

/// A sub-workflow across real processes: the parent's `sub` node starts the child workflow
/// (the Rust Wasm step, through its guest SDK, then the shell count) with the parent's context;
/// the child's outputs come back as `sub`'s output, which the BEAN node after it sees.
pub(crate) async fn nested(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let extract = stack.wasm_job("sub-workflow: extract (Rust)", sample_job("workflow-step")).await?;
    let shell = json!({"glueType": "GLUE_SHELL", "glueSource": COUNT_ROWS, "executorHandler": ""});
    let count = api.job(stack.group, "sub-workflow: count (shell)", shell).await?;
    let report = api.job(stack.group, "sub-workflow: report (BEAN)", json!({})).await?;
    let child = json!({
        "nodes": [{"name": "extract", "jobId": extract, "param": "2"}, {"name": "count", "jobId": count}],
        "edges": [{"from": "extract", "to": "count"}]
    });
    let child = api
        .post("/workflows", json!({"name": "system child", "jobGroup": stack.group, "graph": child}))
        .await?;
    let child = child["id"].as_i64().context("child id")?;
    let parent = json!({
        "nodes": [{"name": "sub", "kind": "WORKFLOW", "workflowId": child}, {"name": "report", "jobId": report}],
        "edges": [{"from": "sub", "to": "report"}]
    });
    let (instance, view) = run_to_end(stack, "system parent", parent, json!({"day": "2031-02-04"})).await?;
    ensure!(view["status"] == "SUCCEEDED", "{view:#}");
    let runs = view["runs"].as_array().context("runs")?;
    let sub = runs.iter().find(|r| r["node"] == "sub").context("sub's run")?;
    let kid = sub["childInstanceId"].as_i64().context("the child instance")?;
    let child_view = api.get(&format!("/workflow-instances/{kid}")).await?;
    ensure!(
        child_view["status"] == "SUCCEEDED"
            && child_view["parentInstanceId"] == instance
            && child_view["triggerType"] == format!("WORKFLOW of {instance}"),
        "{child_view:#}"
    );
    let output = &view["context"]["sub"];
    ensure!(
        output["extract"]["day"] == "2031-02-04"
            && output["extract"]["rows"] == json!([1, 2])
            && output["count"] == json!({"count": 2, "by": "shell"}),
        "the child's outputs are sub's: {output:#}"
    );
    let inputs = view["context"]["report"]["inputs"].as_array().cloned().unwrap_or_default();
    ensure!(inputs.contains(&json!("sub")), "the node after sub saw its output: {view:#}");
    Ok(())
}

/// Map nodes across real processes: the start's five numbers are mapped by the Rust Wasm step
/// (its guest SDK reads each item), a shell script (the item file) and the BEAN demo handler,
/// two at a time each; the BEAN node after them (the reduce step) sees all three outputs, each
/// in item order.
pub(crate) async fn mapped(stack: &Stack) -> anyhow::Result<()> {
    let api = &stack.api;
    let wasm = stack.wasm_job("map: double (Rust)", sample_job("workflow-step")).await?;
    let square = r#"n=$(cat "$JOBWHEEL_WORKFLOW_ITEM_FILE")
printf '{"sq": %d, "arg": "%s"}' $((n * n)) "$1" > "$JOBWHEEL_WORKFLOW_OUTPUT_FILE"
"#;
    let shell = json!({"glueType": "GLUE_SHELL", "glueSource": square, "executorHandler": ""});
    let shell = api.job(stack.group, "map: square (shell)", shell).await?;
    let bean = api.job(stack.group, "map: hello (BEAN)", json!({})).await?;
    let report = api.job(stack.group, "map: report (BEAN)", json!({})).await?;
    let map = |name: &str, job: i64| json!({"name": name, "kind": "MAP", "jobId": job, "items": "/ns", "parallelism": 2});
    let graph = json!({
        "nodes": [map("double", wasm), map("square", shell), map("hello", bean), {"name": "report", "jobId": report, "param": "ops"}],
        "edges": [{"from": "double", "to": "report"}, {"from": "square", "to": "report"}, {"from": "hello", "to": "report"}]
    });
    let (instance, view) = run_to_end(stack, "system map", graph, json!({"ns": [1, 2, 3, 4, 5]})).await?;
    ensure!(view["status"] == "SUCCEEDED", "{view:#}");
    let runs = view["runs"].as_array().context("runs")?;
    let run =
        |node: &str| runs.iter().find(|r| r["node"] == node).and_then(|r| r["id"].as_i64()).unwrap_or(0);
    for node in ["double", "square", "hello"] {
        let counts = &runs.iter().find(|r| r["node"] == node).context("run")?["items"];
        ensure!(counts["total"] == 5 && counts["succeeded"] == 5, "{node}: {counts}");
    }
    let context = &view["context"];
    let doubled: Vec<Value> = (1..=5)
        .map(|n| json!({"item": n, "double": 2 * n, "fire": format!("node:{instance}/double/{}/item/{}.1", run("double"), n - 1)}))
        .collect();
    ensure!(context["double"] == Value::Array(doubled), "the Wasm items through the guest SDK: {context:#}");
    let squared: Vec<Value> = (1..=5).map(|n| json!({"sq": n * n, "arg": n.to_string()})).collect();
    ensure!(context["square"] == Value::Array(squared), "the shell items: {context:#}");
    let hello: Vec<Value> = (1..=5).map(|n| json!({"hello": n.to_string(), "item": n})).collect();
    ensure!(context["hello"] == Value::Array(hello), "the BEAN items: {context:#}");
    let inputs = context["report"]["inputs"].as_array().cloned().unwrap_or_default();
    ensure!(
        ["double", "square", "hello"].iter().all(|n| inputs.contains(&json!(n))),
        "the reduce step: {view:#}"
    );
    for (job, name) in [(wasm, "double"), (shell, "square"), (bean, "hello")] {
        let logs = api.logs(job).await?;
        ensure!(logs.len() == 5 && logs.iter().all(|l| l["handleCode"] == 200), "{name}: {logs:#?}");
    }
    // Dispatches after a freed slot were measured (to `/run` answered): at most the 3 × 3 items
    // that waited for a slot, none of the 3 × 2 fired when the maps started.
    let text = scrape(&format!("{}/metrics", stack.admin_base()), Some(crate::API_TOKEN)).await?;
    let dispatches = parse(&text).await?.sum("jobwheel_workflow_item_dispatch_seconds_count", &[]);
    ensure!((1.0..=9.0).contains(&dispatches), "item dispatches measured: {dispatches}");
    Ok(())
}

/// Saves workflow `name` with `graph`, starts an instance with `context` and waits until it is
/// no longer running: its id and view.
async fn run_to_end(stack: &Stack, name: &str, graph: Value, context: Value) -> anyhow::Result<(i64, Value)> {
    let api = &stack.api;
    let created =
        api.post("/workflows", json!({"name": name, "jobGroup": stack.group, "graph": graph})).await?;
    let workflow = created["id"].as_i64().context("workflow id")?;
    let started = api.post(&format!("/workflows/{workflow}/instances"), json!({"context": context})).await?;
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
    Ok((instance, view))
}
