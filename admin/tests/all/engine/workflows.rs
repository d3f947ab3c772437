//! Workflows through the engine with a fake executor and controlled time, on SQLite, PostgreSQL
//! and MariaDB: a join, a retry, "continue on failure", a failure edge, a disabled node and the
//! context; then (SQLite) max instances, stop, and what the sweep recovers — a start nobody
//! planned, a result nobody advanced, a due run nobody fired — with two admins sweeping at once.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::Engine;
use jobwheel_admin::store::{
    Admission, GroupId, InstanceId, InstanceStatus, JobId, NewInstance, NewWorkflow, RunRow, RunStatus,
    ScheduleStatus, StartOutcome, Store, WorkflowId,
};
use jobwheel_admin::workflow::{Condition, Edge, Graph, Node, NodeKind};

use crate::engine::completion::callback;
use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, wait_for};
use jobwheel_admin::domain::TriggerType;

pub(crate) const WAIT: Duration = Duration::from_secs(20);

pub(crate) fn node(name: &str, job: JobId) -> Node {
    Node {
        name: name.into(),
        kind: NodeKind::Job,
        job_id: job.0,
        param: Some(format!("param-of-{name}")),
        retries: 0,
        retry_delay_secs: 0,
        timeout_secs: 0,
        continue_on_failure: false,
        disabled: false,
        delivery: None,
        input_schema: None,
        output_schema: None,
        on_deadline: None,
        workflow_id: None,
        items: None,
        parallelism: None,
        collect: None,
        x: None,
        y: None,
    }
}

pub(crate) fn edge(from: &str, to: &str, when: Condition) -> Edge {
    Edge { from: from.into(), to: to.into(), when, guard: None }
}

pub(crate) fn workflow(group: GroupId, graph: &Graph, max: i32, overflow: &str) -> NewWorkflow {
    NewWorkflow {
        name: "nightly".into(),
        job_group: group,
        schedule_type: "NONE".into(),
        schedule_conf: None,
        time_zone: None,
        misfire_strategy: "DO_NOTHING".into(),
        max_instances: max,
        overflow: overflow.into(),
        graph: graph.to_json(),
        status: ScheduleStatus::Stopped,
        trigger_last_time: 0,
        trigger_next_time: 0,
        author: "test".into(),
        update_ms: T0,
        days: Default::default(),
        alarm_email: String::new(),
    }
}

pub(crate) struct Setup {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) fake: Arc<FakeExecutor>,
    pub(crate) engine: Arc<Engine>,
    pub(crate) group: GroupId,
    pub(crate) jobs: Vec<JobId>,
    pub(crate) clock: Arc<ManualClock>,
}

pub(crate) async fn setup(db: &Db, jobs: usize) -> anyhow::Result<Setup> {
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let clock = Arc::new(ManualClock::new(T0));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let group = group(&*store, "wf-app", &["http://a:9999/"]).await?;
    let mut ids = Vec::new();
    for _ in 0..jobs {
        let mut j = job(group, 0);
        j.trigger_status = 0;
        ids.push(store.add_job(&j).await?);
    }
    Ok(Setup { store, fake, engine, group, jobs: ids, clock })
}

/// The `/run` calls of `job` so far: their log ids and parameters.
pub(crate) fn runs_of(fake: &FakeExecutor, job: JobId) -> Vec<(i64, String)> {
    fake.runs()
        .into_iter()
        .filter(|(_, p)| p.job_id == job.0)
        .map(|(_, p)| (p.log_id, p.executor_params))
        .collect()
}

/// Waits for the `n`th `/run` of `job` and answers it with `code` and `msg`.
pub(crate) async fn answer(s: &Setup, job: JobId, n: usize, code: i32, msg: &str) -> anyhow::Result<()> {
    let log = wait_for(WAIT, &format!("run {n} of job {job}"), || async {
        Ok(runs_of(&s.fake, job).get(n - 1).map(|(log, _)| *log))
    })
    .await?;
    s.engine.completion().on_callbacks(vec![callback(jobwheel_admin::store::LogId(log), code, msg)]).await?;
    Ok(())
}

/// A second admin on `db`, with its own executor client and clock at [`T0`].
pub(crate) async fn second_admin(db: &Db) -> anyhow::Result<(Arc<Engine>, Arc<FakeExecutor>)> {
    let fake = Arc::new(FakeExecutor::default());
    let engine = engine_with(
        db.connect().await?,
        fake.clone(),
        Arc::new(ManualClock::new(T0)),
        UpstreamAlarms::default(),
    );
    Ok((engine, fake))
}

pub(crate) async fn ended(store: &dyn Store, id: InstanceId) -> anyhow::Result<InstanceStatus> {
    wait_for(WAIT, "the instance to end", || async {
        let row = store.load_instance(id).await?.expect("instance");
        Ok(row.status.is_over().then_some(row.status))
    })
    .await
}

