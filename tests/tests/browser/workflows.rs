//! The workflow step: an operator builds a two-node workflow in the editor (nodes and an edge
//! from the tables, the drawing following), is told by the admin which node closes a cycle,
//! gives the edge a condition on data (refused with its line and column, then one the run
//! meets) and the first node a declared output shape, saves, runs an instance with a context,
//! and watches the instance page colour both nodes as they finish on the real executor — then
//! reads the picked node's run, its log link and its output, sees the context carry both
//! outputs, and reads the page in Chinese. Then a second workflow whose sub-workflow node starts
//! the first is built in the editor and run, and the operator follows the run to its child
//! instance and back; a third maps the job over a list of names (progress and ordered outputs
//! on the instance page). Last, an instance that waits at an approval node is approved from its
//! page with a comment.

use anyhow::{Context as _, ensure};
use serde_json::json;

use crate::driver::Browser;
use crate::story::GROUP_TITLE;

const NAME: &str = "Nightly from the browser";
/// The edge's condition on data.
const IF: &str = "output.startsWith('said hello') && parent.state == 'SUCCEEDED'";

/// `job` is the story's GLUE_WASM `hello` job: it reports "said hello to {param}", which is
/// its output as a workflow node.
pub(crate) async fn run(browser: &Browser, job: i64) -> anyhow::Result<()> {
    let id = build(browser, job).await.context("building the workflow in the editor")?;
    watch_instance(browser, id).await.context("running it and watching the instance")?;
    nest(browser, id).await.context("a sub-workflow built in the editor")?;
    map(browser, job).await.context("a map node built in the editor")?;
    approve(browser, job).await.context("deciding an approval on the instance page")
}

/// A workflow gated by an approval (made through the API with the page's own session): its
/// instance waits; the operator approves it on the instance page with a comment, and the job
/// after it runs.
async fn approve(browser: &Browser, job: i64) -> anyhow::Result<()> {
    let graph = json!({
        "nodes": [{"name": "signoff", "kind": "APPROVAL"}, {"name": "after", "jobId": job, "param": "approved"}],
        "edges": [{"from": "signoff", "to": "after"}]
    });
    let script = format!(
        "const call = (method, path, body, token) => {{
           const x = new XMLHttpRequest(); x.open(method, '/api/v1' + path, false);
           x.setRequestHeader('Content-Type', 'application/json');
           if (token) x.setRequestHeader('X-CSRF-Token', token);
           x.send(body ? JSON.stringify(body) : null); return JSON.parse(x.responseText); }};
         const token = call('GET', '/session').csrfToken;
         const group = call('GET', '/workflows')[0].jobGroup;
         const w = call('POST', '/workflows', {{ name: 'Gated', jobGroup: group, graph: {graph} }}, token);
         return call('POST', `/workflows/${{w.id}}/instances`, {{}}, token).instanceId;"
    );
    let instance = browser.js(&script).await?;
    let instance = instance.as_i64().with_context(|| format!("an instance id: {instance}"))?;
    browser.route(&format!("#/workflow-instances/{instance}")).await?;
    browser.wait_text("#instance-canvas", "the approval to wait", |_| true).await?;
    browser.click("#instance-canvas g[data-node=signoff]").await?;
    browser.wait_contains("#instance-runs", "Waiting for approval").await?;
    browser.click("#instance-decide").await?;
    browser.fill("#decide-comment", "looks right").await?;
    browser.click("#decide-modal [data-action=approve]").await?;
    browser
        .wait_text("#instance-status", "the approved instance to succeed", |t| t.contains("Succeeded"))
        .await?;
    let runs = browser.wait_contains("#instance-runs", "approved by").await?;
    ensure!(runs.contains("looks right"), "the decision and its comment are shown: {runs}");
    Ok(())
}

