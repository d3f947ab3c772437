//! Data between workflow nodes and the operations on a failed instance, through the engine
//! with a fake executor, on SQLite, PostgreSQL and MariaDB: each node's trigger carries the
//! context so far; a jobwheel executor's `output` wins over its message; a rerun from failure
//! reruns the topmost failed node and plans what failed below it again; a whole rerun starts a
//! new instance with the start input only; a failed root marked done with an output lets every
//! skipped node below it run.

use jobwheel_admin::protocol::HandleCallbackParam;
use jobwheel_admin::store::{InstanceId, InstanceStatus, JobId, RunStatus, StartOutcome};
use jobwheel_admin::workflow::{Condition, Graph};
use serde_json::{Value, json};

use crate::engine::support::{Db, T0, wait_for};
use crate::engine::workflows::{Setup, WAIT, answer, edge, ended, node, runs_of, setup, workflow};
use jobwheel_admin::domain::TriggerType;

/// The context the `n`th `/run` of `job` carried, once it was sent.
async fn context_of(s: &Setup, job: JobId, n: usize) -> anyhow::Result<Value> {
    let param = wait_for(WAIT, &format!("run {n} of job {job}"), || async {
        Ok(s.fake.runs().into_iter().filter(|(_, p)| p.job_id == job.0).nth(n - 1).map(|(_, p)| p))
    })
    .await?;
    Ok(param.workflow_context.expect("a node's trigger carries the context"))
}

/// Answers the `n`th `/run` of `job` as a jobwheel executor does: a message and an output.
async fn answer_with_output(s: &Setup, job: JobId, n: usize, msg: &str, output: &str) -> anyhow::Result<()> {
    let log = wait_for(WAIT, &format!("run {n} of job {job}"), || async {
        Ok(runs_of(&s.fake, job).get(n - 1).map(|(log, _)| *log))
    })
    .await?;
    let result = HandleCallbackParam {
        log_id: log,
        log_date_tim: T0,
        handle_code: 200,
        handle_msg: msg.to_owned(),
        output: Some(output.to_owned()),
        flight: None,
    };
    s.engine.completion().on_callbacks(vec![result]).await?;
    Ok(())
}

async fn context(s: &Setup, id: InstanceId) -> anyhow::Result<Value> {
    let row = s.store.load_instance(id).await?.expect("instance");
    Ok(serde_json::from_str(&row.context)?)
}

/// Statuses of `node`'s runs, oldest first.
async fn statuses(s: &Setup, id: InstanceId, name: &str) -> anyhow::Result<Vec<RunStatus>> {
    let runs = s.store.instance_runs(id).await?;
    Ok(runs.iter().filter(|r| r.node == name).map(|r| r.status).collect())
}