/// extract → {left (continue on failure), right (1 retry)} → join → cleanup on join's failure;
/// `off` disabled hangs off extract.
async fn diamond(db: &Db) -> anyhow::Result<()> {
    let s = setup(db, 6).await?;
    let [extract, left, right, join, cleanup, off] = s.jobs[..] else { unreachable!() };
    let mut nodes = vec![
        node("extract", extract),
        node("left", left),
        node("right", right),
        node("join", join),
        node("cleanup", cleanup),
        node("off", off),
    ];
    nodes[1].continue_on_failure = true;
    nodes[2].retries = 1;
    nodes[5].disabled = true;
    let graph = Graph {
        input_schema: None,
        nodes,
        edges: vec![
            edge("extract", "left", Condition::Success),
            edge("extract", "right", Condition::Success),
            edge("extract", "off", Condition::Success),
            edge("left", "join", Condition::Success),
            edge("right", "join", Condition::Success),
            edge("join", "cleanup", Condition::Failure),
        ],
    };
    let w = s.store.add_workflow(&workflow(s.group, &graph, 1, "SKIP")).await?;
    let started = s.engine.workflows().start(w, Some(r#"{"day":"2030-01-01"}"#), TriggerType::Manual).await?;
    let StartOutcome::Started(id) = started else { anyhow::bail!("not started: {started:?}") };

    answer(&s, extract, 1, 200, r#"{"rows":3}"#).await?;
    answer(&s, left, 1, 500, "left broke").await?;
    answer(&s, right, 1, 500, "right broke once").await?;
    answer(&s, right, 2, 200, "right ok").await?;
    assert!(runs_of(&s.fake, join).len() <= 1);
    answer(&s, join, 1, 500, "join broke").await?;
    answer(&s, cleanup, 1, 200, "cleaned").await?;
    assert_eq!(
        ended(&*s.store, id).await?,
        InstanceStatus::Failed,
        "join failed without continue-on-failure"
    );

    // Every node ran exactly as often as it should; the disabled one never.
    let counts: Vec<usize> =
        [extract, left, right, join, cleanup, off].iter().map(|j| runs_of(&s.fake, *j).len()).collect();
    assert_eq!(counts, vec![1, 1, 2, 1, 1, 0]);
    assert_eq!(runs_of(&s.fake, join)[0].1, "param-of-join", "the node's parameter");
    let instance = s.store.load_instance(id).await?.expect("instance");
    let context: serde_json::Value = serde_json::from_str(&instance.context)?;
    assert_eq!(context["day"], "2030-01-01", "the start's input stays");
    assert_eq!(context["extract"]["rows"], 3, "JSON output merged under the node's name");
    assert_eq!(context["right"], "right ok", "a plain message is a string output");
    assert_eq!(context["cleanup"], "cleaned");
    assert!(context.get("join").is_none(), "a failed node adds nothing");
    let runs = s.store.instance_runs(id).await?;
    let state =
        |name: &str| -> Vec<RunStatus> { runs.iter().filter(|r| r.node == name).map(|r| r.status).collect() };
    assert_eq!(state("off"), vec![RunStatus::Passed]);
    assert_eq!(state("right"), vec![RunStatus::Failed, RunStatus::Succeeded]);
    assert_eq!(state("left"), vec![RunStatus::Failed]);
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn a_diamond_runs_each_node_once_with_joins_retries_and_conditions_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), diamond).await
}

#[tokio::test]
async fn a_diamond_runs_each_node_once_with_joins_retries_and_conditions_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, diamond).await
}

#[tokio::test]
async fn a_diamond_runs_each_node_once_with_joins_retries_and_conditions_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, diamond).await
}

fn one_node(job: JobId) -> Graph {
    Graph { nodes: vec![node("only", job)], edges: Vec::new(), input_schema: None }
}

async fn instance_runs(store: &dyn Store, id: InstanceId) -> anyhow::Result<Vec<RunRow>> {
    Ok(store.instance_runs(id).await?)
}

