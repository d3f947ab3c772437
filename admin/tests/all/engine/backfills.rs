//! Backfills through the engine with a fake executor and controlled time, on SQLite,
//! PostgreSQL and MariaDB: a daily job's five past days run in order, two at a time, each keyed
//! and timed as the schedule's fire of that day (`job:<id>@<time>`), the day the schedule
//! already ran skipped; the backfill ends DONE with its counts; `RERUN` runs a day again;
//! a cancel hands out nothing more; a time handed out by an admin that died before sending it is
//! sent by the next sweep; two admins sweeping one backfill hand each time out once; a
//! workflow's backfill starts one instance per day with that day as its fire time; a calendar's
//! day off has no time to backfill.

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::calendar::CalendarDays;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::UNSENT_AFTER_MS;
use jobwheel_admin::store::{
    BackfillKind, BackfillStatus, DayRefs, GroupId, JobId, LogId, LogTriggerUpdate, NewBackfill, NewCalendar,
    NewLog, Store,
};
use jobwheel_admin::workflow::Graph;

use crate::engine::completion::callback;
use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job};
use crate::engine::workflows::{node, workflow};

const DAY: i64 = 86_400_000;
/// 2030-01-01T00:00:00Z, a day boundary; the job runs daily at 03:00 UTC.
const START: i64 = 1_893_456_000_000;
const AT_THREE: i64 = 3 * 3_600_000;

fn day(n: i64) -> i64 {
    START + (n - 1) * DAY + AT_THREE
}

fn request(
    kind: BackfillKind,
    target: i64,
    group: GroupId,
    days: (i64, i64),
    parallelism: i32,
    rerun: bool,
) -> NewBackfill {
    NewBackfill {
        target_kind: kind.name().to_owned(),
        target_id: target,
        job_group: group,
        from_ms: START + (days.0 - 1) * DAY,
        to_ms: START + days.1 * DAY - 1,
        parallelism,
        rerun_existing: i16::from(rerun),
        status: BackfillStatus::Running,
        cursor_ms: START + (days.0 - 1) * DAY - 1,
        total: i32::try_from(days.1 - days.0 + 1).unwrap_or(0),
        handed: 0,
        skipped: 0,
        message: None,
        author: "test".into(),
        created_ms: T0,
        end_ms: 0,
    }
}

/// The fire keys and scheduled times the fake executor was sent, in order.
fn sent(fake: &FakeExecutor) -> Vec<(String, i64)> {
    fake.runs()
        .into_iter()
        .map(|(_, p)| (p.fire_key.unwrap_or_default(), p.scheduled_time.unwrap_or(0)))
        .collect()
}

/// Answers every `/run` not answered yet with success.
async fn finish_all(
    engine: &jobwheel_admin::engine::Engine,
    fake: &FakeExecutor,
    answered: &mut usize,
) -> anyhow::Result<()> {
    let runs = fake.runs();
    let fresh: Vec<_> = runs[*answered..].iter().map(|(_, p)| callback(LogId(p.log_id), 200, "ok")).collect();
    *answered = runs.len();
    engine.completion().on_callbacks(fresh).await?;
    Ok(())
}

