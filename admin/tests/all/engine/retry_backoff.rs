//! The retry backoff (`engine/fail.rs`): the admin's default and a job's own, fixed and
//! exponential with a ceiling, jitter within its share, parked failures that neither retry
//! early nor hold back other failures, on every database (a parked log lives in
//! `jobwheel_retry_due`).

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, FAIL_BATCH, TriggerRequest, TriggerType};
use jobwheel_admin::store::{BackoffStrategy, GroupId, JobId, LogTriggerUpdate, NewLog, RetryBackoff, Store};

use crate::engine::completion::callback;
use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_configured, group, job, logs};

/// A job that is not scheduled and retries `retries` times.
async fn retrying_job(store: &dyn Store, g: GroupId, retries: i32) -> anyhow::Result<JobId> {
    let mut j = job(g, 0);
    j.trigger_status = 0;
    j.executor_fail_retry_count = retries;
    Ok(store.add_job(&j).await?)
}

/// Fails the newest run of `job` at `at` (its result time) and returns the id of its log.
async fn fail_newest(
    engine: &Arc<Engine>,
    store: &dyn Store,
    clock: &ManualClock,
    job: JobId,
    at: i64,
) -> anyhow::Result<i64> {
    engine.triggers().wait_idle().await;
    let newest = logs(store, job).await?.last().map(|l| l.id).expect("a log");
    clock.set(at);
    engine.completion().on_callbacks(vec![callback(newest, 500, "boom")]).await?;
    Ok(newest.0)
}

async fn run_on(db: Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let clock = Arc::new(ManualClock::new(T0));
    let engine =
        engine_configured(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default(), |config| {
            config.retry_backoff = RetryBackoff::fixed(30);
        });
    let g = group(&*store, "app", &["http://a:9999/"]).await?;

    // The admin's fixed 30 s: parked (alarm_status −2) until then, retried once at 30 s.
    let id = retrying_job(&*store, g, 1).await?;
    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    let first = fail_newest(&engine, &*store, &clock, id, T0 + 1_000).await?;
    assert!(engine.failures().handle_failures(T0 + 30_999).await?.is_empty(), "29.999 s after the result");
    assert_eq!(logs(&*store, id).await?[0].alarm_status, -2, "parked for its retry");
    assert!(
        engine.failures().handle_failures(T0 + 30_999).await?.is_empty(),
        "a parked log is not read again early"
    );
    let handled = engine.failures().handle_failures(T0 + 31_000).await?;
    assert_eq!(handled.iter().map(|h| (h.log_id.0, h.retried)).collect::<Vec<_>>(), [(first, true)]);
    engine.triggers().wait_idle().await;
    assert_eq!(logs(&*store, id).await?.len(), 2, "one retry");
    assert!(engine.failures().handle_failures(T0 + 90_000).await?.is_empty(), "handled once");
    // The retry fails too and has no retries left: alarmed at once, no wait.
    fail_newest(&engine, &*store, &clock, id, T0 + 95_000).await?;
    let handled = engine.failures().handle_failures(T0 + 95_000).await?;
    assert_eq!((handled.len(), handled[0].retried), (1, false), "{handled:?}");

    // Exponential, 10 s doubled up to 25 s: waits of 10, 20, then 25 s before retries 1–3.
    let exp = retrying_job(&*store, g, 3).await?;
    let doubling =
        RetryBackoff { strategy: BackoffStrategy::Exponential, base_secs: 10, max_secs: 25, jitter_pct: 0 };
    store.set_job_retry_backoff(exp, Some(doubling)).await?;
    assert_eq!(store.job_retry_backoff(exp).await?, Some(doubling), "stored as given");
    let mut now = T0 + 200_000;
    clock.set(now);
    engine.triggers().trigger(TriggerRequest::new(exp, TriggerType::Manual)).await?;
    for wait in [10_000, 20_000, 25_000] {
        now += 1_000;
        fail_newest(&engine, &*store, &clock, exp, now).await?;
        assert!(
            engine.failures().handle_failures(now + wait - 1).await?.is_empty(),
            "retry waited {wait} ms"
        );
        let handled = engine.failures().handle_failures(now + wait).await?;
        assert_eq!((handled.len(), handled[0].retried), (1, true), "retry after {wait} ms");
        now += wait;
        clock.set(now);
    }
    engine.triggers().wait_idle().await;
    assert_eq!(logs(&*store, exp).await?.len(), 4, "three retries");

    // Jitter of 50 % on a fixed 100 s: due between 50 and 100 s after the result.
    let jittery = retrying_job(&*store, g, 1).await?;
    store
        .set_job_retry_backoff(jittery, Some(RetryBackoff { jitter_pct: 50, ..RetryBackoff::fixed(100) }))
        .await?;
    now += 10_000;
    clock.set(now);
    engine.triggers().trigger(TriggerRequest::new(jittery, TriggerType::Manual)).await?;
    let failed = fail_newest(&engine, &*store, &clock, jittery, now).await?;
    assert!(engine.failures().handle_failures(now).await?.is_empty());
    assert!(store.due_failure_ids(now + 49_999, 10).await?.is_empty(), "not before half the wait");
    assert_eq!(
        store.due_failure_ids(now + 100_000, 10).await?.iter().map(|l| l.0).collect::<Vec<_>>(),
        [failed]
    );
    let handled = engine.failures().handle_failures(now + 100_000).await?;
    assert_eq!((handled.len(), handled[0].retried), (1, true));
    engine.triggers().wait_idle().await;
    db.cleanup().await
}

