//! Completion and the monitors with a fake executor: child jobs, repeat callbacks, the
//! lost-job monitor, retries with alarms to a local SMTP sink and webhook receiver, manual kill,
//! and the registry monitor (the retry backoff: `retry_backoff.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobwheel_admin::alarm::{EmailAlarm, SmtpConfig, SmtpTls, UpstreamAlarms, WebhookAlarm};
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{LOST_AFTER_MS, TriggerRequest, TriggerType};
use jobwheel_admin::lang::MessageLang;
use jobwheel_admin::protocol::HandleCallbackParam;
use jobwheel_admin::store::{LogId, NewLog, RegistryKey};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_with, group, job, load, logs, wait_for};

pub(crate) fn callback(log_id: LogId, code: i32, msg: &str) -> HandleCallbackParam {
    HandleCallbackParam {
        log_id: log_id.0,
        log_date_tim: T0,
        handle_code: code,
        handle_msg: msg.to_owned(),
        output: None,
        flight: None,
    }
}

#[tokio::test]
async fn success_triggers_children_and_repeats_are_ignored() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let engine =
        engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut child = job(g, 0);
    child.trigger_status = 0;
    let child = store.add_job(&child).await?;
    let mut parent = job(g, 0);
    parent.trigger_status = 0;
    let parent = store.add_job(&parent).await?;
    let mut p = load(&*store, parent).await?;
    p.child_jobid = Some(format!("{child},x,{parent}"));
    store.update_job(parent, &p).await?;

    engine.triggers().trigger(TriggerRequest::new(parent, TriggerType::Manual)).await?;
    let log = logs(&*store, parent).await?[0].id;
    engine.completion().on_callbacks(vec![callback(log, 200, "ok")]).await?;
    engine.triggers().wait_idle().await;
    let child_logs = logs(&*store, child).await?;
    assert_eq!(child_logs.len(), 1);
    assert!(child_logs[0].trigger_msg.as_deref().unwrap_or_default().contains("父任务触发"));
    let msg = store.load_log(log).await?.and_then(|l| l.handle_msg).unwrap_or_default();
    assert!(
        msg.starts_with(
            "ok<br><br><span style=\"color:#00c0ef;\" > >>>>>>>>>>>触发子任务<<<<<<<<<<< </span><br>"
        ),
        "{msg}"
    );
    assert!(msg.contains(&format!("1/3 [任务ID={child}], 触发成功, 触发备注: null <br>")), "{msg}");
    assert!(msg.contains("2/3 [任务ID=x], 触发失败, 触发备注: 任务ID格式错误 <br>"), "{msg}");
    assert!(!msg.contains("3/3"), "the job itself is skipped: {msg}");
    assert_eq!(logs(&*store, parent).await?.len(), 1, "no self-trigger");

    // A repeat callback changes nothing.
    engine.completion().on_callbacks(vec![callback(log, 500, "late")]).await?;
    assert_eq!(store.load_log(log).await?.map(|l| l.handle_code), Some(200));
    Ok(())
}

#[tokio::test]
async fn lost_jobs_kill_and_registry_refresh() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let clock = Arc::new(ManualClock::new(T0));
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    let id = store.add_job(&j).await?;

    // Registered executor: not lost even after 10 min.
    let key = RegistryKey {
        registry_group: "EXECUTOR".to_owned(),
        registry_key: "app".to_owned(),
        registry_value: "http://b:9999/".to_owned(),
    };
    store.registry_upsert(&key, at_ms(T0)).await?;
    engine.registry().refresh_group("app").await?;
    let group_row = store.load_group(g).await?.expect("group");
    assert_eq!(group_row.group.address_list.as_deref(), Some("http://b:9999/"), "routable at once");
    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    let running = logs(&*store, id).await?[0].id;
    assert!(engine.completion().mark_lost_jobs(T0 + LOST_AFTER_MS + 1000).await?.is_empty());

    // Kill: /kill to the log's executor, then 500 with upstream's text.
    engine.completion().kill(running).await?;
    assert_eq!(fake.kills.lock().expect("lock").clone(), vec![("http://b:9999/".to_owned(), id.0)]);
    let killed = store.load_log(running).await?.expect("log");
    assert_eq!(killed.handle_code, 500);
    assert_eq!(killed.handle_msg.as_deref(), Some("人为操作，主动终止:"));

    // The executor stops heart-beating: after 90 s the monitor drops it and empties the
    // group; a run older than 10 min on it is lost.
    engine
        .triggers()
        .trigger(TriggerRequest {
            address_list: Some(vec!["http://b:9999/".to_owned()]),
            ..TriggerRequest::new(id, TriggerType::Manual)
        })
        .await?;
    let lost = logs(&*store, id).await?[1].id;
    engine.registry().refresh_registry(T0 + 91_000).await?;
    assert_eq!(store.load_group(g).await?.and_then(|g| g.group.address_list), None);
    let now = T0 + LOST_AFTER_MS + 1000;
    clock.set(now);
    assert_eq!(engine.completion().mark_lost_jobs(now).await?, vec![lost]);
    let row = store.load_log(lost).await?.expect("log");
    assert_eq!((row.handle_code, row.handle_msg.as_deref()), (500, Some("任务结果丢失，标记失败")));

    // A log whose trigger never got an executor's answer (its admin died in between) is
    // closed the same way, with its own note; a recent one is left alone.
    let stalled = store.insert_log(&NewLog { job_group: g, job_id: id, trigger_time: at_ms(T0) }).await?;
    let recent = store.insert_log(&NewLog { job_group: g, job_id: id, trigger_time: at_ms(now) }).await?;
    assert_eq!(engine.completion().mark_lost_jobs(now).await?, vec![stalled]);
    let row = store.load_log(stalled).await?.expect("log");
    assert_eq!(row.handle_code, 500);
    assert!(row.handle_msg.as_deref().is_some_and(|m| m.starts_with("调度中断")), "{:?}", row.handle_msg);
    assert_eq!(store.load_log(recent).await?.expect("log").handle_code, 0);
    Ok(())
}

