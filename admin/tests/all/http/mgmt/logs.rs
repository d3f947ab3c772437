//! `/api/v1/logs`: the filtered list with job descriptions, one log, clearing by upstream's
//! nine types, permissions on the log's group, and — against a real in-process executor —
//! reading a run's log content and killing the run.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration, Utc};
use jobwheel_admin::store::{GroupId, HandleResult, JobId, LogId, LogTriggerUpdate, NewLog};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Env;
use crate::http::executor::job;
use crate::http::{TOKEN, eventually};

/// A log row of `job` triggered at `at` with the given trigger and handle codes (0 = none yet).
async fn log(env: &Env, group: GroupId, job: JobId, at: DateTime<Utc>, trigger: i32, handle: i32) -> LogId {
    let store = env.store();
    let id =
        store.insert_log(&NewLog { job_group: group, job_id: job, trigger_time: at }).await.expect("log");
    store
        .update_log_trigger(&LogTriggerUpdate {
            log_id: id,
            trigger_time: at,
            trigger_code: trigger,
            trigger_msg: Some("trigger<br>done".to_owned()),
            executor_address: Some("http://127.0.0.1:9/".to_owned()),
            executor_handler: Some("echo".to_owned()),
            executor_param: Some("p".to_owned()),
            executor_sharding_param: None,
            executor_fail_retry_count: 0,
        })
        .await
        .expect("trigger info");
    if handle > 0 {
        let result = HandleResult {
            log_id: id,
            handle_time: at,
            handle_code: handle,
            handle_msg: Some("ok".to_owned()),
        };
        store.complete_log(&result).await.expect("handle info");
    }
    id
}

/// Two groups with one job each and four logs: alpha (group A) succeeded 3 h ago, failed
/// 2 h ago, is running since 5 min; beta (group B) succeeded 1 h ago.
struct Fixture {
    a: GroupId,
    b: GroupId,
    alpha: JobId,
    beta: JobId,
    now: DateTime<Utc>,
    logs: [LogId; 4],
}

async fn fixture(env: &Env) -> Fixture {
    let (a, b) = (env.group("group-a").await, env.group("group-b").await);
    let mut alpha = job(a);
    alpha.job_desc = "alpha job".to_owned();
    let alpha = env.store().add_job(&alpha).await.expect("job");
    let mut beta = job(b);
    beta.job_desc = "beta job".to_owned();
    let beta = env.store().add_job(&beta).await.expect("job");
    let now = Utc::now();
    let logs = [
        log(env, a, alpha, now - Duration::hours(3), 200, 200).await,
        log(env, a, alpha, now - Duration::hours(2), 500, 0).await,
        log(env, a, alpha, now - Duration::minutes(5), 200, 0).await,
        log(env, b, beta, now - Duration::hours(1), 200, 200).await,
    ];
    Fixture { a, b, alpha, beta, now, logs }
}

fn ids(listed: &Value) -> Vec<i64> {
    listed["items"].as_array().expect("items").iter().map(|l| l["id"].as_i64().expect("id")).collect()
}

