//! Approval nodes through the engine with a fake executor, on SQLite, PostgreSQL and MariaDB:
//! an instance waits at the node (nothing after it fires, the sweep leaves it alone); an
//! approval with a comment lets the next node run with the decision in its context; a
//! rejection fails the node and its failure edge follows, and a rerun from failure asks again;
//! a deadline decides as the node says (approve here, reject by default); a stop ends a waiting
//! approval; deciding a node that is not waiting is refused.
use jobwheel_admin::clock::Clock;
use jobwheel_admin::engine::OpError;
use jobwheel_admin::store::{InstanceId, InstanceStatus, RunStatus, StartOutcome};
use jobwheel_admin::workflow::{Condition, Graph, Node, NodeKind, OnDeadline};

use crate::engine::support::{Db, T0};
use crate::engine::workflows::{Setup, answer, edge, ended, node, runs_of, setup, workflow};
use jobwheel_admin::domain::TriggerType;

fn approval(name: &str, deadline_secs: u32, on_deadline: Option<OnDeadline>) -> Node {
    Node {
        kind: NodeKind::Approval,
        job_id: 0,
        param: None,
        timeout_secs: deadline_secs,
        on_deadline,
        ..node(name, jobwheel_admin::store::JobId(0))
    }
}

/// Waits until `id`'s approval waits.
async fn waiting(s: &Setup, id: InstanceId) -> anyhow::Result<()> {
    crate::engine::support::wait_for(crate::engine::workflows::WAIT, "the approval to wait", || async {
        Ok((statuses(s, id, "signoff").await? == vec![RunStatus::Waiting]).then_some(()))
    })
    .await
}

async fn statuses(s: &Setup, id: InstanceId, name: &str) -> anyhow::Result<Vec<RunStatus>> {
    let runs = s.store.instance_runs(id).await?;
    Ok(runs.iter().filter(|r| r.node == name).map(|r| r.status).collect())
}

/// extract → sign-off (approval) → load; sign-off's failure → cleanup.
async fn approvals(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 3).await?;
    let [extract, load, cleanup] = s.jobs[..] else { unreachable!() };
    let graph = |deadline: u32, on: Option<OnDeadline>| Graph {
        nodes: vec![
            node("extract", extract),
            approval("signoff", deadline, on),
            node("load", load),
            node("cleanup", cleanup),
        ],
        edges: vec![
            edge("extract", "signoff", Condition::Success),
            edge("signoff", "load", Condition::Success),
            edge("signoff", "cleanup", Condition::Failure),
        ],
        input_schema: None,
    };
    graph(0, None).check()?;
    let manual = s.store.add_workflow(&workflow(s.group, &graph(0, None), 10, "SKIP")).await?;
    let wf = s.engine.workflows();
    let start = |w| async move {
        match wf.start(w, None, TriggerType::Manual).await? {
            StartOutcome::Started(id) => Ok::<_, anyhow::Error>(id),
            other => anyhow::bail!("not started: {other:?}"),
        }
    };

    // Approved, with a comment: load runs and sees the decision in its context.
    let first = start(manual).await?;
    answer(&s, extract, 1, 200, "extracted").await?;
    waiting(&s, first).await?;
    s.clock.advance(3_600_000);
    wf.sweep(T0 + 3_600_000).await?;
    assert_eq!(
        runs_of(&s.fake, load).len(),
        0,
        "nothing after a waiting approval fires, however long it waits"
    );
    assert_eq!(
        statuses(&s, first, "signoff").await?,
        vec![RunStatus::Waiting],
        "no deadline: it still waits"
    );
    let refused = wf.decide(first, "extract", true, "alice", None).await;
    assert!(matches!(refused, Err(OpError::Conflict(_))), "a node that is not waiting: {refused:?}");
    wf.decide(first, "signoff", true, "alice", Some("numbers checked")).await?;
    answer(&s, load, 1, 200, "loaded").await?;
    assert_eq!(ended(&*s.store, first).await?, InstanceStatus::Succeeded);
    let runs = s.store.instance_runs(first).await?;
    let signoff = runs.iter().find(|r| r.node == "signoff").expect("signoff");
    assert_eq!(signoff.message.as_deref(), Some("approved by alice: numbers checked"));
    let context =
        s.fake.runs().into_iter().find(|(_, p)| p.job_id == load.0).and_then(|(_, p)| p.workflow_context);
    let context = context.expect("load's trigger carries the context");
    assert_eq!(
        context["signoff"],
        serde_json::json!({"approved": true, "by": "alice", "comment": "numbers checked"})
    );
    let again = wf.decide(first, "signoff", false, "bob", None).await;
    assert!(matches!(again, Err(OpError::Conflict(_))), "decided once: {again:?}");

    // Rejected: the node fails, cleanup runs, load never does.
    let second = start(manual).await?;
    answer(&s, extract, 2, 200, "extracted").await?;
    waiting(&s, second).await?;
    wf.decide(second, "signoff", false, "bob", None).await?;
    answer(&s, cleanup, 1, 200, "cleaned").await?;
    assert_eq!(ended(&*s.store, second).await?, InstanceStatus::Failed);
    assert_eq!(runs_of(&s.fake, load).len(), 1, "load ran for the first instance only");
    // Rerun from failure asks again.
    wf.rerun_failed(second).await?;
    crate::engine::support::wait_for(crate::engine::workflows::WAIT, "the approval asked again", || async {
        let now = statuses(&s, second, "signoff").await?;
        Ok((now == vec![RunStatus::Revoked, RunStatus::Waiting]).then_some(()))
    })
    .await?;
    assert!(wf.stop(second).await?);

    // A deadline that approves, passed while nobody decided.
    let timed =
        s.store.add_workflow(&workflow(s.group, &graph(60, Some(OnDeadline::Approve)), 10, "SKIP")).await?;
    let third = start(timed).await?;
    answer(&s, extract, 3, 200, "extracted").await?;
    waiting(&s, third).await?;
    let waiting_since = s.clock.now_ms();
    s.clock.set(waiting_since + 59_000);
    assert_eq!(wf.sweep(waiting_since + 59_000).await?.deadlines, 0, "not yet");
    s.clock.set(waiting_since + 61_000);
    assert_eq!(wf.sweep(waiting_since + 61_000).await?.deadlines, 1);
    answer(&s, load, 2, 200, "loaded").await?;
    assert_eq!(ended(&*s.store, third).await?, InstanceStatus::Succeeded);
    let runs = s.store.instance_runs(third).await?;
    let signoff = runs.iter().find(|r| r.node == "signoff").expect("signoff");
    assert_eq!(signoff.message.as_deref(), Some("approved by the deadline"));

    // A stop ends a waiting approval.
    let fourth = start(manual).await?;
    answer(&s, extract, 4, 200, "extracted").await?;
    waiting(&s, fourth).await?;
    assert!(wf.stop(fourth).await?);
    assert_eq!(statuses(&s, fourth, "signoff").await?, vec![RunStatus::Stopped]);
    let late = wf.decide(fourth, "signoff", true, "alice", None).await;
    assert!(matches!(late, Err(OpError::Conflict(_))), "a stopped instance's approval: {late:?}");
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn approvals_wait_for_a_decision_or_their_deadline_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), approvals).await
}

#[tokio::test]
async fn approvals_wait_for_a_decision_or_their_deadline_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, approvals).await
}

#[tokio::test]
async fn approvals_wait_for_a_decision_or_their_deadline_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, approvals).await
}
