//! A fire time skipped by the misfire strategy (`DO_NOTHING`) is a log row of its own — trigger
//! code 500, the missed fire time, a message saying how late — and raises the job's alarm
//! exactly once (a local webhook receiver counts), is never retried, and never runs: in the
//! pre-read, and when claim recovery discards a stopped admin's late claims.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::alarm::{UpstreamAlarms, WebhookAlarm};
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, Recovery};
use jobwheel_admin::store::{JobId, Store};

use crate::engine::completion::webhook_receiver;
use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_with, group, job, logs, wait_for};

/// An engine whose only alarm channel is a webhook; the bodies it received.
async fn alarmed_engine(
    store: Arc<dyn Store>,
    fake: Arc<FakeExecutor>,
) -> anyhow::Result<(Arc<Engine>, Arc<std::sync::Mutex<Vec<serde_json::Value>>>)> {
    let (url, hooks) = webhook_receiver().await?;
    let upstream =
        UpstreamAlarms { webhook: Some(WebhookAlarm::new(url, Duration::from_secs(5))?), mail: None };
    Ok((engine_with(store, fake, Arc::new(ManualClock::new(T0)), upstream), hooks))
}

/// An hourly DO_NOTHING job with retries configured (a missed fire must not use them).
async fn hourly(store: &dyn Store, next_ms: i64) -> anyhow::Result<JobId> {
    let g = group(store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, next_ms);
    j.schedule_conf = Some("0 0 * * * ?".to_owned());
    j.executor_fail_retry_count = 3;
    Ok(store.add_job(&j).await?)
}

/// Handles failures and waits for exactly one webhook about `job`; a second pass sends none.
async fn one_alarm(
    engine: &Arc<Engine>,
    hooks: &Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    job: JobId,
    now_ms: i64,
) -> anyhow::Result<serde_json::Value> {
    let handled = engine.failures().handle_failures(now_ms).await?;
    assert_eq!(handled.len(), 1, "{handled:?}");
    assert!(!handled[0].retried, "a missed fire is reported, not retried");
    let hook = wait_for(Duration::from_secs(10), "the missed-fire alarm", || async {
        Ok(hooks.lock().expect("lock").first().cloned())
    })
    .await?;
    assert_eq!(hook["jobId"], job.0);
    assert!(engine.failures().handle_failures(now_ms + 60_000).await?.is_empty(), "alarmed once");
    assert_eq!(hooks.lock().expect("lock").len(), 1);
    Ok(hook)
}

#[tokio::test]
async fn a_fire_skipped_in_the_pre_read_is_a_row_and_one_alarm() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let (engine, hooks) = alarmed_engine(store.clone(), fake.clone()).await?;
    let id = hourly(&*store, T0 - 30_000).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!((report.misfired.clone(), report.fires.len()), (vec![id], 0));
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 1, "one row for the skipped fire");
    let row = &rows[0];
    assert_eq!((row.trigger_code, row.handle_code, row.executor_fail_retry_count), (500, 0, 0));
    assert_eq!(row.trigger_time, Some(at_ms(T0 - 30_000)), "the missed fire time");
    let msg = row.trigger_msg.as_deref().unwrap_or_default();
    assert!(msg.contains("1 次调度时间已过期 30 秒") && msg.contains("DO_NOTHING"), "{msg}");

    let hook = one_alarm(&engine, &hooks, id, T0).await?;
    assert_eq!(hook["logId"], row.id.0);
    assert!(hook["triggerMsg"].as_str().unwrap_or_default().contains("调度过期"), "{hook}");
    engine.triggers().wait_idle().await;
    assert!(fake.runs().is_empty(), "the skipped fire never runs");
    assert_eq!(logs(&*store, id).await?.len(), 1, "and is not retried");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_discarded_by_recovery_are_one_row_and_one_alarm() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    // A takes the next fire into its ring and stops; B recovers it 18 s late.
    let a =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let (b, hooks) = alarmed_engine(store.clone(), fake.clone()).await?;
    let id = hourly(&*store, T0 + 2000).await?;
    assert_eq!(a.scheduler().schedule_cycle(T0).await?.fires.len(), 1);

    let done = b.scheduler().recovery().recover_claims(T0 + 20_000).await?;
    assert_eq!(done.iter().map(|(_, r)| *r).collect::<Vec<_>>(), [Recovery::Discarded]);
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].trigger_code, rows[0].trigger_time), (500, Some(at_ms(T0 + 2000))));
    assert!(rows[0].trigger_msg.as_deref().unwrap_or_default().contains("已过期 18 秒"));
    one_alarm(&b, &hooks, id, T0 + 20_000).await?;
    assert!(b.scheduler().recovery().recover_claims(T0 + 21_000).await?.is_empty());
    assert_eq!(logs(&*store, id).await?.len(), 1, "recorded once");
    Ok(())
}
