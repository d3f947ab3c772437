//! Data between workflow nodes on the executor's side, through its real `/run` and callbacks: a
//! node's trigger carries the instance's context (`workflowContext`) and its callback the node's
//! output — for a BEAN handler (`JobContext`), a shell script (a context file and an output
//! file), a Rust Wasm module (the guest SDK), and Python and JavaScript components (their SDKs,
//! whose sample steps also hand on the run's fire key: the guests see it).
//! A run that is not a workflow node reports no output; an output over the limit fails the run.

use std::time::Duration;

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::sample_jobs::{FIRST_COMPONENT_COMPILE, guest_components, sample_job};
use jobwheel_tests::{trigger, wasm_trigger};
use serde_json::{Value, json};

use crate::support::{Rig, SETTLE, rig};

fn context() -> Value {
    json!({"day": "2030-01-01", "extract": {"rows": [1, 2, 3]}})
}

/// Runs `body` as a workflow node with [`context`]; its callback's code, message and output.
async fn run_node(rig: &Rig, body: Value, log_id: i64) -> (i32, String, Option<Value>) {
    run_node_within(rig, body, log_id, SETTLE).await
}

/// [`run_node`], waiting up to `timeout` for the callback.
async fn run_node_within(
    rig: &Rig,
    mut body: Value,
    log_id: i64,
    timeout: Duration,
) -> (i32, String, Option<Value>) {
    body["workflowContext"] = context();
    // As the admin keys a node's run: `node:<instance>/<node>/<run>`.
    body["fireKey"] = json!(format!("node:9/step/{log_id}"));
    body["scheduledTime"] = json!(1_900_000_000_000_i64);
    assert_eq!(rig.executor.run(body).await, json!({"code": 200}));
    let result = rig.admin.callback_for(log_id, timeout).await;
    let output = result.output.map(|o| serde_json::from_str(&o).expect("the output is JSON"));
    (result.handle_code, result.handle_msg, output)
}

#[tokio::test]
async fn a_bean_handler_reads_the_context_and_sets_an_output() {
    let mut handlers = Handlers::new();
    handlers.register("summarize", |ctx: JobContext| async move {
        let rows = ctx.workflow_context().and_then(|c| c["extract"]["rows"].as_array().cloned());
        ctx.set_output(&json!({ "rows": rows.map(|r| r.len()), "node": ctx.param() }));
        Ok(())
    });
    handlers.register("flood", |ctx: JobContext| async move {
        ctx.set_output(&json!("x".repeat(70 * 1024)));
        Ok(())
    });
    let rig = rig(handlers, |_| {}).await;
    let (code, _, output) = run_node(&rig, trigger(1, 1, "BEAN", "summarize", "sum"), 1).await;
    assert_eq!((code, output), (200, Some(json!({"rows": 3, "node": "sum"}))));

    // Not a workflow node: no context, and whatever it sets is not reported.
    rig.executor.run(trigger(1, 2, "BEAN", "summarize", "sum")).await;
    let plain = rig.admin.callback_for(2, SETTLE).await;
    assert_eq!((plain.handle_code, plain.output), (200, None));

    let (code, msg, output) = run_node(&rig, trigger(2, 3, "BEAN", "flood", ""), 3).await;
    assert_eq!((code, output), (500, None));
    assert_eq!(msg, "the workflow output is over the limit of 65536 bytes");
}