/// A workflow whose one node starts workflow `inner` (chosen in the editor by kind and name):
/// its instance succeeds once the child has, and the run links the child instance, whose page
/// links back.
async fn nest(browser: &Browser, inner: i64) -> anyhow::Result<()> {
    browser.route("#/workflows").await?;
    browser.click("#workflow-add").await?;
    browser.fill("#workflow-name", "Outer").await?;
    browser.find("#workflow-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.click("#workflow-add-node").await?;
    browser.fill(&node_field(0, ".wf-node-name-input"), "inner").await?;
    browser.choose(&node_field(0, "select[name=kind]"), "WORKFLOW").await?;
    browser.choose(&node_field(0, "select[name=workflowId]"), &inner.to_string()).await?;
    browser.wait_contains("#workflow-canvas", &format!("↳ {NAME}")).await?;
    browser.click("#workflow-save").await?;
    browser.wait_contains("#workflow-table", "Outer").await?;
    let outer = browser
        .js("return [...document.querySelectorAll('#workflow-table tr[data-workflow]')]
             .find((tr) => tr.textContent.includes('Outer')).dataset.workflow;")
        .await?;
    let outer: i64 = outer.as_str().context("the outer workflow's row")?.parse()?;
    browser.click(&format!("tr[data-workflow=\"{outer}\"] .action-menu summary")).await?;
    browser.click(&format!("tr[data-workflow=\"{outer}\"] [data-action=\"run\"]")).await?;
    browser.click("#workflow-run-modal [data-action=run]").await?;
    browser
        .wait_text("#instance-status", "the outer instance to succeed", |t| t.contains("Succeeded"))
        .await?;
    browser.click("#instance-canvas g[data-node=inner]").await?;
    let runs = browser.wait_contains("#instance-runs", "child instance #").await?;
    ensure!(runs.contains("succeeded"), "the run says how its child ended: {runs}");
    browser.click("#instance-runs a.run-child").await?;
    let parent = browser.wait_contains("#instance-parent", "started by instance #").await?;
    browser
        .wait_text("#instance-status", "the child to show as succeeded", |t| t.contains("Succeeded"))
        .await?;
    let states = browser
        .js("return [...document.querySelectorAll('#instance-canvas g.wf-node')].map((g) => g.dataset.status);")
        .await?;
    ensure!(states == json!(["SUCCEEDED", "SUCCEEDED"]), "the child ran both nodes: {states}");
    browser.click("#instance-parent").await?;
    browser.wait_contains("#instance-canvas", "inner").await?;
    ensure!(parent.contains('#'), "{parent}");
    Ok(())
}

/// A workflow whose one node maps the hello job over the start's `names` (kind, items and
/// parallelism chosen in the editor): refused without items, then run over three names; the
/// instance page shows the map's progress (all three done) and its output, the three greetings
/// in the names' order.
async fn map(browser: &Browser, job: i64) -> anyhow::Result<()> {
    browser.route("#/workflows").await?;
    browser.click("#workflow-add").await?;
    browser.fill("#workflow-name", "Greet everyone").await?;
    browser.find("#workflow-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.click("#workflow-add-node").await?;
    browser.fill(&node_field(0, ".wf-node-name-input"), "each").await?;
    browser.choose(&node_field(0, "select[name=kind]"), "MAP").await?;
    browser.choose(&node_field(0, "select[name=jobId]"), &job.to_string()).await?;
    browser.click("#workflow-save").await?;
    browser.wait_contains("#workflow-error", "a map needs its items").await?;
    browser.fill(&node_field(0, ".wf-items-input"), "/names").await?;
    browser.fill(&node_field(0, ".wf-parallelism-input"), "2").await?;
    browser.wait_contains("#workflow-canvas", "⇉ /names").await?;
    browser.click("#workflow-save").await?;
    browser.wait_contains("#workflow-table", "Greet everyone").await?;
    let mapped = browser
        .js("return [...document.querySelectorAll('#workflow-table tr[data-workflow]')]
             .find((tr) => tr.textContent.includes('Greet everyone')).dataset.workflow;")
        .await?;
    let mapped: i64 = mapped.as_str().context("the map workflow's row")?.parse()?;
    browser.click(&format!("tr[data-workflow=\"{mapped}\"] .action-menu summary")).await?;
    browser.click(&format!("tr[data-workflow=\"{mapped}\"] [data-action=\"run\"]")).await?;
    browser.fill("#workflow-run-context", r#"{"names": ["ann", "bob", "cy"]}"#).await?;
    browser.click("#workflow-run-modal [data-action=run]").await?;
    browser.wait_text("#instance-status", "the map instance to succeed", |t| t.contains("Succeeded")).await?;
    browser.click("#instance-canvas g[data-node=each]").await?;
    let counts = browser.wait_contains("#instance-map-counts", "of 3").await?;
    ensure!(counts.contains("3 done") && counts.contains("0 failed"), "the map's progress: {counts}");
    let output = browser.wait_contains("#instance-output", "ann").await?;
    let (ann, bob, cy) = (output.find("to ann"), output.find("to bob"), output.find("to cy"));
    ensure!(ann < bob && bob < cy && cy.is_some(), "the greetings in the names' order: {output}");
    Ok(())
}

/// The CSS of node row `index`'s `field`.
fn node_field(index: usize, field: &str) -> String {
    format!("#workflow-nodes tr[data-index=\"{index}\"] {field}")
}

async fn build(browser: &Browser, job: i64) -> anyhow::Result<i64> {
    browser.click("#menu-workflows").await?;
    browser.wait_contains("#workflow-table", "No workflows yet").await?;
    browser.click("#workflow-add").await?;
    browser.fill("#workflow-name", NAME).await?;
    browser.find("#workflow-jobGroup").await?.select_by_label(GROUP_TITLE).await?;
    browser.click("#workflow-add-node").await?;
    browser.click("#workflow-add-node").await?;
    for (index, name, param) in [(0, "extract", ""), (1, "load", "workflow")] {
        browser.fill(&node_field(index, ".wf-node-name-input"), name).await?;
        browser.choose(&node_field(index, "select[name=jobId]"), &job.to_string()).await?;
        browser.fill(&node_field(index, ".wf-param-input"), param).await?;
    }
    browser.click("#workflow-add-edge").await?;
    let drawn = browser
        .js("return [...document.querySelectorAll('#workflow-canvas g.wf-node')].map((g) => g.dataset.node)
             .concat(document.querySelectorAll('#workflow-canvas path.wf-edge').length);")
        .await?;
    ensure!(drawn == json!(["extract", "load", 1]), "the drawing follows the tables: {drawn}");

    // A second edge back closes a cycle: the admin refuses it, naming the node, and nothing is saved.
    browser.click("#workflow-add-edge").await?;
    browser.choose("#workflow-edges tr[data-index=\"1\"] select[name=from]", "load").await?;
    browser.choose("#workflow-edges tr[data-index=\"1\"] select[name=to]", "extract").await?;
    browser.click("#workflow-save").await?;
    let error = browser.wait_contains("#workflow-error", "depends on itself").await?;
    ensure!(error.contains("extract") || error.contains("load"), "the error names the node: {error}");
    browser.click("#workflow-edges tr[data-index=\"1\"] [data-action=remove-edge]").await?;

    // A condition on data: refused with where it is wrong, then one the real run satisfies
    // (extract's output is the hello job's message).
    browser.fill("#workflow-edges tr[data-index=\"0\"] .wf-if-input", "output.startsWith(").await?;
    browser.click("#workflow-save").await?;
    let error = browser.wait_contains("#workflow-error", "its if does not check at line 1").await?;
    ensure!(error.contains("extract") && error.contains("column"), "the error says where: {error}");
    browser.fill("#workflow-edges tr[data-index=\"0\"] .wf-if-input", IF).await?;
    browser.wait_contains("#workflow-canvas", "if output.startsWith").await?;
    // Typed step data: extract declares its output (the hello job's message, a string); the
    // row's summary shows the declared shape.
    browser.click(&node_field(0, ".wf-schemas summary")).await?;
    browser.fill(&node_field(0, ".wf-outputSchemaText"), r#"{"type": "string", "minLength": 5}"#).await?;
    browser.wait_contains(&node_field(0, ".wf-schemas summary"), "out string").await?;
    browser.js("window.scrollTo(0, 0);").await?;
    browser.screenshot("workflow-editor").await?;
    browser.click("#workflow-save").await?;
    let table = browser.wait_contains("#workflow-table", NAME).await?;
    ensure!(table.contains("2 node(s), 1 edge(s)"), "the list shows the graph's size: {table}");
    let id = browser
        .js("return document.querySelector('#workflow-table tr[data-workflow]').dataset.workflow;")
        .await?;
    let id = id.as_str().context("a workflow row")?.parse()?;
    let saved = browser
        .js(&format!(
            "const x = new XMLHttpRequest(); x.open('GET', '/api/v1/workflows/{id}', false); x.send();
             return JSON.parse(x.responseText).graph;"
        ))
        .await?;
    ensure!(
        saved["edges"] == json!([{"from": "extract", "to": "load", "when": "SUCCESS", "if": IF}])
            && saved["nodes"][1]["param"] == json!("workflow")
            && saved["nodes"][0]["jobId"] == json!(job)
            && saved["nodes"][0]["x"].is_number()
            && saved["nodes"][0]["outputSchema"] == json!({"type": "string", "minLength": 5}),
        "the saved graph: {saved}"
    );
    Ok(id)
}

async fn watch_instance(browser: &Browser, id: i64) -> anyhow::Result<()> {
    browser.click(&format!("tr[data-workflow=\"{id}\"] .action-menu summary")).await?;
    browser.click(&format!("tr[data-workflow=\"{id}\"] [data-action=\"run\"]")).await?;
    browser.fill("#workflow-run-context", r#"{"day": "2030-01-01"}"#).await?;
    browser.click("#workflow-run-modal [data-action=run]").await?;
    browser.wait_text("#instance-status", "the instance to succeed", |t| t.contains("Succeeded")).await?;
    let states = browser
        .js("return [...document.querySelectorAll('#instance-canvas g.wf-node')].map((g) => [g.dataset.node, g.dataset.status]);")
        .await?;
    ensure!(states == json!([["extract", "SUCCEEDED"], ["load", "SUCCEEDED"]]), "both nodes green: {states}");
    let context = browser.wait_contains("#instance-context", "said hello to workflow").await?;
    ensure!(
        context.contains("2030-01-01") && context.contains("said hello to browser"),
        "the context holds the start input and both outputs: {context}"
    );

    browser.click("#instance-canvas g[data-node=load]").await?;
    browser.wait_contains("#instance-output", "said hello to workflow").await?;
    let runs = browser.wait_contains("#instance-runs", "Succeeded").await?;
    ensure!(runs.contains('#'), "the run links its log: {runs}");
    ensure!(
        browser.find("#instance-stop").await?.attr("hidden").await?.is_some(),
        "an instance that is over cannot be stopped"
    );
    browser.screenshot("workflow-instance").await?;
    browser.click("#instance-runs a.run-log").await?;
    browser.wait_contains("#log-console", "hello, workflow!").await?;

    // The instance page in Chinese, then back.
    browser.route(&format!("#/workflows/{id}/instances")).await?;
    browser.choose("#lang-select", "zh_CN").await?;
    browser.wait_contains("#instance-table", "成功").await?;
    browser.choose("#lang-select", "en").await?;
    browser.wait_contains("#instance-table", "Succeeded").await?;
    Ok(())
}