async fn backfills(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let now = START + 30 * DAY;
    let clock = Arc::new(ManualClock::new(now));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let g = group(&*store, "backfill-app", &["http://a:9999/"]).await?;
    let mut daily = job(g, 0);
    daily.trigger_status = 0;
    daily.schedule_conf = Some("0 0 3 * * ?".into());
    let id = store.add_job(&daily).await?;
    // The schedule already ran day 2 (its fire logs its scheduled second).
    let ran = store.insert_log(&NewLog { job_group: g, job_id: id, trigger_time: at(day(2)) }).await?;
    store
        .update_log_trigger(&LogTriggerUpdate {
            log_id: ran,
            trigger_time: at(day(2)),
            trigger_code: 200,
            trigger_msg: None,
            executor_address: Some("http://a:9999/".into()),
            executor_handler: None,
            executor_param: None,
            executor_sharding_param: None,
            executor_fail_retry_count: 0,
        })
        .await?;
    let backfills = engine.backfills();

    // Days 1 to 5, two at a time, day 2 skipped.
    let b = store.add_backfill(&request(BackfillKind::Job, i64::from(id.0), g, (1, 5), 2, false)).await?;
    let report = backfills.pass(now).await?;
    assert_eq!((report.sent, report.skipped), (2, 1), "{report:?}");
    engine.triggers().wait_idle().await;
    let key = |n| (format!("job:{}@{}", id.0, day(n)), day(n));
    assert_eq!(sent(&fake), vec![key(1), key(3)], "in order, keyed and timed as the schedule's fires");
    assert_eq!(backfills.pass(now).await?.sent, 0, "two are running: nothing more");
    let mut answered = 0;
    finish_all(&engine, &fake, &mut answered).await?;
    assert_eq!(backfills.pass(now).await?.sent, 2);
    engine.triggers().wait_idle().await;
    assert_eq!(sent(&fake)[2..], [key(4), key(5)]);
    finish_all(&engine, &fake, &mut answered).await?;
    assert_eq!(backfills.pass(now).await?.ended, 1);
    let row = store.load_backfill(b).await?.expect("backfill");
    assert_eq!(
        (row.backfill.status, row.backfill.handed, row.backfill.skipped),
        (BackfillStatus::Done, 4, 1)
    );
    let progress = store.backfill_progress(b).await?;
    assert_eq!((progress.running, progress.succeeded, progress.failed), (0, 4, 0));

    // RERUN runs a day that already ran (the schedule's and this backfill's day 1).
    let again = store.add_backfill(&request(BackfillKind::Job, i64::from(id.0), g, (1, 2), 5, true)).await?;
    assert_eq!(backfills.pass(now).await?.sent, 2);
    engine.triggers().wait_idle().await;
    assert_eq!(sent(&fake)[4..], [key(1), key(2)]);
    finish_all(&engine, &fake, &mut answered).await?;
    backfills.pass(now).await?;
    assert_eq!(store.load_backfill(again).await?.expect("again").backfill.status, BackfillStatus::Done);

    // A cancel hands out nothing more.
    let cancelled =
        store.add_backfill(&request(BackfillKind::Job, i64::from(id.0), g, (6, 10), 1, false)).await?;
    assert_eq!(backfills.pass(now).await?.sent, 1);
    assert!(store.cancel_backfill(cancelled, now).await?);
    finish_all(&engine, &fake, &mut answered).await?;
    assert_eq!(backfills.pass(now).await?.sent, 0, "cancelled");
    assert!(!store.cancel_backfill(cancelled, now).await?, "cancelled once");
    engine.triggers().wait_idle().await;

    // An admin handed day 11 out and died before sending it: the sweep sends it after a while.
    let orphan =
        store.add_backfill(&request(BackfillKind::Job, i64::from(id.0), g, (11, 11), 1, false)).await?;
    let mut tx = store.begin_backfill(orphan).await?.expect("backfill");
    tx.add_fire(day(11), now).await?;
    tx.advance(day(11), 1, 0).await?;
    tx.commit().await?;
    assert_eq!(backfills.pass(now + 1_000).await?.sent, 0, "not yet: its admin may still send it");
    let before = fake.runs().len();
    assert_eq!(backfills.pass(now + UNSENT_AFTER_MS + 1_000).await?.sent, 1);
    engine.triggers().wait_idle().await;
    assert_eq!(sent(&fake)[before..], [key(11)]);
    assert_eq!(backfills.pass(now + UNSENT_AFTER_MS + 2_000).await?.sent, 0, "sent once");
    finish_all(&engine, &fake, &mut answered).await?;

    // A workflow's backfill: one instance per day, that day its fire time.
    let graph = Graph { nodes: vec![node("only", id)], edges: vec![], input_schema: None };
    let mut w = workflow(g, &graph, 1, "SKIP");
    w.schedule_type = "CRON".into();
    w.schedule_conf = Some("0 0 3 * * ?".into());
    w.time_zone = Some("UTC".into());
    let w = store.add_workflow(&w).await?;
    let wb = store.add_backfill(&request(BackfillKind::Workflow, w.0, g, (1, 3), 3, false)).await?;
    assert_eq!(backfills.pass(now).await?.sent, 3, "max instances 1 does not hold a backfill back");
    let page = store.page_instances(w, jobwheel_admin::store::Page { offset: 0, limit: 10 }).await?;
    let mut times: Vec<i64> = page.rows.iter().map(|i| i.fire_time_ms).collect();
    times.sort_unstable();
    assert_eq!(times, vec![day(1), day(2), day(3)]);
    assert!(page.rows.iter().all(|i| i.trigger_type.as_str() == "BACKFILL"));
    let want = answered + 3;
    crate::engine::support::wait_for(crate::engine::workflows::WAIT, "the three nodes fired", || async {
        Ok((fake.runs().len() >= want).then_some(()))
    })
    .await?;
    finish_all(&engine, &fake, &mut answered).await?;
    crate::engine::support::wait_for(crate::engine::workflows::WAIT, "the instances to end", || async {
        let page = store.page_instances(w, jobwheel_admin::store::Page { offset: 0, limit: 10 }).await?;
        Ok(page.rows.iter().all(|i| i.status.is_over()).then_some(()))
    })
    .await?;
    backfills.pass(now).await?;
    let row = store.load_backfill(wb).await?.expect("workflow backfill");
    assert_eq!(row.backfill.status, BackfillStatus::Done);
    assert_eq!(store.backfill_progress(wb).await?.succeeded, 3);
    // Skipped the second time: every day already has its instance.
    let twice = store.add_backfill(&request(BackfillKind::Workflow, w.0, g, (1, 3), 3, false)).await?;
    let report = backfills.pass(now).await?;
    assert_eq!((report.sent, report.skipped), (0, 3));
    backfills.pass(now).await?;
    assert_eq!(store.load_backfill(twice).await?.expect("twice").backfill.status, BackfillStatus::Done);

    // Calendars apply: a job never on 2030-01-03 has no time that day to backfill.
    let days: CalendarDays = serde_json::from_value(serde_json::json!({"dates": ["2030-01-03"]}))?;
    let (days, _) = days.normalize()?;
    let calendar = NewCalendar {
        name: "backfill holiday".into(),
        description: String::new(),
        days: serde_json::to_string(&days)?,
        update_ms: 0,
    };
    let holiday = store.add_calendar(&calendar).await?;
    let mut off = job(g, 0);
    off.trigger_status = 0;
    off.schedule_conf = Some("0 0 3 * * ?".into());
    let off = store.add_job(&off).await?;
    store.set_job_days(off, &DayRefs { never_on: vec![holiday], ..DayRefs::default() }).await?;
    store.add_backfill(&request(BackfillKind::Job, i64::from(off.0), g, (1, 5), 10, false)).await?;
    let before = fake.runs().len();
    assert_eq!(backfills.pass(now).await?.sent, 4);
    engine.triggers().wait_idle().await;
    let keys: Vec<String> = sent(&fake)[before..].iter().map(|(k, _)| k.clone()).collect();
    let want: Vec<String> = [1, 2, 4, 5].iter().map(|n| format!("job:{}@{}", off.0, day(*n))).collect();
    assert_eq!(keys, want, "day 3 is a holiday");
    engine.triggers().wait_idle().await;

    // A job deleted under its backfill: the time handed out but unsent counts as failed (it is
    // not sent again for ever), and the backfill fails with why.
    let mut doomed = job(g, 0);
    doomed.trigger_status = 0;
    doomed.schedule_conf = Some("0 0 3 * * ?".into());
    let doomed = store.add_job(&doomed).await?;
    let gone =
        store.add_backfill(&request(BackfillKind::Job, i64::from(doomed.0), g, (1, 2), 1, false)).await?;
    let mut tx = store.begin_backfill(gone).await?.expect("backfill");
    tx.add_fire(day(1), now).await?;
    tx.advance(day(1), 1, 0).await?;
    tx.commit().await?;
    store.delete_job(doomed).await?;
    let later = now + UNSENT_AFTER_MS + 5_000;
    backfills.pass(later).await?;
    let row = store.load_backfill(gone).await?.expect("backfill");
    assert_eq!(row.backfill.status, BackfillStatus::Failed);
    assert_eq!(row.backfill.message.as_deref(), Some("its job or workflow no longer exists"));
    let progress = store.backfill_progress(gone).await?;
    assert_eq!((progress.running, progress.failed), (0, 1), "{progress:?}");
    assert!(store.unsent_fires(later + UNSENT_AFTER_MS * 10, 10).await?.is_empty(), "nothing left to send");
    Ok(())
}

