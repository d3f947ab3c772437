//! A workflow's schedule under calendars, and its alarms, through the engine's sweep with
//! controlled time, on SQLite, PostgreSQL and MariaDB. A daily 09:00 workflow never on
//! weekends: Friday's start runs and fails (one `WORKFLOW_FAIL` webhook naming the node and its
//! message), the next start is Monday; Monday's found 10 s late under `DO_NOTHING` is kept as a
//! MISSED instance (one `WORKFLOW_MISSED` webhook) and never runs; a calendar changed to
//! exclude Tuesday makes Tuesday's already-computed start move on without a start or an alarm;
//! Wednesday's start at max instances (`SKIP`) is MISSED too. Each alarm is sent once, however
//! often the sweep runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobwheel_admin::alarm::{UpstreamAlarms, WebhookAlarm};
use jobwheel_admin::calendar::CalendarDays;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::store::{
    InstanceRow, InstanceStatus, LogId, NewCalendar, ScheduleStatus, Store, WorkflowId,
};
use jobwheel_admin::workflow::{Graph, WorkflowDays};
use serde_json::{Value, json};

use crate::engine::completion::{callback, webhook_receiver};
use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, wait_for};
use crate::engine::workflows::{WAIT, node, workflow};
use jobwheel_admin::domain::TriggerType;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
/// 09:00 UTC on the days after T0 (Tuesday 2030-01-01): Friday the 4th, Monday the 7th, …
const FRI: i64 = T0 + 3 * DAY + 9 * HOUR;
const MON: i64 = T0 + 6 * DAY + 9 * HOUR;
const TUE: i64 = T0 + 7 * DAY + 9 * HOUR;
const WED: i64 = T0 + 8 * DAY + 9 * HOUR;

fn calendar(weekdays: &[&str]) -> anyhow::Result<NewCalendar> {
    let days: CalendarDays = serde_json::from_value(json!({ "weekdays": weekdays }))?;
    let (normalized, _) = days.normalize()?;
    Ok(NewCalendar {
        name: "rest days".into(),
        description: String::new(),
        days: serde_json::to_string(&normalized)?,
        update_ms: 0,
    })
}

async fn instances(store: &dyn Store, id: WorkflowId) -> anyhow::Result<Vec<InstanceRow>> {
    let page = store.page_instances(id, jobwheel_admin::store::Page { offset: 0, limit: 100 }).await?;
    Ok(page.rows.into_iter().rev().collect())
}

/// Waits for the `n`-th webhook body.
async fn nth_hook(hooks: &Arc<Mutex<Vec<Value>>>, n: usize) -> anyhow::Result<Value> {
    wait_for(Duration::from_secs(10), "a workflow alarm", || async {
        Ok(hooks.lock().expect("hooks").get(n - 1).cloned())
    })
    .await
}

