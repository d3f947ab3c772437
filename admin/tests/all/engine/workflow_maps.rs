//! Map nodes through the engine with a fake executor, on SQLite, PostgreSQL and MariaDB: a map
//! node runs its job once per item of an array in the context, never more than its parallelism
//! at once, each item with the node's retries and its item as `workflowItem` and parameter; the
//! reduce step after it gets the outputs in item order; a failed item fails the map naming it,
//! and rerun from failure runs the failed items only; a stop kills the running items and stops
//! the rest; an empty array passes, a missing one fails with the reason; two admins sweeping a map
//! whose results nobody settled fire every item once.

use jobwheel_admin::domain::TriggerType;
use jobwheel_admin::store::{
    InstanceId, InstanceStatus, JobId, LogId, RunId, RunStatus, StartOutcome, WorkflowId,
};
use jobwheel_admin::workflow::{Condition, Graph, Node, NodeKind};
use serde_json::{Value, json};

use crate::engine::completion::callback;
use crate::engine::support::{Db, T0, wait_for};
use crate::engine::workflows::{Setup, WAIT, edge, ended, node, runs_of, second_admin, setup, workflow};

fn map(name: &str, job: JobId, items: &str, parallelism: u32) -> Node {
    Node {
        kind: NodeKind::Map,
        param: None,
        items: Some(items.into()),
        parallelism: Some(parallelism),
        ..node(name, job)
    }
}

/// load → each (map over /load/ids) → reduce.
fn graph(each: Node, load: JobId, reduce: JobId) -> Graph {
    Graph {
        nodes: vec![node("load", load), each, node("reduce", reduce)],
        edges: vec![edge("load", "each", Condition::Success), edge("each", "reduce", Condition::Success)],
        input_schema: None,
    }
}

async fn start(s: &Setup, workflow: WorkflowId) -> anyhow::Result<InstanceId> {
    match s.engine.workflows().start(workflow, None, TriggerType::Manual).await? {
        StartOutcome::Started(id) => Ok(id),
        other => anyhow::bail!("not started: {other:?}"),
    }
}

/// The `/run`s of `job` whose parameter is `param` (an item's, as the node sets none).
fn item_runs(s: &Setup, job: JobId, param: &str) -> Vec<i64> {
    runs_of(&s.fake, job).into_iter().filter(|(_, p)| p == param).map(|(log, _)| log).collect()
}

/// Waits for the `n`th `/run` of item `param` and answers it.
async fn answer_item(
    s: &Setup,
    job: JobId,
    param: &str,
    n: usize,
    code: i32,
    msg: &str,
) -> anyhow::Result<()> {
    let log = wait_for(WAIT, &format!("run {n} of item {param}"), || async {
        Ok(item_runs(s, job, param).get(n - 1).copied())
    })
    .await?;
    s.engine.completion().on_callbacks(vec![callback(LogId(log), code, msg)]).await?;
    Ok(())
}

async fn answer_load(s: &Setup, job: JobId, n: usize, ids: &Value) -> anyhow::Result<()> {
    crate::engine::workflows::answer(s, job, n, 200, &json!({ "ids": ids }).to_string()).await
}

async fn run_of(s: &Setup, id: InstanceId, name: &str) -> anyhow::Result<jobwheel_admin::store::RunRow> {
    let runs = s.store.instance_runs(id).await?;
    runs.into_iter()
        .filter(|r| r.node == name)
        .max_by_key(|r| r.id.0)
        .ok_or_else(|| anyhow::anyhow!("no run"))
}

async fn counts(s: &Setup, run: RunId) -> anyhow::Result<jobwheel_admin::store::ItemCounts> {
    Ok(s.store.item_counts(&[run]).await?.pop().map(|(_, c)| c).unwrap_or_default())
}