fn at(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).expect("time")
}

/// Two admins sweep one backfill at once: each time is handed out once.
async fn two_admins(db: &Db) -> anyhow::Result<()> {
    let store: Arc<dyn Store> = db.connect().await?;
    let now = START + 30 * DAY;
    let (fake_a, fake_b) = (Arc::new(FakeExecutor::default()), Arc::new(FakeExecutor::default()));
    let a = engine_with(
        store.clone(),
        fake_a.clone(),
        Arc::new(ManualClock::new(now)),
        UpstreamAlarms::default(),
    );
    let b = engine_with(
        db.connect().await?,
        fake_b.clone(),
        Arc::new(ManualClock::new(now)),
        UpstreamAlarms::default(),
    );
    let g = group(&*store, "backfill-two", &["http://a:9999/"]).await?;
    let mut daily = job(g, 0);
    daily.trigger_status = 0;
    daily.schedule_conf = Some("0 0 3 * * ?".into());
    let id: JobId = store.add_job(&daily).await?;
    store.add_backfill(&request(BackfillKind::Job, i64::from(id.0), g, (1, 20), 20, false)).await?;
    let (ra, rb) = tokio::join!(a.backfills().pass(now), b.backfills().pass(now));
    assert_eq!(ra?.sent + rb?.sent, 20);
    a.triggers().wait_idle().await;
    b.triggers().wait_idle().await;
    let mut keys: Vec<String> = sent(&fake_a).into_iter().chain(sent(&fake_b)).map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 20, "each day once");
    assert_eq!(fake_a.runs().len() + fake_b.runs().len(), 20);
    Ok(())
}

#[tokio::test]
async fn a_backfill_runs_past_times_in_order_once_each_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), backfills).await
}

#[tokio::test]
async fn a_backfill_runs_past_times_in_order_once_each_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, backfills).await
}

#[tokio::test]
async fn a_backfill_runs_past_times_in_order_once_each_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, backfills).await
}

#[tokio::test]
async fn two_admins_hand_each_backfill_time_out_once_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), two_admins).await
}

#[tokio::test]
async fn two_admins_hand_each_backfill_time_out_once_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, two_admins).await
}

#[tokio::test]
async fn two_admins_hand_each_backfill_time_out_once_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, two_admins).await
}