async fn schedule(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let (url, hooks) = webhook_receiver().await?;
    let upstream =
        UpstreamAlarms { webhook: Some(WebhookAlarm::new(url, Duration::from_secs(5))?), mail: None };
    let clock = Arc::new(ManualClock::new(T0));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), upstream);
    let g = group(&*store, "wf-days", &["http://a:9999/"]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    let job = store.add_job(&j).await?;
    let rest = store.add_calendar(&calendar(&["SAT", "SUN"])?).await?;

    let graph = Graph { nodes: vec![node("load", job)], edges: vec![], input_schema: None };
    let mut w = workflow(g, &graph, 1, "SKIP");
    w.schedule_type = "CRON".into();
    w.schedule_conf = Some("0 0 9 * * ?".into());
    w.time_zone = Some("UTC".into());
    w.days = WorkflowDays { never_on: vec![rest.0], ..WorkflowDays::default() }.to_stored();
    w.status = ScheduleStatus::Running;
    w.trigger_next_time = FRI;
    let id = store.add_workflow(&w).await?;
    let wf = engine.workflows();

    // Friday: it starts, its node fails, the next start skips the weekend.
    clock.set(FRI);
    assert_eq!(wf.sweep(FRI).await?.started, 1);
    let friday = wait_for(WAIT, "Friday's node fired", || async {
        Ok(fake.runs().first().map(|(_, p)| LogId(p.log_id)))
    })
    .await?;
    engine.completion().on_callbacks(vec![callback(friday, 500, "the warehouse is down")]).await?;
    let next = store.load_workflow(id).await?.expect("workflow").workflow.trigger_next_time;
    assert_eq!(next, MON, "never on the weekend: Monday 09:00");
    wait_for(WAIT, "Friday's instance failed", || async {
        Ok(instances(&*store, id).await?.first().filter(|i| i.status == InstanceStatus::Failed).map(|_| ()))
    })
    .await?;
    assert_eq!(wf.sweep(FRI + 1000).await?.alarms, 1);
    let fail = nth_hook(&hooks, 1).await?;
    assert_eq!(fail["alarmType"], "WORKFLOW_FAIL", "{fail}");
    assert_eq!(fail["workflowId"], id.0);
    assert_eq!(fail["failedNodes"], json!([{"node": "load", "message": "the warehouse is down"}]), "{fail}");
    assert_eq!(wf.sweep(FRI + 2000).await?.alarms, 0, "alarmed once");

    // Monday, found 10 s late under DO_NOTHING: kept as MISSED, alarmed once, never run.
    let runs_before = fake.runs().len();
    clock.set(MON + 10_000);
    let report = wf.sweep(MON + 10_000).await?;
    assert_eq!(report.started, 0, "{report:?}");
    assert_eq!(report.alarms, 1, "{report:?}");
    let missed = nth_hook(&hooks, 2).await?;
    assert_eq!(missed["alarmType"], "WORKFLOW_MISSED", "{missed}");
    assert_eq!(missed["triggerType"], "MISFIRE");
    assert_eq!(missed["fireTime"], MON);
    let all = instances(&*store, id).await?;
    assert_eq!(all.len(), 2);
    assert_eq!((all[1].status, all[1].fire_time_ms), (InstanceStatus::Missed, MON));
    assert_eq!(store.load_workflow(id).await?.expect("workflow").workflow.trigger_next_time, TUE);
    assert_eq!(wf.sweep(MON + 11_000).await?.alarms, 0, "alarmed once");

    // The calendar now rests on Tuesdays too: Tuesday's start, computed before, moves on to
    // Wednesday without an instance or an alarm.
    store.update_calendar(rest, &calendar(&["SAT", "SUN", "TUE"])?).await?;
    clock.set(TUE);
    let report = wf.sweep(TUE).await?;
    assert_eq!((report.started, report.alarms), (0, 0), "{report:?}");
    assert_eq!(instances(&*store, id).await?.len(), 2, "no instance for an excluded day");
    assert_eq!(store.load_workflow(id).await?.expect("workflow").workflow.trigger_next_time, WED);

    // Wednesday with one instance running (max 1, SKIP): the scheduled start is MISSED.
    clock.set(WED - 60_000);
    let jobwheel_admin::store::StartOutcome::Started(_) = wf.start(id, None, TriggerType::Manual).await?
    else {
        anyhow::bail!("a manual start")
    };
    clock.set(WED);
    let report = wf.sweep(WED).await?;
    assert_eq!((report.started, report.alarms), (0, 1), "{report:?}");
    let skipped = nth_hook(&hooks, 3).await?;
    assert_eq!(
        (skipped["alarmType"].as_str(), skipped["triggerType"].as_str()),
        (Some("WORKFLOW_MISSED"), Some("CRON"))
    );
    assert!(skipped["summary"].as_str().unwrap_or_default().contains("maximum of instances"), "{skipped}");
    assert_eq!(fake.runs().len(), runs_before + 1, "only the manual start ran");
    engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn workflow_calendars_missed_starts_and_alarms_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), schedule).await
}

#[tokio::test]
async fn workflow_calendars_missed_starts_and_alarms_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, schedule).await
}

#[tokio::test]
async fn workflow_calendars_missed_starts_and_alarms_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, schedule).await
}
