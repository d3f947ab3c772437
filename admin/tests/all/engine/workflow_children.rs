//! Sub-workflows through the engine with a fake executor, on SQLite, PostgreSQL and MariaDB: a
//! node starts a child instance with the parent's context and waits; the child's node outputs
//! become the node's output; a failed child fails the node and rerun from failure reruns the
//! child's failed nodes in the same child instance; a stop of the parent stops the child (and
//! kills its running job), a stop of the child fails the parent's node; a child workflow that is
//! gone fails the node at once; the sweep tells a parent whose child ended while nobody told it;
//! a cycle stored behind the API's back ends at the depth limit instead of running away.

use jobwheel_admin::domain::TriggerType;
use jobwheel_admin::engine::{MAX_SUBFLOW_DEPTH, OpError};
use jobwheel_admin::store::{
    Admission, InstanceId, InstanceStatus, NewInstance, NewRun, RunStatus, StartOutcome, WorkflowId,
};
use jobwheel_admin::workflow::{Condition, Graph, Node, NodeKind};
use serde_json::json;

use crate::engine::support::{Db, T0, wait_for};
use crate::engine::workflows::{Setup, WAIT, answer, edge, ended, node, runs_of, setup, workflow};

fn sub(name: &str, workflow: WorkflowId) -> Node {
    Node {
        kind: NodeKind::Workflow,
        job_id: 0,
        param: None,
        workflow_id: Some(workflow.0),
        ..node(name, jobwheel_admin::store::JobId(0))
    }
}

fn graph(nodes: Vec<Node>, edges: &[(&str, &str)]) -> Graph {
    let edges = edges.iter().map(|(from, to)| edge(from, to, Condition::Success)).collect();
    Graph { nodes, edges, input_schema: None }
}

async fn start(s: &Setup, workflow: WorkflowId, context: Option<&str>) -> anyhow::Result<InstanceId> {
    match s.engine.workflows().start(workflow, context, TriggerType::Manual).await? {
        StartOutcome::Started(id) => Ok(id),
        other => anyhow::bail!("not started: {other:?}"),
    }
}

/// The child instance `parent`'s node started (the newest), once there is one.
async fn child_of(s: &Setup, parent: InstanceId) -> anyhow::Result<InstanceId> {
    wait_for(WAIT, "the child instance", || async {
        Ok(s.store.children(parent).await?.last().map(|(_, child)| *child))
    })
    .await
}

async fn node_run(s: &Setup, id: InstanceId, name: &str) -> anyhow::Result<jobwheel_admin::store::RunRow> {
    let runs = s.store.instance_runs(id).await?;
    runs.into_iter()
        .filter(|r| r.node == name)
        .max_by_key(|r| r.id.0)
        .ok_or_else(|| anyhow::anyhow!("no run"))
}