#[tokio::test]
async fn administrators_list_and_filter_logs_with_their_job_descriptions() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let f = fixture(&env).await;
    let [ok, failed, running, other] = f.logs.map(|l| l.0);
    let root = env.login("root").await;
    let (status, all) = root.get("/api/v1/logs").await;
    assert_eq!((status, all["total"].as_u64()), (200, Some(4)), "{all}");
    assert_eq!(ids(&all), [other, running, failed, ok], "newest id first");
    let first = &all["items"][0];
    assert_eq!(
        (first["jobDesc"].as_str(), first["jobGroup"].as_i64()),
        (Some("beta job"), Some(f.b.0.into()))
    );
    assert_eq!(first["triggerMsg"], "trigger<br>done");
    assert_eq!((first["triggerCode"].as_i64(), first["handleCode"].as_i64()), (Some(200), Some(200)));
    assert!(first["triggerTime"].as_i64().is_some() && first["handleTime"].as_i64().is_some());
    assert_eq!(all["items"][3]["jobDesc"], "alpha job");

    let query = |q: String| {
        let root = root.clone();
        async move { ids(&root.get(&format!("/api/v1/logs?{q}")).await.1) }
    };
    assert_eq!(query(format!("jobGroup={}", f.a.0)).await, [running, failed, ok]);
    assert_eq!(query(format!("jobId={}", f.beta.0)).await, [other]);
    assert_eq!(query("status=success".into()).await, [other, ok]);
    assert_eq!(query("status=fail".into()).await, [failed]);
    assert_eq!(query("status=running".into()).await, [running]);
    assert_eq!(query("status=all&limit=1&offset=1".into()).await, [running]);
    let from = (f.now - Duration::minutes(150)).timestamp_millis();
    let to = (f.now - Duration::minutes(30)).timestamp_millis();
    assert_eq!(query(format!("from={from}&to={to}")).await, [other, failed]);
    // Part of the executor address (jobwheel).
    assert_eq!(query("executorAddress=127.0.0.1:9".into()).await, [other, running, failed, ok]);
    assert!(query("executorAddress=10.9.9.9".into()).await.is_empty());

    for bad in ["status=lost", "from=10&to=5", "limit=0", "jobGroup=x"] {
        let (status, reply) = root.get(&format!("/api/v1/logs?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {reply}");
    }
    let (status, one) = root.get(&format!("/api/v1/logs/{failed}")).await;
    assert_eq!(
        (status, one["jobDesc"].as_str(), one["triggerCode"].as_i64()),
        (200, Some("alpha job"), Some(500))
    );
    assert_eq!(root.get("/api/v1/logs/999999").await.0, 404);
    env.admin.stop().await
}

#[tokio::test]
async fn normal_users_see_only_logs_of_their_groups() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let f = fixture(&env).await;
    env.normal_user("alice", &[f.a]).await;
    let alice = env.login("alice").await;
    let (status, reply) = alice.get("/api/v1/logs").await;
    assert_eq!(status, 400, "a group (or job) must be chosen: {reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().starts_with("jobGroup"));
    assert_eq!(alice.get(&format!("/api/v1/logs?jobGroup={}", f.a.0)).await.1["total"], 3);
    assert_eq!(
        alice.get(&format!("/api/v1/logs?jobId={}", f.alpha.0)).await.1["total"],
        3,
        "group from the job"
    );
    assert_eq!(alice.get(&format!("/api/v1/logs?jobGroup={}", f.b.0)).await.0, 403);
    assert_eq!(alice.get(&format!("/api/v1/logs?jobId={}", f.beta.0)).await.0, 403);
    assert_eq!(alice.get("/api/v1/logs?jobId=999").await.0, 404);
    // Asking for beta's logs inside her own group finds none rather than leaking them.
    let (_, mixed) = alice.get(&format!("/api/v1/logs?jobGroup={}&jobId={}", f.a.0, f.beta.0)).await;
    assert_eq!(mixed["total"], 0);

    let theirs = f.logs[3].0;
    assert_eq!(alice.get(&format!("/api/v1/logs/{}", f.logs[0].0)).await.0, 200);
    assert_eq!(alice.get(&format!("/api/v1/logs/{theirs}")).await.0, 403);
    assert_eq!(alice.get(&format!("/api/v1/logs/{theirs}/content?fromLine=1")).await.0, 403);
    assert_eq!(alice.post(&format!("/api/v1/logs/{theirs}/kill"), json!({})).await.0, 403);
    let (status, reply) = alice.post("/api/v1/logs/clear", json!({"jobGroup": f.b.0, "type": 9})).await;
    assert_eq!(status, 403, "{reply}");
    assert_eq!(alice.post("/api/v1/logs/clear", json!({"type": 9})).await.0, 400, "no group chosen");

    let (_, created) = alice.post("/api/v1/tokens", json!({"name": "ci"})).await;
    let script = env.anonymous().with_token(created["token"].as_str().expect("token"));
    assert_eq!(script.get(&format!("/api/v1/logs?jobGroup={}", f.a.0)).await.1["total"], 3);
    assert_eq!(script.get(&format!("/api/v1/logs/{theirs}")).await.0, 403);

    let anonymous = env.anonymous();
    assert_eq!(anonymous.get("/api/v1/logs").await.0, 401);
    assert_eq!(anonymous.get(&format!("/api/v1/logs/{theirs}")).await.0, 401);
    assert_eq!(anonymous.post("/api/v1/logs/clear", json!({"type": 9})).await.0, 401);
    assert_eq!(env.store().load_log(f.logs[3]).await?.map(|l| l.handle_code), Some(200), "untouched");
    env.admin.stop().await
}

