//! The chaos suite's workflow: a diamond (`a` → `b`, `c` → `d`) of three BEAN nodes and a
//! sub-workflow node `c`, whose child workflow runs one BEAN node `x`, started by its schedule
//! every two seconds while the kills land. Afterwards no instance may be left
//! running or queued, each scheduled time may have started at most one instance (two admins
//! start a scheduled instance once), each node of an instance may have been planned and fired
//! at most once (no retries are configured, so a second run of a node is a double), every
//! instance that ended must have decided every node, and no node's run may have started twice
//! at an executor. The sub-workflow node started exactly one child (none if it was skipped),
//! which ended, ran `x` once, and ended the node as it ended itself (issue 61: a child started
//! in the parent's transaction, its end told to the parent once). A node whose executor died is
//! failed by the lost-job monitor like any run, and its children are skipped: that is an
//! outcome, not a loss. After `d`, the map node `m` runs `demoJobHandler` once per item of `d`'s
//! output's `inputs` (the three node names before it), two at a time: each item exactly once
//! (one attempt, one log row, started at most once at an executor, over), and the map ended as
//! its items did (issue 61: items taken with their log rows under the instance's lock).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::store::{
    GroupId, InstanceRow, InstanceStatus, NewWorkflow, Page, RunRow, RunStatus, ScheduleStatus, Store,
    WorkflowId,
};
use serde_json::json;

/// The nodes of the diamond.
const NODES: [&str; 4] = ["a", "b", "c", "d"];
/// The diamond's sub-workflow node.
const SUB: &str = "c";
/// The child workflow's one node.
const CHILD_NODE: &str = "x";
/// The map node after the diamond.
const MAP: &str = "m";

/// What became of the workflow's instances.
#[derive(Debug, Default)]
pub(crate) struct WorkflowCounts {
    instances: usize,
    succeeded: usize,
    failed: usize,
    /// Scheduled starts more than 5 s late (DO_NOTHING) while admins were down: kept as MISSED.
    missed: usize,
    node_runs: usize,
    /// Child instances the sub-workflow node started.
    children: usize,
    /// Items the map node ran.
    items: usize,
}

impl fmt::Display for WorkflowCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workflow: {} instances ({} succeeded, {} failed: a node lost with its executor, {} missed starts), {} node runs, none twice, {} child instances, one per sub-workflow run, {} map items, each once",
            self.instances,
            self.succeeded,
            self.failed,
            self.missed,
            self.node_runs,
            self.children,
            self.items
        )
    }
}

/// A new `demoJobHandler` job of `group` for node `name`.
async fn node_job(store: &dyn Store, group: GroupId, name: &str) -> anyhow::Result<i32> {
    let mut job = crate::fixtures::bean_job(group, &format!("chaos workflow {name}"), "demoJobHandler");
    job.executor_route_strategy = Some("FAILOVER".into());
    job.executor_fail_retry_count = 0;
    job.trigger_status = 0;
    Ok(store.add_job(&job).await?.0)
}

/// The diamond on new `demoJobHandler` jobs of `group` (its `c` a sub-workflow of one more),
/// scheduled every two seconds from `first_fire_ms`.
pub(crate) async fn add(store: &dyn Store, group: GroupId, first_fire_ms: i64) -> anyhow::Result<WorkflowId> {
    let child = json!({"nodes": [{"name": CHILD_NODE, "jobId": node_job(store, group, CHILD_NODE).await?}]});
    let child = store.add_workflow(&workflow(group, "chaos child", &child, None)).await?;
    let mut nodes = Vec::new();
    for name in NODES {
        nodes.push(if name == SUB {
            json!({"name": name, "kind": "WORKFLOW", "workflowId": child.0})
        } else {
            json!({"name": name, "jobId": node_job(store, group, name).await?})
        });
    }
    nodes.push(json!({"name": MAP, "kind": "MAP", "jobId": node_job(store, group, MAP).await?,
                      "items": "/d/inputs", "parallelism": 2}));
    let edges = json!([{"from": "a", "to": "b"}, {"from": "a", "to": "c"}, {"from": "b", "to": "d"},
                       {"from": "c", "to": "d"}, {"from": "d", "to": MAP}]);
    let graph = json!({"nodes": nodes, "edges": edges});
    Ok(store.add_workflow(&workflow(group, "chaos diamond", &graph, Some(first_fire_ms))).await?)
}

