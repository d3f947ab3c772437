//! Upstream's mail and webhook as channels of the alarm desk (docs/alarms.md, "Upstream's mail
//! and webhook"), on every database: sent at once by the fail monitor, with the log's
//! `alarm_status` from that first attempt (upstream's rule); a refused webhook retried from the
//! delivery log with the body written when the failure was raised; a mail for a job without an
//! address counts as sent (upstream) and leaves no delivery; a mail server that cannot be
//! reached is a failed alarm; the webhook's URL (which may carry a token) is not in the log.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use jobwheel_admin::alarm::{EmailAlarm, SmtpConfig, SmtpTls, UpstreamAlarms, UpstreamChannel, WebhookAlarm};
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, TriggerRequest, TriggerType};
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::store::{DeliveryFilter, DeliveryListRow, DeliveryStatus, GroupId, JobId, Page, Store};

use crate::engine::completion::callback;
use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, logs};

/// A webhook receiver that refuses its first call with a 500 and accepts the rest; every body
/// it was sent, in order.
async fn refusing_once() -> anyhow::Result<(String, Arc<Mutex<Vec<String>>>)> {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = bodies.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let (seen, calls) = (seen.clone(), calls.clone());
            async move {
                seen.lock().expect("lock").push(body);
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    (StatusCode::INTERNAL_SERVER_ERROR, "busy")
                } else {
                    (StatusCode::OK, "ok")
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, bodies))
}

/// An SMTP address nothing listens on: a port bound and let go.
async fn closed_smtp() -> anyhow::Result<SmtpConfig> {
    let port = tokio::net::TcpListener::bind("127.0.0.1:0").await?.local_addr()?.port();
    Ok(SmtpConfig {
        host: "127.0.0.1".to_owned(),
        port,
        username: None,
        password: None,
        from: "jobwheel@example.invalid".to_owned(),
        tls: SmtpTls::None,
        timeout: Duration::from_secs(2),
    })
}

/// Triggers `job`, fails its run and hands the failure to the fail monitor; the log's
/// `alarm_status`.
async fn fail(engine: &Engine, store: &dyn Store, job: JobId, now_ms: i64) -> anyhow::Result<i16> {
    engine.triggers().trigger(TriggerRequest::new(job, TriggerType::Manual)).await?;
    engine.triggers().wait_idle().await;
    let log = logs(store, job).await?.last().map(|l| l.id).expect("a log");
    engine.completion().on_callbacks(vec![callback(log, 500, "boom")]).await?;
    let handled = engine.failures().handle_failures(now_ms).await?;
    anyhow::ensure!(handled.len() == 1, "one failure handled: {handled:?}");
    Ok(handled[0].alarm_status)
}

async fn deliveries(store: &dyn Store, channel: UpstreamChannel) -> anyhow::Result<Vec<DeliveryListRow>> {
    let filter = DeliveryFilter { channel: Some(channel.id()), ..DeliveryFilter::default() };
    Ok(store.page_deliveries(&filter, Page { offset: 0, limit: 100 }).await?.rows)
}

async fn new_job(store: &dyn Store, g: GroupId, alarm_email: Option<&str>) -> anyhow::Result<JobId> {
    let mut j = job(g, 0);
    j.trigger_status = 0;
    j.alarm_email = alarm_email.map(str::to_owned);
    Ok(store.add_job(&j).await?)
}

async fn run_on(db: &Db) -> anyhow::Result<()> {
    let store = db.connect().await?;
    let (url, bodies) = refusing_once().await?;
    // The operator's URL may carry a credential: it must never reach the delivery log.
    let url = format!("{url}?token=hook-secret-4242");
    let upstream = UpstreamAlarms {
        mail: Some(Arc::new(EmailAlarm::new(&closed_smtp().await?, MessageLang::En)?)),
        webhook: Some(WebhookAlarm::new(url, Duration::from_secs(5))?),
    };
    let engine = engine_with(
        store.clone(),
        Arc::new(FakeExecutor::default()),
        Arc::new(ManualClock::new(T0)),
        upstream,
    );
    let g = group(&*store, "app", &["http://a:9999/"]).await?;

    // No address to mail: the mail counts as sent (upstream) and leaves no delivery. The
    // webhook refuses its first call, so the alarm failed: 3, as upstream's.
    let quiet = new_job(&*store, g, None).await?;
    assert_eq!(fail(&engine, &*store, quiet, T0).await?, 3, "the webhook refused it at once");
    assert_eq!(bodies.lock().expect("lock").len(), 1, "sent before the fail monitor answered");
    assert!(deliveries(&*store, UpstreamChannel::Mail).await?.is_empty(), "nothing to mail");
    let hook = deliveries(&*store, UpstreamChannel::Webhook).await?;
    assert_eq!(hook.len(), 1, "{hook:?}");
    let d = &hook[0].delivery;
    assert_eq!(
        (d.status, d.attempts, d.answer_code, hook[0].kind.as_str()),
        (DeliveryStatus::Pending, 1, 500, "FAILED")
    );
    assert!(!d.request.contains("hook-secret") && !d.answer.contains("hook-secret"), "{d:?}");
    let sent: serde_json::Value = serde_json::from_str(&d.request)?;
    assert_eq!(
        (sent["alarmType"].as_str(), sent["jobId"].as_i64()),
        (Some("JOB_FAIL"), Some(i64::from(quiet.0)))
    );

    // The pass retries it after 10 s with the same body, and it goes through.
    let desk = engine.alarms().clone();
    assert!(desk.deliver_due(T0 + 9_999).await?.is_empty(), "not before its backoff");
    let retried = desk.deliver_due(T0 + 10_000).await?;
    assert_eq!(retried.iter().map(|(_, s)| *s).collect::<Vec<_>>(), [DeliveryStatus::Sent]);
    {
        let seen = bodies.lock().expect("lock");
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], seen[1], "the retry sends what was raised");
    }

    // Now the webhook accepts at once, and the job has an address the mail server cannot be
    // reached for: the mail's failure makes the alarm a failed one.
    let mailed = new_job(&*store, g, Some("ops@example.invalid")).await?;
    assert_eq!(fail(&engine, &*store, mailed, T0 + 20_000).await?, 3, "the mail did not go");
    let mail = deliveries(&*store, UpstreamChannel::Mail).await?;
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert_eq!((mail[0].delivery.status, mail[0].delivery.attempts), (DeliveryStatus::Pending, 1));
    assert!(
        mail[0].delivery.request.contains("Alarm Job LogId="),
        "upstream's table: {}",
        mail[0].delivery.request
    );
    assert_eq!(deliveries(&*store, UpstreamChannel::Webhook).await?[0].delivery.status, DeliveryStatus::Sent);

    // Only the mail, and nothing to mail: counted as sent, as upstream counts it.
    let mail_only = UpstreamAlarms {
        mail: Some(Arc::new(EmailAlarm::new(&closed_smtp().await?, MessageLang::En)?)),
        webhook: None,
    };
    let engine = engine_with(
        store.clone(),
        Arc::new(FakeExecutor::default()),
        Arc::new(ManualClock::new(T0)),
        mail_only,
    );
    assert_eq!(fail(&engine, &*store, quiet, T0 + 30_000).await?, 2, "no address to mail");
    Ok(())
}

#[tokio::test]
async fn upstream_alarms_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), run_on).await
}

#[tokio::test]
async fn upstream_alarms_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, run_on).await
}

#[tokio::test]
async fn upstream_alarms_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, run_on).await
}