/// prepare → sub (child: x → y) → after.
async fn sub_workflows(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 4).await?;
    let [prepare, x, y, after] = s.jobs[..] else { unreachable!() };
    let child_graph = graph(vec![node("x", x), node("y", y)], &[("x", "y")]);
    let child = s.store.add_workflow(&workflow(s.group, &child_graph, 1, "SKIP")).await?;
    let parent_graph = graph(
        vec![node("prepare", prepare), sub("sub", child), node("after", after)],
        &[("prepare", "sub"), ("sub", "after")],
    );
    parent_graph.check()?;
    let parent = s.store.add_workflow(&workflow(s.group, &parent_graph, 10, "SKIP")).await?;
    let wf = s.engine.workflows();

    // The child starts with the parent's context and its outputs become the node's output.
    let first = start(&s, parent, Some(r#"{"day":"2026-12-07"}"#)).await?;
    answer(&s, prepare, 1, 200, r#"{"rows":3}"#).await?;
    let kid = child_of(&s, first).await?;
    let row = s.store.load_instance(kid).await?.expect("child");
    assert_eq!(row.parent_instance, Some(first));
    assert_eq!(row.started_by(), format!("WORKFLOW of {}", first.0));
    let context: serde_json::Value = serde_json::from_str(&row.context)?;
    assert_eq!(context, json!({"day": "2026-12-07", "prepare": {"rows": 3}}));
    assert_eq!(node_run(&s, first, "sub").await?.status, RunStatus::Waiting);
    answer(&s, x, 1, 200, r#"{"x":1}"#).await?;
    answer(&s, y, 1, 200, "done").await?;
    assert_eq!(ended(&*s.store, kid).await?, InstanceStatus::Succeeded);
    answer(&s, after, 1, 200, "ok").await?;
    assert_eq!(ended(&*s.store, first).await?, InstanceStatus::Succeeded);
    let run = node_run(&s, first, "sub").await?;
    assert_eq!(run.status, RunStatus::Succeeded);
    assert_eq!(run.message, Some(format!("child workflow instance {} succeeded", kid.0)));
    let seen =
        s.fake.runs().into_iter().find(|(_, p)| p.job_id == after.0).and_then(|(_, p)| p.workflow_context);
    assert_eq!(seen.expect("after's context")["sub"], json!({"x": {"x": 1}, "y": "done"}));

    // A failed child fails the node; rerun from failure reruns the child's failed node in the
    // same child instance, and the parent waits for it again.
    let second = start(&s, parent, None).await?;
    answer(&s, prepare, 2, 200, "{}").await?;
    let kid = child_of(&s, second).await?;
    answer(&s, x, 2, 500, "boom").await?;
    assert_eq!(ended(&*s.store, kid).await?, InstanceStatus::Failed);
    assert_eq!(ended(&*s.store, second).await?, InstanceStatus::Failed);
    let run = node_run(&s, second, "sub").await?;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.message, Some(format!("child workflow instance {} failed (nodes: x)", kid.0)));
    assert_eq!(runs_of(&s.fake, after).len(), 1, "after did not run for the failed parent");
    let refused = wf.decide(second, "sub", true, "alice", None).await;
    assert!(matches!(refused, Err(OpError::Conflict(_))), "a sub-workflow is no approval: {refused:?}");
    wf.rerun_failed(second).await?;
    answer(&s, x, 3, 200, "again").await?;
    answer(&s, y, 2, 200, "done").await?;
    answer(&s, after, 2, 200, "ok").await?;
    assert_eq!(ended(&*s.store, second).await?, InstanceStatus::Succeeded);
    assert_eq!(s.store.children(second).await?.len(), 1, "the same child instance ran again");
    assert_eq!(s.store.load_instance(kid).await?.expect("child").status, InstanceStatus::Succeeded);

    // A stop of the parent stops the child and kills its running job.
    let third = start(&s, parent, None).await?;
    answer(&s, prepare, 3, 200, "{}").await?;
    let kid = child_of(&s, third).await?;
    wait_for(WAIT, "x fired in the child", || async { Ok((runs_of(&s.fake, x).len() == 4).then_some(())) })
        .await?;
    wait_for(WAIT, "x's trigger recorded", || async {
        let run = node_run(&s, kid, "x").await?;
        let log = match run.log_id {
            Some(log) => s.store.load_log(log).await?,
            None => None,
        };
        Ok(log.filter(|l| l.trigger_code == 200).map(|_| ()))
    })
    .await?;
    assert!(wf.stop(third).await?);
    assert_eq!(s.store.load_instance(kid).await?.expect("child").status, InstanceStatus::Stopped);
    assert_eq!(node_run(&s, third, "sub").await?.status, RunStatus::Stopped);
    wait_for(WAIT, "x killed", || async {
        Ok(s.fake.kills.lock().expect("lock").iter().any(|(_, job)| *job == x.0).then_some(()))
    })
    .await?;

    // A stop of the child alone fails the parent's node, and the parent with it.
    let fourth = start(&s, parent, None).await?;
    answer(&s, prepare, 4, 200, "{}").await?;
    let kid = child_of(&s, fourth).await?;
    assert!(wf.stop(kid).await?);
    assert_eq!(ended(&*s.store, fourth).await?, InstanceStatus::Failed);
    let run = node_run(&s, fourth, "sub").await?;
    assert_eq!(run.message, Some(format!("child workflow instance {} was stopped", kid.0)));

    // A child workflow that is gone fails the node at once, and the instance ends.
    let gone = graph(vec![node("prepare", prepare), sub("sub", WorkflowId(999_999))], &[("prepare", "sub")]);
    let gone = s.store.add_workflow(&workflow(s.group, &gone, 10, "SKIP")).await?;
    let fifth = start(&s, gone, None).await?;
    answer(&s, prepare, 5, 200, "{}").await?;
    assert_eq!(ended(&*s.store, fifth).await?, InstanceStatus::Failed);
    let message = node_run(&s, fifth, "sub").await?.message.unwrap_or_default();
    assert!(message.contains("workflow 999999 no longer exists"), "{message}");
    s.engine.triggers().wait_idle().await;
    Ok(())
}

/// A child that ended while nobody told its parent (its admin died in between): the sweep
/// ends the parent's run and the parent goes on.
async fn recovery(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 1).await?;
    let [after] = s.jobs[..] else { unreachable!() };
    let child =
        s.store.add_workflow(&workflow(s.group, &graph(vec![node("x", after)], &[]), 1, "SKIP")).await?;
    let parent_graph = graph(vec![sub("sub", child), node("after", after)], &[("sub", "after")]);
    let parent = s.store.add_workflow(&workflow(s.group, &parent_graph, 1, "SKIP")).await?;
    let new = |workflow, graph: &Graph| NewInstance {
        workflow_id: workflow,
        trigger_type: TriggerType::Manual,
        rerun_of: None,
        fire_time_ms: T0,
        graph: graph.to_json(),
        context: "{}".into(),
    };
    let admission = Admission { max: 1, queue: false, advance: None, now_ms: T0, keep_missed: false };
    let StartOutcome::Started(id) = s.store.start_instance(&new(parent, &parent_graph), admission).await?
    else {
        anyhow::bail!("not started")
    };
    let mut tx = s.store.begin_instance(id).await?.expect("parent");
    let waiting = NewRun {
        node: "sub".into(),
        attempt: 1,
        status: RunStatus::Waiting,
        due_ms: T0,
        output: None,
        message: None,
        deadline_ms: 0,
    };
    let run = tx.insert_runs(&[waiting]).await?[0];
    let kid = tx.start_child(&new(child, &graph(vec![node("x", after)], &[])), run, T0).await?;
    tx.commit().await?;
    let mut tx = s.store.begin_instance(kid).await?.expect("child");
    tx.set_instance(InstanceStatus::Succeeded, T0, T0).await?;
    tx.commit().await?;
    assert_eq!(s.store.ended_children(10).await?, vec![kid]);
    let report = s.engine.workflows().sweep(T0 + 2_000).await?;
    assert!(report.advanced >= 1, "{report:?}");
    assert_eq!(node_run(&s, id, "sub").await?.status, RunStatus::Succeeded);
    answer(&s, after, 1, 200, "ok").await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Succeeded);
    assert!(s.store.ended_children(10).await?.is_empty());
    s.engine.triggers().wait_idle().await;
    Ok(())
}