#[tokio::test]
async fn max_instances_skip_or_queue_and_stop_kills_the_running_node() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let s = setup(&db, 1).await?;
    let skip = s.store.add_workflow(&workflow(s.group, &one_node(s.jobs[0]), 1, "SKIP")).await?;
    let wf = s.engine.workflows();
    let StartOutcome::Started(first) = wf.start(skip, None, TriggerType::Manual).await? else {
        anyhow::bail!("first")
    };
    assert_eq!(
        wf.start(skip, None, TriggerType::Manual).await?,
        StartOutcome::Skipped,
        "one at a time, skip beyond"
    );
    wait_for(WAIT, "first's node fired", || async { Ok((!s.fake.runs().is_empty()).then_some(())) }).await?;
    // `a`'s `/run` is held on its way, so the stop below comes before the trigger knows where
    // the run went.
    let release = s.fake.hold_runs_at("http://a:9999/");
    let queue = s.store.add_workflow(&workflow(s.group, &one_node(s.jobs[0]), 1, "QUEUE")).await?;
    let StartOutcome::Started(a) = wf.start(queue, None, TriggerType::Manual).await? else {
        anyhow::bail!("a")
    };
    let StartOutcome::Queued(b) = wf.start(queue, None, TriggerType::Manual).await? else {
        anyhow::bail!("b queued")
    };
    assert!(wf.start(skip, Some("[1]"), TriggerType::Manual).await.is_err(), "a context must be an object");

    // Stopping the first instance of `queue` kills its fired node and admits the queued one.
    wait_for(WAIT, "a's node sent", || async { Ok((s.fake.runs().len() >= 2).then_some(())) }).await?;
    let a_log = instance_runs(&*s.store, a).await?[0].log_id.expect("fired");
    assert!(wf.stop(a).await?);
    assert!(!wf.stop(a).await?, "once");
    assert_eq!(s.store.load_instance(a).await?.map(|i| i.status), Some(InstanceStatus::Stopped));
    assert_eq!(instance_runs(&*s.store, a).await?[0].status, RunStatus::Stopped);
    assert!(s.fake.kills.lock().expect("kills").is_empty(), "nowhere to send a kill yet");
    *s.fake.hold_runs.lock().expect("hold") = None;
    release.notify_waiters();
    // The kill follows as soon as the trigger records where the run went.
    wait_for(WAIT, "its executor was asked to kill it", || async {
        let kills = s.fake.kills.lock().expect("kills").clone();
        Ok(kills.iter().any(|(_, job)| *job == s.jobs[0].0).then_some(()))
    })
    .await?;
    // A late result of the stopped run changes nothing.
    s.engine.completion().on_callbacks(vec![callback(a_log, 200, "late")]).await?;
    wf.sweep(T0).await?;
    let b_row = s.store.load_instance(b).await?.expect("b");
    assert_eq!(b_row.status, InstanceStatus::Running, "the queued instance was admitted");
    wait_for(WAIT, "b's node fired", || async {
        Ok(instance_runs(&*s.store, b).await?.first().filter(|r| r.status == RunStatus::Fired).map(|_| ()))
    })
    .await?;
    assert_eq!(s.store.load_instance(a).await?.map(|i| i.status), Some(InstanceStatus::Stopped));
    assert_eq!(s.store.load_instance(first).await?.map(|i| i.status), Some(InstanceStatus::Running));
    s.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn the_sweep_recovers_what_a_dead_admin_left_and_two_admins_fire_each_run_once() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let s = setup(&db, 2).await?;
    let (other, other_fake) = second_admin(&db).await?;
    let graph = Graph {
        input_schema: None,
        nodes: vec![node("first", s.jobs[0]), node("second", s.jobs[1])],
        edges: vec![edge("first", "second", Condition::Success)],
    };
    let w: WorkflowId = s.store.add_workflow(&workflow(s.group, &graph, 5, "SKIP")).await?;
    // "A dead admin" started an instance and died before planning it.
    let new = NewInstance {
        workflow_id: w,
        trigger_type: TriggerType::Api,
        rerun_of: None,
        fire_time_ms: T0,
        graph: graph.to_json(),
        context: "{}".into(),
    };
    let admission = Admission { max: 5, queue: false, advance: None, now_ms: T0, keep_missed: false };
    let StartOutcome::Started(id) = s.store.start_instance(&new, admission).await? else {
        anyhow::bail!("start")
    };
    // Both admins sweep at once: the root is planned once and fired once.
    let (x, y) = tokio::join!(s.engine.workflows().sweep(T0), other.workflows().sweep(T0));
    x?;
    y?;
    wait_for(WAIT, "first fired", || async {
        Ok((s.fake.runs().len() + other_fake.runs().len() >= 1).then_some(()))
    })
    .await?;
    s.engine.triggers().wait_idle().await;
    other.triggers().wait_idle().await;
    let runs = instance_runs(&*s.store, id).await?;
    assert_eq!(runs.len(), 1, "planned once: {runs:?}");
    assert_eq!(s.fake.runs().len() + other_fake.runs().len(), 1, "fired once");

    // "A dead admin" stored the result but never advanced the instance.
    let log = runs[0].log_id.expect("fired");
    let result = jobwheel_admin::store::HandleResult {
        log_id: log,
        handle_time: crate::engine::support::at_ms(T0),
        handle_code: 200,
        handle_msg: Some("1".into()),
    };
    s.store.apply_handle_result(&result).await?;
    let (x, y) = tokio::join!(s.engine.workflows().sweep(T0 + 1000), other.workflows().sweep(T0 + 1000));
    x?;
    y?;
    wait_for(WAIT, "second fired", || async {
        let all: Vec<_> = s
            .fake
            .runs()
            .into_iter()
            .chain(other_fake.runs())
            .filter(|(_, p)| p.job_id == s.jobs[1].0)
            .collect();
        Ok((!all.is_empty()).then_some(all.len()))
    })
    .await?;
    s.engine.triggers().wait_idle().await;
    other.triggers().wait_idle().await;
    let second: Vec<_> =
        s.fake.runs().into_iter().chain(other_fake.runs()).filter(|(_, p)| p.job_id == s.jobs[1].0).collect();
    assert_eq!(second.len(), 1, "the child fired once");
    let runs = instance_runs(&*s.store, id).await?;
    assert_eq!(
        runs.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![RunStatus::Succeeded, RunStatus::Fired]
    );
    Ok(())
}