#[tokio::test]
async fn a_script_reads_the_context_file_and_writes_the_output_file() {
    let rig = rig(Handlers::new(), |c| c.script_glue = true).await;
    let source = r#"
grep -o '"rows":\[[0-9,]*\]' "$JOBWHEEL_WORKFLOW_CONTEXT_FILE"
echo '{"count": 3, "by": "shell"}' > "$JOBWHEEL_WORKFLOW_OUTPUT_FILE"
echo "dir=$(dirname "$JOBWHEEL_WORKFLOW_OUTPUT_FILE")"
"#;
    let mut body = trigger(3, 10, "GLUE_SHELL", "", "");
    body["glueSource"] = json!(source);
    body["glueUpdatetime"] = json!(1);
    let (code, msg, output) = run_node(&rig, body, 10).await;
    assert_eq!((code, output), (200, Some(json!({"count": 3, "by": "shell"}))), "{msg}");
    let result_log = rig.admin.callback_for(10, SETTLE).await;
    let text = rig.executor.log_text(10, result_log.log_date_tim).await;
    assert!(text.contains(r#""rows":[1,2,3]"#), "the script read the context: {text}");
    let dir = text.lines().find_map(|l| l.split("dir=").nth(1)).expect("the script printed its directory");
    assert!(!std::path::Path::new(dir.trim()).exists(), "the run's workflow directory is removed");

    // A plain-text output is a string; without the file there is no output.
    let mut body = trigger(4, 11, "GLUE_SHELL", "", "");
    body["glueSource"] = json!("printf 'done for today' > \"$JOBWHEEL_WORKFLOW_OUTPUT_FILE\"\n");
    body["glueUpdatetime"] = json!(1);
    assert_eq!(run_node(&rig, body, 11).await.2, Some(json!("done for today")));
    let mut body = trigger(5, 12, "GLUE_SHELL", "", "");
    body["glueSource"] = json!("echo nothing to hand on\n");
    body["glueUpdatetime"] = json!(1);
    assert_eq!(run_node(&rig, body, 12).await.2, None);
}

#[tokio::test]
async fn a_rust_wasm_module_reads_the_context_and_sets_an_output() {
    let rig = rig(Handlers::new(), |_| {}).await;
    let digest = rig.admin.add_module(sample_job("workflow-step"));
    let (code, msg, output) = run_node(&rig, wasm_trigger(6, 20, &digest, "4"), 20).await;
    assert_eq!((code, msg.as_str()), (200, "4 rows for 2030-01-01"));
    assert_eq!(output, Some(json!({"day": "2030-01-01", "rows": [1, 2, 3, 4], "fire": "node:9/step/20"})));

    // Outside a workflow the guest sees no context (and says so).
    rig.executor.run(wasm_trigger(6, 21, &digest, "")).await;
    let plain = rig.admin.callback_for(21, SETTLE).await;
    assert_eq!(plain.handle_code, 500);
    assert!(plain.handle_msg.contains("no workflow context"), "{}", plain.handle_msg);
    assert_eq!(plain.output, None);
}

#[tokio::test]
async fn python_and_javascript_components_read_the_context_and_set_an_output() -> anyhow::Result<()> {
    let rig = rig(Handlers::new(), |_| {}).await;
    for (n, (language, bytes)) in guest_components("workflow-step")?.into_iter().enumerate() {
        let digest = rig.admin.add_module(bytes);
        let log_id = 30 + i64::try_from(n)?;
        let (code, msg, output) =
            run_node_within(&rig, wasm_trigger(7, log_id, &digest, ""), log_id, FIRST_COMPONENT_COMPILE)
                .await;
        assert_eq!(code, 200, "{language}: {msg}");
        let expected = match language {
            "python" => json!({"sum": 6, "of": "extract", "fire": format!("node:9/step/{log_id}")}),
            _ => json!({"count": 3, "of": "extract", "fire": format!("node:9/step/{log_id}")}),
        };
        assert_eq!(output, Some(expected), "{language}");
    }
    Ok(())
}

/// Runs `body` as one item of a map node (`workflowItem`, no context, the item as the
/// parameter); its callback's code, message and output.
async fn run_item(
    rig: &Rig,
    mut body: Value,
    log_id: i64,
    item: Value,
    timeout: Duration,
) -> (i32, String, Option<Value>) {
    body["executorParams"] = json!(item.as_str().map_or_else(|| item.to_string(), str::to_owned));
    body["workflowItem"] = item;
    // As the admin keys an item's attempt: `node:<instance>/<node>/<run>/item/<index>.<attempt>`.
    body["fireKey"] = json!(format!("node:9/each/{log_id}/item/0.1"));
    assert_eq!(rig.executor.run(body).await, json!({"code": 200}));
    let result = rig.admin.callback_for(log_id, timeout).await;
    let output = result.output.map(|o| serde_json::from_str(&o).expect("the output is JSON"));
    (result.handle_code, result.handle_msg, output)
}

/// A map item reaches every kind of job the way the context does, without the context: a BEAN
/// handler (`workflow_item`), a shell script (the item file), the Rust guest SDK, and the Python
/// and JavaScript SDKs; each hands its output back.
#[tokio::test]
async fn a_map_item_reaches_bean_script_rust_python_and_javascript_jobs() -> anyhow::Result<()> {
    let mut handlers = Handlers::new();
    handlers.register("itemize", |ctx: JobContext| async move {
        anyhow::ensure!(ctx.workflow_context().is_none(), "an item's run gets no context");
        ctx.set_output(&json!({ "item": ctx.workflow_item().cloned(), "param": ctx.param() }));
        Ok(())
    });
    let rig = rig(handlers, |c| c.script_glue = true).await;
    let (code, msg, output) =
        run_item(&rig, trigger(1, 40, "BEAN", "itemize", ""), 40, json!({"id": 7}), SETTLE).await;
    assert_eq!((code, output), (200, Some(json!({"item": {"id": 7}, "param": "{\"id\":7}"}))), "{msg}");

    let mut body = trigger(2, 41, "GLUE_SHELL", "", "");
    body["glueSource"] = json!(
        "test -z \"$JOBWHEEL_WORKFLOW_CONTEXT_FILE\" || exit 3\nprintf '{\"file\": %s, \"arg\": \"%s\"}' \"$(cat \"$JOBWHEEL_WORKFLOW_ITEM_FILE\")\" \"$1\" > \"$JOBWHEEL_WORKFLOW_OUTPUT_FILE\"\n"
    );
    body["glueUpdatetime"] = json!(1);
    let (code, msg, output) = run_item(&rig, body, 41, json!("s3://a.csv"), SETTLE).await;
    assert_eq!((code, output), (200, Some(json!({"file": "s3://a.csv", "arg": "s3://a.csv"}))), "{msg}");

    let digest = rig.admin.add_module(sample_job("workflow-step"));
    let (code, msg, output) = run_item(&rig, wasm_trigger(3, 42, &digest, ""), 42, json!(21), SETTLE).await;
    assert_eq!(
        (code, output),
        (200, Some(json!({"item": 21, "double": 42, "fire": "node:9/each/42/item/0.1"}))),
        "{msg}"
    );

    for (n, (language, bytes)) in guest_components("workflow-step")?.into_iter().enumerate() {
        let digest = rig.admin.add_module(bytes);
        let log_id = 50 + i64::try_from(n)?;
        let body = wasm_trigger(4, log_id, &digest, "");
        let (code, msg, output) =
            run_item(&rig, body, log_id, json!([1, "two"]), FIRST_COMPONENT_COMPILE).await;
        let expected =
            json!({"item": [1, "two"], "by": language, "fire": format!("node:9/each/{log_id}/item/0.1")});
        assert_eq!((code, output), (200, Some(expected)), "{language}: {msg}");
    }
    Ok(())
}
