//! Conditions on data and typed step data through the engine with a fake executor, on SQLite,
//! PostgreSQL and MariaDB: a switch takes the branch its parent's output chooses and records it
//! in the context; an edge's `if` reads that context; an `if` with no answer fails its child
//! without a `/run`, the child's failure edge follows, and a rerun from failure asks the
//! condition again instead of firing the job. Declared schemas are checked where data crosses:
//! a start, an output as it arrives (a mismatch fails the attempt), an input before `/run`.

use jobwheel_admin::engine::StartError;
use jobwheel_admin::store::{Admission, InstanceStatus, NewInstance, RunStatus, StartOutcome};
use jobwheel_admin::workflow::{Condition, Edge, Graph, Node, NodeKind};
use serde_json::{Value, json};

use crate::engine::support::{Db, T0, wait_for};
use crate::engine::workflows::{WAIT, answer, edge, ended, node, runs_of, setup, workflow};
use jobwheel_admin::domain::TriggerType;

fn guarded(from: &str, to: &str, text: &str) -> Edge {
    Edge { guard: Some(text.to_owned()), ..edge(from, to, Condition::Success) }
}

/// extract → route (switch: big | small | fallback) ; small → report (if the switch chose
/// small) ; extract → audit (if on a key extract's output lacks) → alert on audit's failure.
async fn conditions(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 7).await?;
    let [extract, big, small, fallback, report, audit, alert] = s.jobs[..] else { unreachable!() };
    let route = Node { kind: NodeKind::Switch, job_id: 0, param: None, ..node("route", extract) };
    let graph = Graph {
        input_schema: None,
        nodes: vec![
            node("extract", extract),
            route,
            node("big", big),
            node("small", small),
            node("fallback", fallback),
            node("report", report),
            node("audit", audit),
            node("alert", alert),
        ],
        edges: vec![
            edge("extract", "route", Condition::Success),
            guarded("route", "big", "output.rows > 100"),
            guarded("route", "small", "output.rows <= 100 && parent.name == 'extract'"),
            edge("route", "fallback", Condition::Success),
            guarded("small", "report", "context.route.branch == 'small' && context.day == '2030-01-01'"),
            guarded("extract", "audit", "output.missing > 1"),
            edge("audit", "alert", Condition::Failure),
        ],
    };
    graph.check()?;
    let w = s.store.add_workflow(&workflow(s.group, &graph, 1, "SKIP")).await?;
    let wf = s.engine.workflows();
    let StartOutcome::Started(id) = wf.start(w, Some(r#"{"day":"2030-01-01"}"#), TriggerType::Manual).await?
    else {
        anyhow::bail!("not started")
    };

    answer(&s, extract, 1, 200, r#"{"rows":3}"#).await?;
    answer(&s, small, 1, 200, "small done").await?;
    answer(&s, report, 1, 200, "reported").await?;
    answer(&s, alert, 1, 200, "alerted").await?;
    assert_eq!(
        ended(&*s.store, id).await?,
        InstanceStatus::Failed,
        "audit failed without continue-on-failure"
    );

    let counts: Vec<usize> = [extract, big, small, fallback, report, audit, alert]
        .iter()
        .map(|j| runs_of(&s.fake, *j).len())
        .collect();
    assert_eq!(counts, vec![1, 0, 1, 0, 1, 0, 1], "only the chosen branch ran; audit never reached /run");
    let runs = s.store.instance_runs(id).await?;
    let of = |name: &str| runs.iter().filter(|r| r.node == name).collect::<Vec<_>>();
    let switch = of("route");
    assert_eq!(switch.len(), 1);
    assert_eq!(switch[0].status, RunStatus::Passed);
    assert_eq!(switch[0].output.as_deref(), Some(r#"{"branch":"small"}"#));
    assert_eq!(switch[0].message.as_deref(), Some("took the branch to small"));
    assert_eq!(of("big")[0].status, RunStatus::Skipped);
    assert_eq!(of("fallback")[0].status, RunStatus::Skipped);
    let failed = of("audit");
    assert_eq!(failed[0].status, RunStatus::Failed);
    assert!(failed[0].log_id.is_none(), "failed by the planner, never fired");
    let message = failed[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("extract -> audit (output.missing > 1)") && message.contains("missing"),
        "the message names the edge, the expression and the reason: {message}"
    );
    let instance = s.store.load_instance(id).await?.expect("instance");
    let context: Value = serde_json::from_str(&instance.context)?;
    assert_eq!(context["route"]["branch"], "small", "the switch's choice is in the context");

    // Rerun from failure plans audit again: its condition is asked again (and fails again),
    // its job is still never sent.
    wf.rerun_failed(id).await?;
    let again = wait_for(WAIT, "audit planned again", || async {
        let runs = s.store.instance_runs(id).await?;
        let audit: Vec<RunStatus> = runs.iter().filter(|r| r.node == "audit").map(|r| r.status).collect();
        Ok((audit.len() == 2).then_some(audit))
    })
    .await?;
    assert_eq!(again, vec![RunStatus::Revoked, RunStatus::Failed]);
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Failed);
    assert_eq!(runs_of(&s.fake, audit).len(), 0, "a rerun does not bypass the condition");
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn a_switch_and_ifs_on_data_choose_what_runs_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), conditions).await
}

#[tokio::test]
async fn a_switch_and_ifs_on_data_choose_what_runs_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, conditions).await
}

#[tokio::test]
async fn a_switch_and_ifs_on_data_choose_what_runs_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, conditions).await
}