async fn maps(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 3).await?;
    let [load, work, reduce] = s.jobs[..] else { unreachable!() };
    let each = Node { retries: 1, ..map("each", work, "/load/ids", 3) };
    let g = graph(each, load, reduce);
    g.check()?;
    let w = s.store.add_workflow(&workflow(s.group, &g, 10, "SKIP")).await?;

    // Ten items, three at a time; item 4 fails once and is retried; the reduce step gets the
    // outputs in item order.
    let first = start(&s, w).await?;
    answer_load(&s, load, 1, &json!([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])).await?;
    let fired = |s: &Setup| runs_of(&s.fake, work).len();
    wait_for(WAIT, "three items fired", || async { Ok((fired(&s) == 3).then_some(())) }).await?;
    let map_run = run_of(&s, first, "each").await?;
    assert_eq!(map_run.status, RunStatus::Waiting);
    let c = counts(&s, map_run.id).await?;
    assert_eq!((c.total, c.running, c.due), (10, 3, 7), "{c:?}");
    let mut answered = 0;
    for item in 0..10 {
        let param = item.to_string();
        if item == 4 {
            answer_item(&s, work, &param, 1, 500, "flaky").await?;
            answered += 1;
        }
        let n = if item == 4 { 2 } else { 1 };
        answer_item(&s, work, &param, n, 200, &json!({ "n": item * 10 }).to_string()).await?;
        answered += 1;
        assert!(
            fired(&s) <= answered + 3,
            "more than the parallelism ran: {} fired, {answered} answered",
            fired(&s)
        );
    }
    crate::engine::workflows::answer(&s, reduce, 1, 200, "reduced").await?;
    assert_eq!(ended(&*s.store, first).await?, InstanceStatus::Succeeded);
    assert_eq!(fired(&s), 11, "ten items and one retry");
    let all = s.fake.runs();
    let items: Vec<_> = all.iter().filter(|(_, p)| p.job_id == work.0).map(|(_, p)| p.clone()).collect();
    for p in &items {
        assert!(p.workflow_context.is_none(), "an item's run gets no context");
        assert_eq!(p.workflow_item.as_ref().map(Value::to_string), Some(p.executor_params.clone()));
        assert!(p.fire_key.as_deref().unwrap_or_default().contains("/each/"), "{:?}", p.fire_key);
    }
    let mut keys: Vec<_> = items.iter().filter_map(|p| p.fire_key.clone()).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 11, "each attempt of each item has its own key");
    let seen = all.iter().find(|(_, p)| p.job_id == reduce.0).and_then(|(_, p)| p.workflow_context.clone());
    let outputs: Vec<Value> = (0..10).map(|i| json!({ "n": i * 10 })).collect();
    assert_eq!(seen.expect("reduce's context")["each"], Value::Array(outputs));
    let run = run_of(&s, first, "each").await?;
    assert_eq!((run.status, run.message.as_deref()), (RunStatus::Succeeded, Some("10 items succeeded")));
    let c = counts(&s, run.id).await?;
    assert_eq!((c.total, c.succeeded, c.failed), (10, 10, 0));

    // An item that fails after its retry fails the map, naming it; rerun from failure runs the
    // failed item only, and the reduce step then sees every output in order.
    let second = start(&s, w).await?;
    answer_load(&s, load, 2, &json!(["a", "b", "c"])).await?;
    answer_item(&s, work, "a", 1, 200, "1").await?;
    answer_item(&s, work, "b", 1, 500, "boom").await?;
    answer_item(&s, work, "b", 2, 500, "boom again").await?;
    answer_item(&s, work, "c", 1, 200, "3").await?;
    assert_eq!(ended(&*s.store, second).await?, InstanceStatus::Failed);
    let run = run_of(&s, second, "each").await?;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.message.as_deref(), Some("1 of 3 items failed; the first, item 1: boom again"));
    s.engine.workflows().rerun_failed(second).await?;
    answer_item(&s, work, "b", 3, 200, "2").await?;
    crate::engine::workflows::answer(&s, reduce, 2, 200, "reduced").await?;
    assert_eq!(ended(&*s.store, second).await?, InstanceStatus::Succeeded);
    assert_eq!((item_runs(&s, work, "a").len(), item_runs(&s, work, "c").len()), (1, 1), "only b ran again");
    let seen = s
        .fake
        .runs()
        .into_iter()
        .filter(|(_, p)| p.job_id == reduce.0)
        .nth(1)
        .and_then(|(_, p)| p.workflow_context);
    assert_eq!(seen.expect("reduce's context")["each"], json!([1, 2, 3]));

    // A stop kills the running items and stops the others.
    let third = start(&s, w).await?;
    answer_load(&s, load, 3, &json!(["x1", "x2", "x3", "x4", "x5"])).await?;
    wait_for(WAIT, "three x items fired", || async {
        let n = ["x1", "x2", "x3"].iter().filter(|p| !item_runs(&s, work, p).is_empty()).count();
        Ok((n == 3).then_some(()))
    })
    .await?;
    s.engine.triggers().wait_idle().await;
    assert!(s.engine.workflows().stop(third).await?);
    let run = run_of(&s, third, "each").await?;
    assert_eq!(run.status, RunStatus::Stopped);
    let c = counts(&s, run.id).await?;
    assert_eq!((c.stopped, c.running, c.due), (5, 0, 0), "{c:?}");
    wait_for(WAIT, "the running items killed", || async {
        let kills = s.fake.kills.lock().expect("lock").iter().filter(|(_, job)| *job == work.0).count();
        Ok((kills >= 3).then_some(()))
    })
    .await?;

    // An empty array passes at once; no array fails the map with the reason.
    let fourth = start(&s, w).await?;
    answer_load(&s, load, 4, &json!([])).await?;
    crate::engine::workflows::answer(&s, reduce, 3, 200, "nothing").await?;
    assert_eq!(ended(&*s.store, fourth).await?, InstanceStatus::Succeeded);
    assert_eq!(run_of(&s, fourth, "each").await?.output.as_deref(), Some("[]"));
    let fifth = start(&s, w).await?;
    answer_load(&s, load, 5, &json!(7)).await?;
    assert_eq!(ended(&*s.store, fifth).await?, InstanceStatus::Failed);
    let message = run_of(&s, fifth, "each").await?.message.unwrap_or_default();
    assert_eq!(message, "the map did not start: /load/ids is not an array but a number");
    Ok(())
}