#[tokio::test]
async fn backoffs_fixed_exponential_and_jittered_on_sqlite() -> anyhow::Result<()> {
    run_on(Db::sqlite().await?).await
}

#[tokio::test]
async fn backoffs_fixed_exponential_and_jittered_on_postgres() -> anyhow::Result<()> {
    match Db::postgres().await? {
        Some(db) => run_on(db).await,
        None => Ok(()),
    }
}

#[tokio::test]
async fn backoffs_fixed_exponential_and_jittered_on_mysql() -> anyhow::Result<()> {
    match Db::mysql().await? {
        Some(db) => run_on(db).await,
        None => Ok(()),
    }
}

/// More waiting failures than one scan reads (upstream's batch of 1 000) do not hold back a
/// new failure behind them: the first pass parks them, the second handles the new one. Before
/// the due-time queue, the waiting logs filled every batch until their backoff ran out.
#[tokio::test]
async fn waiting_failures_never_delay_a_new_one() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let clock = Arc::new(ManualClock::new(T0));
    let engine = engine_configured(store.clone(), fake, clock.clone(), UpstreamAlarms::default(), |config| {
        config.retry_backoff = RetryBackoff::fixed(0);
    });
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let patient = retrying_job(&*store, g, 1).await?;
    store.set_job_retry_backoff(patient, Some(RetryBackoff::fixed(3_600))).await?;
    let waiting = usize::try_from(FAIL_BATCH)? + 1;
    for _ in 0..waiting {
        let log_id =
            store.insert_log(&NewLog { job_group: g, job_id: patient, trigger_time: at_ms(T0) }).await?;
        store
            .update_log_trigger(&LogTriggerUpdate {
                log_id,
                trigger_time: at_ms(T0),
                trigger_code: 500,
                trigger_msg: Some("no executor".to_owned()),
                executor_address: None,
                executor_handler: None,
                executor_param: None,
                executor_sharding_param: None,
                executor_fail_retry_count: 1,
            })
            .await?;
    }
    let eager = retrying_job(&*store, g, 1).await?;
    engine.triggers().trigger(TriggerRequest::new(eager, TriggerType::Manual)).await?;
    let failed = fail_newest(&engine, &*store, &clock, eager, T0 + 1_000).await?;

    let mut passes = 0;
    let handled = loop {
        passes += 1;
        let handled = engine.failures().handle_failures(T0 + 2_000).await?;
        if !handled.is_empty() || passes == 3 {
            break handled;
        }
    };
    assert_eq!(handled.iter().map(|h| (h.log_id.0, h.retried)).collect::<Vec<_>>(), [(failed, true)]);
    assert_eq!(passes, 2, "the new failure is handled by the pass after the one that parked the rest");
    let parked = store.due_failure_ids(T0 + 3_600_000, u32::MAX).await?;
    assert_eq!(parked.len(), waiting, "every waiting failure parked, none handled early");
    engine.triggers().wait_idle().await;
    db.cleanup().await
}
