//! Exactly-once delivery's admin side (`engine/resend.rs`) on every backend, with the order of
//! events driven, not timed: admin A records an `EXACTLY_ONCE` send and its `/run` never
//! returns (A is as good as dead between `/run` and the outcome); admin B's resend pass then
//! sends the same trigger — log id, fire key, mode — to the address A's went to, not to the one
//! routing would pick, stores the answer, and sends it once however many admins run the pass.
//! An executor not reached keeps the fire for a later pass; a fire whose result arrived gets
//! its lost outcome. The process-level test with real kills is `tests/tests/ha/exactly_once.rs`.

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, RESEND_AFTER_MS, Resend};
use jobwheel_admin::protocol::EXACTLY_ONCE;
use jobwheel_admin::store::{HandleResult, JobId, LogId, Store};
use std::time::Duration;

use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_with, group, job, logs, wait_for};

/// The address the first `/run` went to (a manual address list) and the one ROUND would pick.
const SENT_TO: &str = "http://sent-to:9999/";
const ROUTED: &str = "http://routed:9999/";

#[tokio::test]
async fn sqlite_resends_a_fire_in_doubt_once_to_its_address() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), scenario).await
}

#[tokio::test]
async fn postgres_resends_a_fire_in_doubt_once_to_its_address() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, scenario).await
}

#[tokio::test]
async fn mysql_resends_a_fire_in_doubt_once_to_its_address() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, scenario).await
}

fn admin(store: &Arc<dyn Store>, fake: &Arc<FakeExecutor>, now_ms: i64) -> Arc<Engine> {
    engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(now_ms)), UpstreamAlarms::default())
}

/// Admin A sends an exactly-once manual fire of `job` to [`SENT_TO`] and dies before the
/// outcome (its `/run` is held forever); the fire's log.
async fn fire_in_doubt(store: &Arc<dyn Store>, job: JobId) -> anyhow::Result<LogId> {
    let fake = Arc::new(FakeExecutor::default());
    let _never = fake.hold_runs_at(SENT_TO);
    let a = admin(store, &fake, T0);
    a.trigger_manual(job, Some("p".to_owned()), Some(vec![SENT_TO.to_owned()])).await?;
    let (address, param) = wait_for(Duration::from_secs(10), "A's /run", || {
        let fake = Arc::clone(&fake);
        async move { Ok(fake.runs().pop()) }
    })
    .await?;
    assert_eq!(address, SENT_TO);
    assert_eq!(param.delivery_mode.as_deref(), Some(EXACTLY_ONCE), "sent as exactly once");
    let log = LogId(param.log_id);
    assert_eq!(store.load_log(log).await?.map(|l| l.trigger_code), Some(0), "no outcome stored");
    Ok(log)
}

async fn scenario(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let g = group(&*store, "app", &[ROUTED, SENT_TO]).await?;
    let mut exactly = job(g, 0);
    exactly.trigger_status = 0;
    exactly.executor_route_strategy = Some("ROUND".into());
    let job_id = store.add_job(&exactly).await?;
    store.set_job_delivery(job_id, Some(EXACTLY_ONCE)).await?;
    assert_eq!(store.load_job(job_id).await?.map(|j| j.delivery.name()), Some(EXACTLY_ONCE));

    let log = fire_in_doubt(&store, job_id).await?;
    let sent = store.sends_due(i64::MAX, 10).await?;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!((sent[0].log_id, sent[0].address.as_str()), (log, SENT_TO));
    assert!(!sent[0].param.contains("wasmGrant"), "no grant is stored: {}", sent[0].param);

    // Too early: A may still store its outcome.
    let b_fake = Arc::new(FakeExecutor::default());
    let c_fake = Arc::new(FakeExecutor::default());
    let b = admin(&store, &b_fake, T0 + RESEND_AFTER_MS - 1_000);
    assert_eq!(b.resends().pass(T0 + RESEND_AFTER_MS - 1_000).await?, []);
    assert!(b_fake.runs().is_empty());

    // In doubt: two admins' passes at once send it once, to its address, as it was.
    let now = T0 + RESEND_AFTER_MS + 1_000;
    let c = admin(&store, &c_fake, now);
    let (from_b, from_c) = tokio::join!(b.resends().pass(now), c.resends().pass(now));
    let done: Vec<_> = from_b?.into_iter().chain(from_c?).collect();
    assert_eq!(done, [(log, Resend::Resent(200))]);
    let runs: Vec<_> = b_fake.runs().into_iter().chain(c_fake.runs()).collect();
    assert_eq!(runs.len(), 1, "sent once: {runs:?}");
    let (address, param) = &runs[0];
    assert_eq!(address, SENT_TO, "not re-routed");
    assert_eq!(param.log_id, log.0);
    assert_eq!(param.fire_key.as_deref(), Some(format!("log:{}", log.0).as_str()));
    assert_eq!(param.delivery_mode.as_deref(), Some(EXACTLY_ONCE));
    assert_eq!(param.executor_params, "p");
    let row = store.load_log(log).await?.expect("log");
    assert_eq!((row.trigger_code, row.executor_address.as_deref()), (200, Some(SENT_TO)));
    assert!(row.trigger_msg.as_deref().unwrap_or_default().contains("精确一次"), "{row:?}");

    // Settled: the next pass forgets it and sends nothing.
    assert_eq!(b.resends().pass(now + RESEND_AFTER_MS * 2).await?, []);
    assert!(store.sends_due(i64::MAX, 10).await?.is_empty());
    assert_eq!(b_fake.runs().len() + c_fake.runs().len(), 1);

    // An executor not reached keeps the fire for a later pass.
    let log = fire_in_doubt(&store, job_id).await?;
    b_fake.fail_runs_at(
        SENT_TO,
        "xxl-job remoting error(connection refused), for url : http://sent-to:9999/run",
    );
    let later = now + RESEND_AFTER_MS * 4;
    assert_eq!(b.resends().pass(later).await?, [(log, Resend::NotReached)]);
    assert_eq!(store.load_log(log).await?.map(|l| l.trigger_code), Some(0));
    assert_eq!(b.resends().pass(later + 1_000).await?, [], "not again before its time");
    b_fake.run_replies.lock().expect("lock").clear();
    assert_eq!(b.resends().pass(later + RESEND_AFTER_MS + 1_000).await?, [(log, Resend::Resent(200))]);

    // A fire whose result arrived while its outcome was lost gets the outcome.
    let log = fire_in_doubt(&store, job_id).await?;
    let result = HandleResult { log_id: log, handle_time: at_ms(T0), handle_code: 200, handle_msg: None };
    store.apply_handle_results(&[result]).await?;
    let runs_before = b_fake.runs().len();
    assert_eq!(b.resends().pass(later + RESEND_AFTER_MS * 3).await?, [(log, Resend::ResultArrived)]);
    assert_eq!(b_fake.runs().len(), runs_before, "not sent again");
    let row = store.load_log(log).await?.expect("log");
    assert_eq!((row.trigger_code, row.handle_code), (200, 200));
    assert_eq!(logs(&*store, job_id).await?.len(), 3);
    Ok(())
}