/// A workflow of `group` running `graph`, scheduled every two seconds from `first_fire_ms`
/// (none: not scheduled).
fn workflow(
    group: GroupId,
    name: &str,
    graph: &serde_json::Value,
    first_fire_ms: Option<i64>,
) -> NewWorkflow {
    NewWorkflow {
        name: name.into(),
        job_group: group,
        schedule_type: if first_fire_ms.is_some() { "CRON" } else { "NONE" }.into(),
        schedule_conf: first_fire_ms.map(|_| "0/2 * * * * ?".into()),
        time_zone: None,
        misfire_strategy: "DO_NOTHING".into(),
        max_instances: 100,
        overflow: "SKIP".into(),
        graph: graph.to_string(),
        status: if first_fire_ms.is_some() { ScheduleStatus::Running } else { ScheduleStatus::Stopped },
        trigger_last_time: 0,
        trigger_next_time: first_fire_ms.unwrap_or(0),
        author: "chaos".into(),
        update_ms: first_fire_ms.unwrap_or(0),
        days: Default::default(),
        alarm_email: String::new(),
    }
}

/// Switches the schedule off.
pub(crate) async fn stop(store: &dyn Store, id: WorkflowId) -> anyhow::Result<()> {
    let row = store.load_workflow(id).await?.ok_or_else(|| anyhow::anyhow!("the workflow is gone"))?;
    let mut workflow = row.workflow;
    workflow.status = ScheduleStatus::Stopped;
    workflow.trigger_next_time = 0;
    store.update_workflow(id, &workflow).await?;
    Ok(())
}

async fn instances(store: &dyn Store, id: WorkflowId) -> anyhow::Result<Vec<InstanceRow>> {
    Ok(store.page_instances(id, Page { offset: 0, limit: 10_000 }).await?.rows)
}

/// Waits (bounded) until no instance runs or waits; the last ones finish within a second or,
/// with a node lost with its executor, once the lost-job monitor closes its run.
pub(crate) async fn settle(store: &dyn Store, id: WorkflowId) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let open = instances(store, id).await?.iter().filter(|i| !i.status.is_over()).count();
        if open == 0 || tokio::time::Instant::now() > deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The books of the workflow; `started_at_executor` says how often each log id started.
pub(crate) async fn account(
    store: &dyn Store,
    id: WorkflowId,
    started_at_executor: &HashMap<i64, usize>,
) -> anyhow::Result<WorkflowCounts> {
    let instances = instances(store, id).await?;
    let mut counts = WorkflowCounts { instances: instances.len(), ..WorkflowCounts::default() };
    let started = instances.iter().filter(|i| i.status != InstanceStatus::Missed).count();
    ensure!(started >= 5, "the schedule started only {started} instances");
    let open: Vec<i64> = instances.iter().filter(|i| !i.status.is_over()).map(|i| i.id.0).collect();
    ensure!(open.is_empty(), "{} instances left running or queued (first: {:?})", open.len(), open.first());
    let mut by_time: BTreeMap<i64, usize> = BTreeMap::new();
    for instance in &instances {
        *by_time.entry(instance.fire_time_ms).or_default() += 1;
    }
    let twice: Vec<_> = by_time.iter().filter(|(_, n)| **n > 1).collect();
    ensure!(twice.is_empty(), "scheduled times that started two instances: {twice:?}");
    for instance in &instances {
        match instance.status {
            InstanceStatus::Succeeded => counts.succeeded += 1,
            InstanceStatus::Failed => counts.failed += 1,
            InstanceStatus::Missed => {
                // A start found late while no admin swept: recorded, never run.
                counts.missed += 1;
                let runs = store.instance_runs(instance.id).await?;
                ensure!(runs.is_empty(), "missed instance {} has runs: {runs:?}", instance.id.0);
                continue;
            }
            other => anyhow::bail!("instance {} ended {other:?}, not by its nodes", instance.id.0),
        }
        let runs: Vec<RunRow> = store.instance_runs(instance.id).await?;
        for node in NODES.iter().copied().chain([MAP]) {
            let mine: Vec<&RunRow> = runs.iter().filter(|r| r.node == node).collect();
            ensure!(
                mine.len() == 1,
                "instance {}: node {node} has {} runs: {mine:?}",
                instance.id.0,
                mine.len()
            );
            let run = mine[0];
            ensure!(run.status.is_over(), "instance {}: node {node} never ended: {run:?}", instance.id.0);
            if node == SUB {
                counts.children +=
                    child(store, instance, run, started_at_executor, &mut counts.node_runs).await?;
            }
            if node == MAP {
                counts.items += items(store, instance, run, started_at_executor).await?;
                continue;
            }
            count_start(run, started_at_executor, &mut counts.node_runs)
                .map_err(|e| anyhow::anyhow!("instance {}: node {node}: {e}", instance.id.0))?;
        }
    }
    Ok(counts)
}