/// a (declares its output) → b (declares its input); the workflow declares its start input.
async fn typed(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 2).await?;
    let [a, b] = s.jobs[..] else { unreachable!() };
    let mut first = node("a", a);
    first.retries = 1;
    first.output_schema = Some(json!({
        "type": "object", "required": ["rows"], "properties": {"rows": {"type": "integer"}}
    }));
    let mut second = node("b", b);
    second.input_schema = Some(json!({
        "type": "object", "required": ["a"],
        "properties": {"a": {"properties": {"rows": {"minimum": 10}}}}
    }));
    let graph = Graph {
        input_schema: Some(
            json!({"type": "object", "required": ["day"], "properties": {"day": {"type": "string"}}}),
        ),
        nodes: vec![first, second],
        edges: vec![edge("a", "b", Condition::Success)],
    };
    graph.check()?;
    let w = s.store.add_workflow(&workflow(s.group, &graph, 1, "SKIP")).await?;
    let wf = s.engine.workflows();
    let refused = wf.start(w, Some(r#"{"day": 20300101}"#), TriggerType::Manual).await;
    let Err(StartError::BadContext(why)) = refused else {
        anyhow::bail!("a start against the schema: {refused:?}")
    };
    assert!(why.contains("inputSchema at /day (schema /properties/day/type)"), "{why}");
    assert!(!why.contains("20300101"), "the value is not repeated: {why}");
    let StartOutcome::Started(id) = wf.start(w, Some(r#"{"day":"2030-01-01"}"#), TriggerType::Manual).await?
    else {
        anyhow::bail!("not started")
    };

    answer(&s, a, 1, 200, r#"{"rows":"three"}"#).await?;
    answer(&s, a, 2, 200, r#"{"rows":3}"#).await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Failed);
    let runs = s.store.instance_runs(id).await?;
    let of = |name: &str| runs.iter().filter(|r| r.node == name).collect::<Vec<_>>();
    let attempts = of("a");
    assert_eq!(
        attempts.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![RunStatus::Failed, RunStatus::Succeeded]
    );
    let message = attempts[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("outputSchema at /rows (schema /properties/rows/type)"),
        "an output against its schema fails the attempt, and the retry runs: {message}"
    );
    let second = of("b");
    assert_eq!(second[0].status, RunStatus::Failed);
    let message = second[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("inputSchema at /a/rows (schema /properties/a/properties/rows/minimum)"),
        "{message}"
    );
    assert_eq!(runs_of(&s.fake, b).len(), 0, "an input against its schema is never sent");
    let instance = s.store.load_instance(id).await?.expect("instance");
    let context: Value = serde_json::from_str(&instance.context)?;
    assert_eq!(context["a"], json!({"rows": 3}), "only the output that matched joined the context");
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn declared_inputs_and_outputs_are_checked_where_they_cross_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), typed).await
}

#[tokio::test]
async fn declared_inputs_and_outputs_are_checked_where_they_cross_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, typed).await
}

#[tokio::test]
async fn declared_inputs_and_outputs_are_checked_where_they_cross_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, typed).await
}

/// An instance whose graph this admin cannot read — a node kind a newer admin wrote — is left
/// running and untouched by the sweep, not planned as a graph with no nodes (which would end it
/// SUCCEEDED without running anything).
#[tokio::test]
async fn an_unreadable_graph_is_left_alone() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let s = setup(&db, 1).await?;
    let graph = Graph { nodes: vec![node("only", s.jobs[0])], edges: vec![], input_schema: None };
    let w = s.store.add_workflow(&workflow(s.group, &graph, 5, "SKIP")).await?;
    let future = r#"{"nodes":[{"name":"only","kind":"FROM_THE_FUTURE","jobId":1}],"edges":[]}"#;
    let new = NewInstance {
        workflow_id: w,
        trigger_type: TriggerType::Api,
        rerun_of: None,
        fire_time_ms: T0,
        graph: future.into(),
        context: "{}".into(),
    };
    let admission = Admission { max: 5, queue: false, advance: None, now_ms: T0, keep_missed: false };
    let StartOutcome::Started(id) = s.store.start_instance(&new, admission).await? else {
        anyhow::bail!("start")
    };
    s.engine.workflows().sweep(T0).await?;
    s.engine.workflows().sweep(T0 + 1000).await?;
    let row = s.store.load_instance(id).await?.expect("instance");
    assert_eq!(row.status, InstanceStatus::Running, "left alone");
    assert!(s.store.instance_runs(id).await?.is_empty(), "nothing planned");
    let refused = s.engine.workflows().rerun_failed(id).await;
    assert!(refused.is_err(), "{refused:?}");
    Ok(())
}

/// A node that ran, failed, and was stopped while its retry waited is run again by a rerun from
/// failure (a new first attempt) — not planned again from its older failed attempt, which would
/// end the instance at once with nothing run.
#[tokio::test]
async fn a_rerun_from_failure_runs_a_node_stopped_in_its_retry_delay() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let s = setup(&db, 1).await?;
    let mut only = node("only", s.jobs[0]);
    only.retries = 1;
    only.retry_delay_secs = 600;
    let graph = Graph { nodes: vec![only], edges: vec![], input_schema: None };
    let w = s.store.add_workflow(&workflow(s.group, &graph, 5, "SKIP")).await?;
    let wf = s.engine.workflows();
    let StartOutcome::Started(id) = wf.start(w, None, TriggerType::Manual).await? else {
        anyhow::bail!("start")
    };
    answer(&s, s.jobs[0], 1, 500, "broke").await?;
    wait_for(WAIT, "the retry planned", || async {
        let runs = s.store.instance_runs(id).await?;
        Ok((runs.len() == 2).then_some(()))
    })
    .await?;
    assert!(wf.stop(id).await?);
    wf.rerun_failed(id).await?;
    answer(&s, s.jobs[0], 2, 200, "ok now").await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Succeeded);
    s.engine.triggers().wait_idle().await;
    Ok(())
}