/// A minimal SMTP server: accepts every command and keeps each message's DATA.
async fn smtp_sink() -> anyhow::Result<(u16, Arc<Mutex<Vec<String>>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let mails = Arc::new(Mutex::new(Vec::new()));
    let store = mails.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let store = store.clone();
            tokio::spawn(async move {
                let (read, mut write) = socket.into_split();
                let mut lines = BufReader::new(read).lines();
                let _ = write.write_all(b"220 sink ESMTP\r\n").await;
                let mut data: Option<String> = None;
                while let Ok(Some(line)) = lines.next_line().await {
                    let reply: &[u8] = match &mut data {
                        Some(body) if line == "." => {
                            store.lock().expect("lock").push(std::mem::take(body));
                            data = None;
                            b"250 queued\r\n"
                        }
                        Some(body) => {
                            body.push_str(&line);
                            body.push('\n');
                            continue;
                        }
                        None if line.to_ascii_uppercase().starts_with("DATA") => {
                            data = Some(String::new());
                            b"354 go ahead\r\n"
                        }
                        None if line.to_ascii_uppercase().starts_with("QUIT") => {
                            let _ = write.write_all(b"221 bye\r\n").await;
                            break;
                        }
                        None => b"250 ok\r\n",
                    };
                    if write.write_all(reply).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    Ok((port, mails))
}

/// A webhook receiver keeping every JSON body.
pub(crate) async fn webhook_receiver() -> anyhow::Result<(String, Arc<Mutex<Vec<serde_json::Value>>>)> {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let store = bodies.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let store = store.clone();
            async move {
                store.lock().expect("lock").push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, bodies))
}

#[tokio::test]
async fn failures_are_retried_and_alarmed_by_mail_and_webhook() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let (smtp_port, mails) = smtp_sink().await?;
    let (hook_url, hooks) = webhook_receiver().await?;
    let smtp = SmtpConfig {
        host: "127.0.0.1".to_owned(),
        port: smtp_port,
        username: None,
        password: None,
        from: "jobwheel@example.invalid".to_owned(),
        tls: SmtpTls::None,
        timeout: Duration::from_secs(5),
    };
    let upstream = UpstreamAlarms {
        mail: Some(Arc::new(EmailAlarm::new(&smtp, MessageLang::Zh)?)),
        webhook: Some(WebhookAlarm::new(hook_url, Duration::from_secs(5))?),
    };
    let engine = engine_with(store.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), upstream);
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, 0);
    j.trigger_status = 0;
    j.executor_fail_retry_count = 1;
    j.alarm_email = Some("ops@example.invalid, dev@example.invalid".to_owned());
    let id = store.add_job(&j).await?;

    engine.triggers().trigger(TriggerRequest::new(id, TriggerType::Manual)).await?;
    let first = logs(&*store, id).await?[0].id;
    engine.completion().on_callbacks(vec![callback(first, 500, "boom")]).await?;

    let handled = engine.failures().handle_failures(T0).await?;
    assert_eq!(handled.len(), 1);
    assert!(handled[0].retried);
    assert_eq!(handled[0].alarm_status, 2, "every channel delivered");
    engine.triggers().wait_idle().await;
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 2, "one retry log");
    assert!(
        rows[0]
            .trigger_msg
            .as_deref()
            .unwrap_or_default()
            .ends_with(">>>>>>>>>>>失败重试触发<<<<<<<<<<< </span><br>")
    );
    assert_eq!(rows[1].executor_fail_retry_count, 0);
    assert_eq!(rows[1].executor_param.as_deref(), Some("p"));
    assert!(rows[1].trigger_msg.as_deref().unwrap_or_default().contains("失败重试触发"));

    let mails = wait_for(Duration::from_secs(10), "two alarm mails", || {
        let mails = mails.lock().expect("lock").clone();
        async move { Ok((mails.len() >= 2).then_some(mails)) }
    })
    .await?;
    assert!(mails.iter().any(|m| m.contains("To: ops@example.invalid")), "{mails:?}");
    assert!(mails.iter().any(|m| m.contains("To: dev@example.invalid")), "{mails:?}");
    assert!(mails[0].contains("Subject:"));
    let hooks = hooks.lock().expect("lock").clone();
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["jobId"], id.0);
    assert_eq!(hooks[0]["logId"], first.0);
    assert_eq!(hooks[0]["handleCode"], 500);
    assert_eq!(hooks[0]["handleMsg"], "boom");
    assert_eq!(hooks[0]["jobGroupTitle"], "app title");

    // The retry fails too: no retries left, alarmed again, handled once only.
    engine.completion().on_callbacks(vec![callback(rows[1].id, 502, "timeout")]).await?;
    let handled = engine.failures().handle_failures(T0).await?;
    assert_eq!((handled.len(), handled[0].retried), (1, false));
    assert!(engine.failures().handle_failures(T0).await?.is_empty());
    assert_eq!(logs(&*store, id).await?.len(), 2);
    Ok(())
}