/// Two workflows that start each other, stored behind the API's back (which refuses the
/// cycle): the chain of children stops at the depth limit and every instance fails.
async fn runaway(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 0).await?;
    let placeholder = graph(vec![sub("again", WorkflowId(1))], &[]);
    let a = s.store.add_workflow(&workflow(s.group, &placeholder, 1, "SKIP")).await?;
    let b = s.store.add_workflow(&workflow(s.group, &graph(vec![sub("again", a)], &[]), 1, "SKIP")).await?;
    s.store.update_workflow(a, &workflow(s.group, &graph(vec![sub("again", b)], &[]), 1, "SKIP")).await?;
    let top = start(&s, a, None).await?;
    assert_eq!(ended(&*s.store, top).await?, InstanceStatus::Failed);
    let mut depth = 0;
    let mut at = top;
    while let Some((_, kid)) = s.store.children(at).await?.pop() {
        depth += 1;
        at = kid;
    }
    assert_eq!(depth, MAX_SUBFLOW_DEPTH, "children stop at the depth limit");
    let message = node_run(&s, at, "again").await?.message.unwrap_or_default();
    assert!(message.contains("nest deeper than"), "{message}");
    Ok(())
}

#[tokio::test]
async fn sub_workflows_run_stop_and_rerun_their_children_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), sub_workflows).await
}

#[tokio::test]
async fn sub_workflows_run_stop_and_rerun_their_children_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, sub_workflows).await
}

#[tokio::test]
async fn sub_workflows_run_stop_and_rerun_their_children_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, sub_workflows).await
}

#[tokio::test]
async fn the_sweep_tells_a_parent_whose_child_ended_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), recovery).await
}

#[tokio::test]
async fn the_sweep_tells_a_parent_whose_child_ended_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, recovery).await
}

#[tokio::test]
async fn the_sweep_tells_a_parent_whose_child_ended_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, recovery).await
}

#[tokio::test]
async fn a_stored_cycle_of_sub_workflows_stops_at_the_depth_limit() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), runaway).await
}
