//! The alarms of workflow instances without a claim state (docs/workflows.md, "Alarms"), on
//! SQLite, PostgreSQL and MariaDB, through two engines ("admins") on one database and a
//! webhook receiver: an instance that failed on an admin that never swept again is told by the
//! other admin's first sweep, five minutes later; both sweeping at once tell it once; a rerun
//! that fails again is told again; an end older than the catch-up of a starting admin is not.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobwheel_admin::alarm::{UpstreamAlarms, UpstreamChannel, WebhookAlarm};
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::domain::TriggerType;
use jobwheel_admin::engine::{CATCH_UP_MS, Engine};
use jobwheel_admin::store::{
    DeliveryFilter, InstanceId, InstanceStatus, LogId, Page, StartOutcome, Store, WorkflowId,
};
use jobwheel_admin::workflow::Graph;
use serde_json::Value;

use crate::engine::completion::{callback, webhook_receiver};
use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, wait_for};
use crate::engine::workflows::{WAIT, node, workflow};

/// An admin: an engine whose upstream webhook posts to `url`, with its own clock.
fn admin(
    store: &Arc<dyn Store>,
    fake: &Arc<FakeExecutor>,
    url: &str,
    at: i64,
) -> anyhow::Result<(Arc<Engine>, Arc<ManualClock>)> {
    let clock = Arc::new(ManualClock::new(at));
    let upstream =
        UpstreamAlarms { mail: None, webhook: Some(WebhookAlarm::new(url, Duration::from_secs(5))?) };
    Ok((engine_with(store.clone(), fake.clone(), clock.clone(), upstream), clock))
}

/// Starts `workflow` on `engine` and fails its one node; the instance, once FAILED.
async fn start_and_fail(
    engine: &Engine,
    store: &dyn Store,
    fake: &FakeExecutor,
    workflow: WorkflowId,
) -> anyhow::Result<InstanceId> {
    let fired = fake.runs().len();
    let StartOutcome::Started(id) = engine.workflows().start(workflow, None, TriggerType::Manual).await?
    else {
        anyhow::bail!("a manual start")
    };
    let log = wait_for(WAIT, "the node fired", || async {
        Ok(fake.runs().get(fired).map(|(_, p)| LogId(p.log_id)))
    })
    .await?;
    engine.completion().on_callbacks(vec![callback(log, 500, "the warehouse is down")]).await?;
    failed(store, id).await?;
    Ok(id)
}

async fn failed(store: &dyn Store, id: InstanceId) -> anyhow::Result<()> {
    wait_for(WAIT, "the instance failed", || async {
        Ok(store.load_instance(id).await?.filter(|i| i.status == InstanceStatus::Failed).map(|_| ()))
    })
    .await
}

/// The webhook deliveries in the log: each is one raised alarm.
async fn told(store: &dyn Store) -> anyhow::Result<usize> {
    let filter = DeliveryFilter { channel: Some(UpstreamChannel::Webhook.id()), ..DeliveryFilter::default() };
    Ok(store.page_deliveries(&filter, Page { offset: 0, limit: 100 }).await?.rows.len())
}

async fn hooks_reach(hooks: &Arc<Mutex<Vec<Value>>>, n: usize) -> anyhow::Result<()> {
    wait_for(WAIT, "the webhook calls", || async {
        Ok((hooks.lock().expect("hooks").len() >= n).then_some(()))
    })
    .await
}

async fn run_on(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let (url, hooks) = webhook_receiver().await?;
    let g = group(&*store, "wf-alarms", &["http://a:9999/"]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    let node_job = store.add_job(&j).await?;
    let graph = Graph { nodes: vec![node("load", node_job)], edges: vec![], input_schema: None };
    let id = store.add_workflow(&workflow(g, &graph, 5, "SKIP")).await?;

    // Admin A fails an instance and never sweeps; admin B starts five minutes later and tells it.
    let (a, a_clock) = admin(&store, &fake, &url, T0)?;
    let first = start_and_fail(&a, &*store, &fake, id).await?;
    let later = T0 + 300_000;
    let (b, _) = admin(&store, &fake, &url, later)?;
    assert_eq!(b.workflows().sweep(later).await?.alarms, 1, "B's first sweep looks back");
    hooks_reach(&hooks, 1).await?;
    assert_eq!(hooks.lock().expect("hooks")[0]["instanceId"], first.0);
    assert_eq!(a.workflows().sweep(later).await?.alarms, 0, "recorded: A does not tell it again");
    assert_eq!(b.workflows().sweep(later + 1_000).await?.alarms, 0, "nor B");

    // Both sweep at once after a second failure: told once.
    a_clock.set(later + 1_500);
    let second = start_and_fail(&a, &*store, &fake, id).await?;
    let at = later + 2_000;
    let (ra, rb) = tokio::join!(a.workflows().sweep(at), b.workflows().sweep(at));
    assert!(ra?.alarms + rb?.alarms >= 1);
    hooks_reach(&hooks, 2).await?;
    wait_for(WAIT, "two deliveries", || async { Ok((told(&*store).await? == 2).then_some(())) }).await?;

    // A rerun of the failed node that fails again is a new failure, told again.
    a_clock.set(at + 500);
    let fired = fake.runs().len();
    a.workflows().rerun_failed(second).await?;
    let log = wait_for(WAIT, "the rerun fired", || async {
        Ok(fake.runs().get(fired).map(|(_, p)| LogId(p.log_id)))
    })
    .await?;
    a.completion().on_callbacks(vec![callback(log, 500, "still down")]).await?;
    failed(&*store, second).await?;
    assert_eq!(b.workflows().sweep(at + 1_000).await?.alarms, 1, "the second failure of the instance");
    hooks_reach(&hooks, 3).await?;
    assert_eq!(hooks.lock().expect("hooks")[2]["instanceId"], second.0);

    // An admin starting later than its catch-up does not tell what ended before it.
    a_clock.set(at + 5_000);
    let third = start_and_fail(&a, &*store, &fake, id).await?;
    let ended = store.load_instance(third).await?.expect("instance").end_ms;
    let (c, _) = admin(&store, &fake, &url, ended + CATCH_UP_MS + 1)?;
    assert_eq!(c.workflows().sweep(ended + CATCH_UP_MS + 1).await?.alarms, 0, "older than the catch-up");
    assert_eq!(told(&*store).await?, 3);
    Ok(())
}

#[tokio::test]
async fn instance_alarms_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), run_on).await
}

#[tokio::test]
async fn instance_alarms_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, run_on).await
}

#[tokio::test]
async fn instance_alarms_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, run_on).await
}