/// Counts `run`'s start at an executor, if it fired: at most once.
fn count_start(
    run: &RunRow,
    started_at_executor: &HashMap<i64, usize>,
    node_runs: &mut usize,
) -> anyhow::Result<()> {
    if let Some(log) = run.log_id {
        *node_runs += 1;
        let starts = started_at_executor.get(&log.0).copied().unwrap_or(0);
        ensure!(starts <= 1, "its run (log {}) started {starts} times", log.0);
    }
    Ok(())
}

/// The map node's items of `instance`: none if it was skipped, else `d`'s three inputs, each
/// run once (one attempt, one log row, started at most once at an executor) and over, the map
/// failed exactly when an item did. How many.
async fn items(
    store: &dyn Store,
    instance: &InstanceRow,
    run: &RunRow,
    started_at_executor: &HashMap<i64, usize>,
) -> anyhow::Result<usize> {
    let id = instance.id.0;
    let page = store.page_items(run.id, None, Page { offset: 0, limit: 100 }).await?;
    if run.status == RunStatus::Skipped {
        ensure!(page.rows.is_empty(), "instance {id}: a skipped map has items: {:?}", page.rows);
        return Ok(0);
    }
    let names: Vec<String> = page.rows.iter().map(|r| r.item.clone()).collect();
    ensure!(names == ["\"a\"", "\"b\"", "\"c\""], "instance {id}: the map's items: {names:?}");
    let mut failed = false;
    for item in &page.rows {
        ensure!(
            item.attempt == 1 && item.status.is_over() && item.status != RunStatus::Stopped,
            "instance {id}: map item {} is {:?} at attempt {}",
            item.idx,
            item.status,
            item.attempt
        );
        failed |= item.status == RunStatus::Failed;
        let log =
            item.log_id.ok_or_else(|| anyhow::anyhow!("instance {id}: map item {} never fired", item.idx))?;
        let starts = started_at_executor.get(&log.0).copied().unwrap_or(0);
        ensure!(starts <= 1, "instance {id}: map item {} (log {}) started {starts} times", item.idx, log.0);
    }
    let ended = if failed { RunStatus::Failed } else { RunStatus::Succeeded };
    ensure!(run.status == ended, "instance {id}: the map ended {:?}, its items say {ended:?}", run.status);
    Ok(page.rows.len())
}

/// The sub-workflow node's child of `instance`: none if the node was skipped, else exactly one,
/// started by `run`, over, with `x` run once, and ended as `run` ended. How many (0 or 1).
async fn child(
    store: &dyn Store,
    instance: &InstanceRow,
    run: &RunRow,
    started_at_executor: &HashMap<i64, usize>,
    node_runs: &mut usize,
) -> anyhow::Result<usize> {
    let id = instance.id.0;
    let children = store.children(instance.id).await?;
    if run.status == RunStatus::Skipped {
        ensure!(children.is_empty(), "instance {id}: a skipped sub-workflow started {children:?}");
        return Ok(0);
    }
    ensure!(
        children.len() == 1,
        "instance {id}: the sub-workflow started {} children: {children:?}",
        children.len()
    );
    let (by, kid) = children[0];
    ensure!(by == run.id, "instance {id}: the child {} belongs to run {}, not {}", kid.0, by.0, run.id.0);
    let row = store.load_instance(kid).await?.ok_or_else(|| anyhow::anyhow!("child {} is gone", kid.0))?;
    ensure!(row.status.is_over(), "instance {id}: its child {} never ended ({:?})", kid.0, row.status);
    let told = match row.status {
        InstanceStatus::Succeeded => RunStatus::Succeeded,
        _ => RunStatus::Failed,
    };
    ensure!(
        run.status == told,
        "instance {id}: child {} ended {:?} but the node {:?}",
        kid.0,
        row.status,
        run.status
    );
    let runs = store.instance_runs(kid).await?;
    let mine: Vec<&RunRow> = runs.iter().filter(|r| r.node == CHILD_NODE).collect();
    ensure!(mine.len() == 1, "child {}: node {CHILD_NODE} has {} runs: {mine:?}", kid.0, mine.len());
    count_start(mine[0], started_at_executor, node_runs)
        .map_err(|e| anyhow::anyhow!("child {}: {e}", kid.0))?;
    Ok(1)
}
