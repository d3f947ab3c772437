//! The chaos suite's workflow: a diamond of four BEAN nodes (`a` → `b`, `c` → `d`) started by
//! its schedule every two seconds while the kills land. Afterwards no instance may be left
//! running or queued, each scheduled time may have started at most one instance (two admins
//! start a scheduled instance once), each node of an instance may have been planned and fired
//! at most once (no retries are configured, so a second run of a node is a double), every
//! instance that ended must have decided every node, and no node's run may have started twice
//! at an executor. A node whose executor died is failed by the lost-job monitor like any run,
//! and its children are skipped: that is an outcome, not a loss.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::store::{
    GroupId, InstanceRow, InstanceStatus, NewWorkflow, Page, RunRow, ScheduleStatus, Store, WorkflowId,
};
use serde_json::json;

/// The nodes of the diamond.
const NODES: [&str; 4] = ["a", "b", "c", "d"];

/// What became of the workflow's instances.
#[derive(Debug, Default)]
pub(crate) struct WorkflowCounts {
    instances: usize,
    succeeded: usize,
    failed: usize,
    /// Scheduled starts more than 5 s late (DO_NOTHING) while admins were down: kept as MISSED.
    missed: usize,
    node_runs: usize,
}

impl fmt::Display for WorkflowCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workflow: {} instances ({} succeeded, {} failed: a node lost with its executor, {} missed starts), {} node runs, none twice",
            self.instances, self.succeeded, self.failed, self.missed, self.node_runs
        )
    }
}

/// The diamond on four new `demoJobHandler` jobs of `group`, scheduled every two seconds from
/// `first_fire_ms`.
pub(crate) async fn add(store: &dyn Store, group: GroupId, first_fire_ms: i64) -> anyhow::Result<WorkflowId> {
    let mut nodes = Vec::new();
    for name in NODES {
        let mut job = crate::fixtures::bean_job(group, &format!("chaos workflow {name}"), "demoJobHandler");
        job.executor_route_strategy = Some("FAILOVER".into());
        job.executor_fail_retry_count = 0;
        job.trigger_status = 0;
        nodes.push(json!({"name": name, "jobId": store.add_job(&job).await?.0}));
    }
    let edges = json!([{"from": "a", "to": "b"}, {"from": "a", "to": "c"}, {"from": "b", "to": "d"}, {"from": "c", "to": "d"}]);
    let workflow = NewWorkflow {
        name: "chaos diamond".into(),
        job_group: group,
        schedule_type: "CRON".into(),
        schedule_conf: Some("0/2 * * * * ?".into()),
        time_zone: None,
        misfire_strategy: "DO_NOTHING".into(),
        max_instances: 100,
        overflow: "SKIP".into(),
        graph: json!({"nodes": nodes, "edges": edges}).to_string(),
        status: ScheduleStatus::Running,
        trigger_last_time: 0,
        trigger_next_time: first_fire_ms,
        author: "chaos".into(),
        update_ms: first_fire_ms,
        days: Default::default(),
        alarm_email: String::new(),
    };
    Ok(store.add_workflow(&workflow).await?)
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
        for node in NODES {
            let mine: Vec<&RunRow> = runs.iter().filter(|r| r.node == node).collect();
            ensure!(
                mine.len() == 1,
                "instance {}: node {node} has {} runs: {mine:?}",
                instance.id.0,
                mine.len()
            );
            let run = mine[0];
            ensure!(run.status.is_over(), "instance {}: node {node} never ended: {run:?}", instance.id.0);
            if let Some(log) = run.log_id {
                counts.node_runs += 1;
                let starts = started_at_executor.get(&log.0).copied().unwrap_or(0);
                ensure!(
                    starts <= 1,
                    "instance {}: node {node}'s run (log {}) started {starts} times",
                    instance.id.0,
                    log.0
                );
            }
        }
    }
    Ok(counts)
}