/// extract → {left (continue on failure), right} → join → cleanup on join's failure.
async fn operations(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 5).await?;
    let [extract, left, right, join, cleanup] = s.jobs[..] else { unreachable!() };
    let mut nodes = vec![
        node("extract", extract),
        node("left", left),
        node("right", right),
        node("join", join),
        node("cleanup", cleanup),
    ];
    nodes[1].continue_on_failure = true;
    let graph = Graph {
        input_schema: None,
        nodes,
        edges: vec![
            edge("extract", "left", Condition::Success),
            edge("extract", "right", Condition::Success),
            edge("left", "join", Condition::Success),
            edge("right", "join", Condition::Success),
            edge("join", "cleanup", Condition::Failure),
        ],
    };
    let w = s.store.add_workflow(&workflow(s.group, &graph, 5, "SKIP")).await?;
    let wf = s.engine.workflows();
    let StartOutcome::Started(id) = wf.start(w, Some(r#"{"day":"2030-01-01"}"#), TriggerType::Manual).await?
    else {
        anyhow::bail!("not started")
    };

    // The context travels: the root sees the start input, its children the root's output too.
    answer_with_output(&s, extract, 1, "extracted 3 rows", r#"{"rows":3}"#).await?;
    assert_eq!(context_of(&s, extract, 1).await?, json!({"day": "2030-01-01"}));
    answer(&s, left, 1, 500, "left broke").await?;
    answer(&s, right, 1, 200, r#"{"sum":10}"#).await?;
    let seen_by_left = context_of(&s, left, 1).await?;
    assert_eq!(seen_by_left["extract"], json!({"rows": 3}), "the output, not the message");
    assert_eq!(context_of(&s, join, 1).await?["right"]["sum"], 10, "a join sees every parent's output");
    answer(&s, join, 1, 500, "join broke").await?;
    answer(&s, cleanup, 1, 200, "cleaned").await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Failed);

    // Rerun from failure: `left` (the topmost failed node) runs again; `join`, failed below
    // it, waits for it and runs again; `cleanup`, which succeeded, stays done.
    wf.rerun_failed(id).await?;
    assert!(
        matches!(wf.rerun_failed(id).await, Err(jobwheel_admin::engine::OpError::Conflict(_))),
        "running"
    );
    answer(&s, left, 2, 200, "left ok").await?;
    answer(&s, join, 2, 200, "joined").await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Succeeded);
    assert_eq!(context_of(&s, join, 2).await?["left"], "left ok", "the rerun's output reached the join");
    assert_eq!(statuses(&s, id, "left").await?, vec![RunStatus::Failed, RunStatus::Succeeded]);
    assert_eq!(statuses(&s, id, "join").await?, vec![RunStatus::Revoked, RunStatus::Succeeded]);
    assert_eq!(statuses(&s, id, "cleanup").await?, vec![RunStatus::Succeeded]);
    let counts: Vec<usize> = s.jobs.iter().map(|j| runs_of(&s.fake, *j).len()).collect();
    assert_eq!(counts, vec![1, 2, 1, 2, 1], "each node ran exactly as often as it should");
    let done = context(&s, id).await?;
    assert_eq!((done["left"].clone(), done["join"].clone()), (json!("left ok"), json!("joined")));

    // A whole rerun: a new instance with the start input only.
    let StartOutcome::Started(again) = wf.rerun(id).await? else { anyhow::bail!("rerun not started") };
    assert_ne!(again, id);
    let stored =
        s.store.load_instance(again).await?.ok_or_else(|| anyhow::anyhow!("the rerun's instance"))?;
    assert_eq!((stored.trigger_type.known(), stored.rerun_of), (Some(TriggerType::Rerun), Some(id)));
    assert_eq!(stored.started_by(), format!("RERUN of {}", id.0));
    answer(&s, extract, 2, 500, "source down").await?;
    assert_eq!(
        context_of(&s, extract, 2).await?,
        json!({"day": "2030-01-01"}),
        "no outputs of the old instance"
    );
    assert_eq!(ended(&*s.store, again).await?, InstanceStatus::Failed);
    assert_eq!(statuses(&s, again, "join").await?, vec![RunStatus::Skipped]);

    // The failed root marked done with an output: everything skipped below it runs, with it.
    assert!(wf.mark_done(again, "left", None).await.is_err(), "only a failed node");
    wf.mark_done(again, "extract", Some(r#"{"rows":7}"#)).await?;
    answer(&s, left, 3, 200, "l").await?;
    answer(&s, right, 2, 200, "r").await?;
    assert_eq!(context_of(&s, left, 3).await?["extract"]["rows"], 7, "the given output reached the children");
    answer(&s, join, 3, 200, "j").await?;
    assert_eq!(ended(&*s.store, again).await?, InstanceStatus::Succeeded);
    assert_eq!(statuses(&s, again, "extract").await?, vec![RunStatus::Failed, RunStatus::Succeeded]);
    assert_eq!(
        statuses(&s, again, "cleanup").await?,
        vec![RunStatus::Revoked, RunStatus::Skipped],
        "planned again, skipped"
    );
    let counts: Vec<usize> = s.jobs.iter().map(|j| runs_of(&s.fake, *j).len()).collect();
    assert_eq!(counts, vec![2, 3, 2, 3, 1]);
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn context_passing_rerun_from_failure_and_mark_done_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), operations).await
}

#[tokio::test]
async fn context_passing_rerun_from_failure_and_mark_done_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, operations).await
}

#[tokio::test]
async fn context_passing_rerun_from_failure_and_mark_done_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, operations).await
}