/// Two admins: results stored by "a dead admin" that never settled them are settled by the
/// sweeps, and every item is fired once across both.
async fn recovery(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 3).await?;
    let [load, work, reduce] = s.jobs[..] else { unreachable!() };
    let (other, other_fake) = second_admin(db).await?;
    let g = graph(Node { collect: Some(false), ..map("each", work, "/load/ids", 4) }, load, reduce);
    let w = s.store.add_workflow(&workflow(s.group, &g, 10, "SKIP")).await?;
    let id = start(&s, w).await?;
    answer_load(&s, load, 1, &Value::Array((0..20).map(Value::from).collect())).await?;
    let all_work = || {
        s.fake
            .runs()
            .into_iter()
            .chain(other_fake.runs())
            .filter(|(_, p)| p.job_id == work.0)
            .collect::<Vec<_>>()
    };
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < 20 {
        let fired = wait_for(WAIT, "items fired", || async {
            let runs = all_work();
            Ok((runs.len() > answered.len()).then_some(runs))
        })
        .await?;
        assert!(fired.len() <= 20, "an item fired twice");
        s.engine.triggers().wait_idle().await;
        other.triggers().wait_idle().await;
        // "A dead admin" stores the results of what is fired and never settles them.
        let new: Vec<i64> =
            fired.iter().map(|(_, p)| p.log_id).filter(|log| !answered.contains(log)).collect();
        for log_id in new {
            let result = jobwheel_admin::store::HandleResult {
                log_id: LogId(log_id),
                handle_time: crate::engine::support::at_ms(T0),
                handle_code: 200,
                handle_msg: Some("ok".into()),
            };
            s.store.apply_handle_result(&result).await?;
            answered.insert(log_id);
        }
        let (x, y) = tokio::join!(s.engine.workflows().sweep(T0 + 1000), other.workflows().sweep(T0 + 1000));
        x?;
        y?;
    }
    // Either admin fires the reduce step (whichever sweep settled the last item).
    let reduce_log = wait_for(WAIT, "the reduce step fired", || async {
        let all = s.fake.runs().into_iter().chain(other_fake.runs());
        Ok(all.filter(|(_, p)| p.job_id == reduce.0).map(|(_, p)| p.log_id).next())
    })
    .await?;
    s.engine.completion().on_callbacks(vec![callback(LogId(reduce_log), 200, "reduced")]).await?;
    assert_eq!(ended(&*s.store, id).await?, InstanceStatus::Succeeded);
    let mut items: Vec<String> = all_work().into_iter().map(|(_, p)| p.executor_params).collect();
    items.sort_by_key(|p| p.parse::<i32>().unwrap_or(-1));
    assert_eq!(items, (0..20).map(|i| i.to_string()).collect::<Vec<_>>(), "every item once");
    let run = run_of(&s, id, "each").await?;
    assert_eq!(run.output.as_deref(), Some(r#"{"failed":0,"items":20,"succeeded":20}"#));
    Ok(())
}

#[tokio::test]
async fn map_nodes_run_items_in_parallel_retry_reduce_rerun_and_stop_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), maps).await
}

#[tokio::test]
async fn map_nodes_run_items_in_parallel_retry_reduce_rerun_and_stop_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, maps).await
}

#[tokio::test]
async fn map_nodes_run_items_in_parallel_retry_reduce_rerun_and_stop_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, maps).await
}

#[tokio::test]
async fn two_admins_sweeping_a_map_fire_every_item_once_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), recovery).await
}

#[tokio::test]
async fn two_admins_sweeping_a_map_fire_every_item_once_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, recovery).await
}