#[tokio::test]
async fn clearing_follows_upstreams_types_within_the_chosen_scope() -> anyhow::Result<()> {
    // No retention: its first pass (logs over 30 days old) would otherwise delete the 45-day-old
    // log itself whenever the report monitor happens to run between its insert and the clear.
    let env = Env::start_configured(|config| config.log_retention_days = None).await?;
    env.admin_user("root").await;
    let f = fixture(&env).await;
    let old = log(&env, f.a, f.alpha, f.now - Duration::days(45), 200, 200).await;
    let root = env.login("root").await;
    for bad in [
        json!({"jobGroup": f.a.0, "type": 0}),
        json!({"jobGroup": f.a.0, "type": 10}),
        json!({"jobGroup": f.a.0}),
    ] {
        let (status, reply) = root.post("/api/v1/logs/clear", bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {reply}");
    }
    let clear = |body: Value| {
        let root = root.clone();
        async move {
            let (status, reply) = root.post("/api/v1/logs/clear", body).await;
            assert_eq!(status, 200, "{reply}");
            reply["deleted"].as_u64().expect("deleted")
        }
    };
    assert_eq!(clear(json!({"jobGroup": f.b.0, "type": 1})).await, 0, "nothing in B is a month old");
    assert_eq!(clear(json!({"jobGroup": f.a.0, "type": 1})).await, 1, "the 45-day-old log");
    assert_eq!(env.store().load_log(old).await?, None);
    assert_eq!(clear(json!({"jobGroup": f.a.0, "type": 5})).await, 0, "fewer than 1 000 logs");
    assert_eq!(clear(json!({"jobGroup": f.a.0, "jobId": f.beta.0, "type": 9})).await, 0, "beta is not in A");
    assert_eq!(clear(json!({"jobGroup": f.a.0, "jobId": f.alpha.0, "type": 9})).await, 3);
    assert_eq!(root.get("/api/v1/logs").await.1["total"], 1, "B's log remains");
    assert_eq!(clear(json!({"type": 9})).await, 1, "administrators may clear every group");
    env.admin.stop().await
}

#[tokio::test]
async fn content_and_kill_refuse_what_cannot_work() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let f = fixture(&env).await;
    let [ok, failed, running, _] = f.logs.map(|l| l.0);
    let root = env.login("root").await;
    let (status, reply) = root.post(&format!("/api/v1/logs/{failed}/kill"), json!({})).await;
    assert_eq!(status, 400, "the trigger failed: {reply}");
    let (status, reply) = root.post(&format!("/api/v1/logs/{ok}/kill"), json!({})).await;
    assert_eq!(status, 400, "already finished: {reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("finished"), "{reply}");
    let (status, reply) = root.post(&format!("/api/v1/logs/{running}/kill"), json!({})).await;
    assert_eq!(status, 502, "nobody listens at the executor address: {reply}");
    let (status, reply) = root.get(&format!("/api/v1/logs/{running}/content?fromLine=1")).await;
    assert_eq!(status, 502, "{reply}");
    let (status, reply) = root.get(&format!("/api/v1/logs/{running}/content?fromLine=0")).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().starts_with("fromLine"));
    assert_eq!(root.get("/api/v1/logs/999999/content").await.0, 404);
    assert_eq!(root.post("/api/v1/logs/999999/kill", json!({})).await.0, 404);
    env.admin.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_runs_log_is_read_from_its_executor_and_the_run_is_killed() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let dir = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = format!("http://{}/", listener.local_addr()?);
    let group = env
        .store()
        .add_group(&jobwheel_admin::store::Group {
            app_name: "logs-e2e".to_owned(),
            title: "logs".to_owned(),
            address_type: 1,
            address_list: Some(address.clone()),
            update_time: None,
        })
        .await?;
    let mut waiting = job(group);
    waiting.executor_handler = Some("wait".to_owned());
    let job_id = env.store().add_job(&waiting).await?;
    let mut config = ExecutorConfig::new("logs-e2e", dir.path().join("logs"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![env.admin.base.clone()];
    let mut handlers = Handlers::new();
    handlers.register("wait", |ctx: JobContext| async move {
        ctx.log(format!("waiting with {}", ctx.param()));
        ctx.stopped().await;
        Ok(())
    });
    let (stop_executor, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));

    env.normal_user("alice", &[group]).await;
    let alice = env.login("alice").await;
    let (status, reply) =
        alice.post(&format!("/api/v1/jobs/{}/trigger", job_id.0), json!({"executorParam": "forever"})).await;
    assert_eq!(status, 200, "{reply}");
    let log_id = eventually("the run started on the executor", || async {
        let (_, listed) = alice.get(&format!("/api/v1/logs?jobId={}&status=running", job_id.0)).await;
        listed["items"][0]["id"].as_i64()
    })
    .await;
    let content = eventually("the handler's line in the log", || async {
        let (status, content) = alice.get(&format!("/api/v1/logs/{log_id}/content?fromLine=1")).await;
        assert_eq!(status, 200, "{content}");
        content["logContent"].as_str().is_some_and(|c| c.contains("waiting with forever")).then_some(content)
    })
    .await;
    assert_eq!(content["fromLineNum"], 1);
    assert_eq!(content["end"], false, "still running");

    let (status, reply) = alice.post(&format!("/api/v1/logs/{log_id}/kill"), json!({})).await;
    assert_eq!(status, 200, "{reply}");
    assert!(reply.get("msg").is_some(), "{reply}");
    let (_, killed) = alice.get(&format!("/api/v1/logs/{log_id}")).await;
    assert_eq!(killed["handleCode"], 500, "{killed}");
    // Whichever lands first wins (repeat guard): the admin's "killed by operator" note, or
    // the executor's callback for the run it just stopped.
    let note = killed["handleMsg"].as_str().unwrap_or_default();
    assert!(note.contains("终止") || note.contains("kill"), "a kill note: {killed}");
    let (status, reply) = alice.post(&format!("/api/v1/logs/{log_id}/kill"), json!({})).await;
    assert_eq!(status, 400, "already finished: {reply}");
    // The kill is in the audit log, once: the refused second one changed nothing.
    env.admin_user("root").await;
    let (_, audit) = env.login("root").await.get(&format!("/api/v1/audit?target=log%20{log_id}")).await;
    let kills: Vec<_> = audit["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|e| (e["action"].clone(), e["username"].clone()))
        .collect();
    assert_eq!(kills, vec![(json!("log.kill"), json!("alice"))], "{audit}");
    // Once finished, reading past the last line says so.
    // Like the UI: keep reading from after the last line seen until the executor says `end`.
    let next = AtomicI64::new(content["toLineNum"].as_i64().expect("toLineNum") + 1);
    eventually("the rolling log ends", || async {
        let from = next.load(Ordering::SeqCst);
        let (status, content) = alice.get(&format!("/api/v1/logs/{log_id}/content?fromLine={from}")).await;
        assert_eq!(status, 200, "{content}");
        if let Some(to) = content["toLineNum"].as_i64() {
            next.store(to.max(from - 1) + 1, Ordering::SeqCst);
        }
        (content["end"] == true).then_some(())
    })
    .await;

    let _ = stop_executor.send(());
    executor.await??;
    env.admin.stop().await
}
