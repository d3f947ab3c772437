//! `HttpExecutorClient` against a local axum server: URL joining for addresses with a path,
//! the token header, non-200 statuses and unparsable bodies as code 500, `/log` payloads
//! under `content` (Gen A) or `data` (Gen B), the bound on connections to one executor, and
//! batched triggers (`/runBatch`) with their fallbacks.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use jobwheel_admin::executor_client::{ExecutorApi, HttpExecutorClient};
use jobwheel_admin::protocol::{LogParam, TriggerParam};
use jobwheel_admin::routing::Probe;
use serde_json::json;

/// Paths the server saw, with the token header of each.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

#[tokio::test]
async fn client_speaks_the_executor_api() -> anyhow::Result<()> {
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let record = |path: &'static str, seen: Seen| {
        move |headers: HeaderMap| {
            let token = headers.get("XXL-JOB-ACCESS-TOKEN").and_then(|v| v.to_str().ok()).map(str::to_owned);
            seen.lock().expect("lock").push((path.to_owned(), token));
            async move { axum::Json(json!({"code": 200, "msg": null})) }
        }
    };
    let app = axum::Router::new()
        .route("/prefix/run", axum::routing::post(record("run", seen.clone())))
        .route("/prefix/beat", axum::routing::post(record("beat", seen.clone())))
        .route("/prefix/kill", axum::routing::post(|| async { axum::Json(json!({"code": 500, "msg": "nope"})) }))
        .route("/prefix/idleBeat", axum::routing::post(|| async { "not json" }))
        .route(
            "/prefix/log",
            axum::routing::post(|| async {
                axum::Json(json!({"code": 200, "content": {"fromLineNum": 1, "toLineNum": 2, "logContent": "a\nb\n", "isEnd": false}}))
            }),
        )
        .route(
            "/gen-b/log",
            axum::routing::post(|| async {
                axum::Json(json!({"code": 200, "data": {"fromLineNum": 3, "toLineNum": 0, "logContent": "", "isEnd": true}}))
            }),
        )
        .route("/gen-b/run", axum::routing::post(|| async { (StatusCode::NOT_FOUND, "missing") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = HttpExecutorClient::new(Some("tok".to_owned()), Duration::from_secs(3))?;
    let prefix = format!("{base}/prefix/");
    assert_eq!(client.run(&prefix, &TriggerParam::default()).await.code, 200);
    assert_eq!(client.beat(&format!("{base}/prefix")).await.code, 200);
    assert_eq!(
        seen.lock().expect("lock").clone(),
        vec![("run".to_owned(), Some("tok".to_owned())), ("beat".to_owned(), Some("tok".to_owned()))]
    );
    let kill = client.kill(&prefix, 7).await;
    assert_eq!((kill.code, kill.msg.as_deref()), (500, Some("nope")));
    let idle = client.idle_beat(&prefix, 7).await;
    assert_eq!(idle.code, 500);
    assert!(
        idle.msg.as_deref().unwrap_or_default().contains("response content invalid(not json)"),
        "{idle:?}"
    );
    let missing = client.run(&format!("{base}/gen-b/"), &TriggerParam::default()).await;
    assert_eq!(missing.code, 500);
    assert!(
        missing
            .msg
            .as_deref()
            .unwrap_or_default()
            .starts_with("xxl-job remoting fail, StatusCode(404) invalid.")
    );

    let gen_a = client.log(&prefix, &LogParam::new(0, 1, 1)).await;
    assert_eq!(gen_a.result.map(|r| r.log_content), Some("a\nb\n".to_owned()));
    let gen_b = client.log(&format!("{base}/gen-b"), &LogParam::new(0, 1, 3)).await;
    assert_eq!(gen_b.result.map(|r| (r.from_line_num, r.is_end)), Some((3, true)));

    // Nobody listening: a transport error is a 500 reply, not a panic or an Err.
    let refused = client.beat("http://127.0.0.1:1/").await;
    assert_eq!(refused.code, 500);
    assert!(refused.msg.as_deref().unwrap_or_default().starts_with("xxl-job remoting error("));
    Ok(())
}

/// What the holding executor saw: calls in flight now and at most, and the connections
/// (client ports) they came on.
#[derive(Default)]
struct Held {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    connections: Mutex<HashSet<SocketAddr>>,
    release: tokio::sync::Notify,
    released: std::sync::atomic::AtomicBool,
}

/// An executor whose `/run` answers only once `held.release` is notified; its base URL.
async fn holding_executor(held: Arc<Held>) -> anyhow::Result<String> {
    let app = axum::Router::new().route(
        "/run",
        axum::routing::post(move |ConnectInfo(peer): ConnectInfo<SocketAddr>| {
            let held = Arc::clone(&held);
            async move {
                held.connections.lock().expect("lock").insert(peer);
                let now = held.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                held.most.fetch_max(now, Ordering::SeqCst);
                let released = held.release.notified();
                if !held.released.load(Ordering::SeqCst) {
                    released.await;
                }
                held.in_flight.fetch_sub(1, Ordering::SeqCst);
                axum::Json(json!({"code": 200, "msg": null}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(async move {
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
    });
    Ok(base)
}

/// A burst of triggers to one executor goes over at most 32 connections at once (reqwest
/// alone opens one per request that finds none idle: ~360 for a second of 1 000 triggers);
/// the rest wait for a lane and are all delivered.
#[tokio::test]
async fn calls_to_one_executor_share_at_most_32_connections() -> anyhow::Result<()> {
    let held = Arc::new(Held::default());
    let base = holding_executor(Arc::clone(&held)).await?;
    let client = Arc::new(HttpExecutorClient::new(None, Duration::from_secs(30))?);
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..100 {
        let (client, base) = (Arc::clone(&client), base.clone());
        calls.spawn(async move { client.run(&base, &TriggerParam::default()).await.code });
    }
    // The executor holds every call it gets: wait until the lanes are full.
    let deadline = Instant::now() + Duration::from_secs(20);
    while held.in_flight.load(Ordering::SeqCst) < 32 {
        assert!(Instant::now() < deadline, "only {} calls arrived", held.in_flight.load(Ordering::SeqCst));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    held.released.store(true, Ordering::SeqCst);
    held.release.notify_waiters();
    let mut codes = Vec::new();
    while let Some(code) = calls.join_next().await {
        codes.push(code?);
    }
    assert_eq!(codes, vec![200; 100]);
    assert_eq!(held.most.load(Ordering::SeqCst), 32, "calls in flight at once");
    let connections = held.connections.lock().expect("lock").len();
    assert!(connections <= 32, "{connections} connections for 100 calls");
    Ok(())
}

/// Waiting for a lane is part of the call's timeout: with an executor that never answers,
/// calls beyond the 32 in flight fail when their own timeout ends, not a timeout later.
#[tokio::test]
async fn waiting_for_a_lane_counts_against_the_timeout() -> anyhow::Result<()> {
    let held = Arc::new(Held::default());
    let base = holding_executor(Arc::clone(&held)).await?;
    let timeout = Duration::from_secs(2);
    let client = Arc::new(HttpExecutorClient::new(None, timeout)?);
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..40 {
        let (client, base) = (Arc::clone(&client), base.clone());
        calls.spawn(async move { (client.run(&base, &TriggerParam::default()).await, started.elapsed()) });
    }
    while let Some(done) = calls.join_next().await {
        let (reply, took) = done?;
        assert_eq!(reply.code, 500, "{reply:?}");
        // Without the shared deadline the last 8 would wait up to 2 s for a lane, then 2 s more.
        assert!(took < timeout * 3 / 2 + Duration::from_millis(500), "a call took {took:?}: {reply:?}");
    }
    held.released.store(true, Ordering::SeqCst);
    held.release.notify_waiters();
    Ok(())
}

/// What a batching executor does with `/runBatch` in a test.
#[derive(Clone, Copy, PartialEq)]
enum BatchMode {
    /// Answers each trigger.
    Takes,
    /// Answers one "not found" envelope, as an executor without the path does.
    Unknown,
    /// Answers HTTP 500.
    Broken,
}

/// A jobwheel-like executor offering `/runBatch` on its `/run` replies; every trigger is answered
/// `{"code": 200, "msg": "job <jobId>"}`. Its base URL, the `/run`s seen and the batch sizes.
async fn batching_executor(
    mode: BatchMode,
) -> anyhow::Result<(String, Arc<AtomicUsize>, Arc<Mutex<Vec<usize>>>)> {
    let runs = Arc::new(AtomicUsize::new(0));
    let batches: Arc<Mutex<Vec<usize>>> = Arc::default();
    let answer = |t: &serde_json::Value| json!({"code": 200, "msg": format!("job {}", t["jobId"])});
    let (seen_runs, seen_batches) = (Arc::clone(&runs), Arc::clone(&batches));
    let app = axum::Router::new()
        .route(
            "/run",
            axum::routing::post(move |axum::Json(t): axum::Json<serde_json::Value>| {
                seen_runs.fetch_add(1, Ordering::SeqCst);
                async move { ([("X-Jobwheel-Run-Batch", "1")], axum::Json(answer(&t))) }
            }),
        )
        .route(
            "/runBatch",
            axum::routing::post(move |axum::Json(ts): axum::Json<Vec<serde_json::Value>>| {
                seen_batches.lock().expect("lock").push(ts.len());
                async move {
                    match mode {
                        BatchMode::Takes => {
                            axum::Json(json!(ts.iter().map(answer).collect::<Vec<_>>())).into_response()
                        }
                        BatchMode::Unknown => axum::Json(
                            json!({"code": 500, "msg": "invalid request, uri-mapping(/runBatch) not found."}),
                        )
                        .into_response(),
                        BatchMode::Broken => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((base, runs, batches))
}

/// `count` triggers for jobs `1..=count` at once; each reply with its job id.
async fn burst(
    client: &Arc<HttpExecutorClient>,
    base: &str,
    count: i32,
) -> anyhow::Result<Vec<(i32, i32, String)>> {
    let mut calls = tokio::task::JoinSet::new();
    for job_id in 1..=count {
        let (client, base) = (Arc::clone(client), base.to_owned());
        calls.spawn(async move {
            let param = TriggerParam { job_id, ..TriggerParam::default() };
            let reply = client.run(&base, &param).await;
            (job_id, reply.code, reply.msg.unwrap_or_default())
        });
    }
    let mut replies = Vec::new();
    while let Some(reply) = calls.join_next().await {
        replies.push(reply?);
    }
    replies.sort_unstable();
    Ok(replies)
}

/// Once an executor's `/run` reply offers `/runBatch`, a burst goes out in a few requests, and
/// each trigger still gets its own answer.
#[tokio::test]
async fn a_burst_to_a_batching_executor_goes_in_few_requests() -> anyhow::Result<()> {
    let (base, runs, batches) = batching_executor(BatchMode::Takes).await?;
    let client = Arc::new(HttpExecutorClient::new(None, Duration::from_secs(10))?);
    // The first trigger is a plain `/run`: that is where the offer is learnt.
    let first = client.run(&base, &TriggerParam { job_id: 0, ..TriggerParam::default() }).await;
    assert_eq!((first.code, first.msg.as_deref()), (200, Some("job 0")));
    let replies = burst(&client, &base, 100).await?;
    let expected: Vec<(i32, i32, String)> = (1..=100).map(|id| (id, 200, format!("job {id}"))).collect();
    assert_eq!(replies, expected);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the first trigger went as /run");
    let sizes = batches.lock().expect("lock").clone();
    assert_eq!(sizes.iter().sum::<usize>(), 100, "{sizes:?}");
    assert!(sizes.len() <= 4, "100 triggers took {} requests: {sizes:?}", sizes.len());
    Ok(())
}

/// An executor that offers batches but answers `/runBatch` with one envelope took none of the
/// batch: every trigger is sent again as a plain `/run`, and the address is no longer batched.
/// One that fails the request answers every trigger of it with the failure, sent once.
#[tokio::test]
async fn a_refused_batch_falls_back_to_run_and_a_failed_one_fails_each_trigger() -> anyhow::Result<()> {
    let (base, runs, batches) = batching_executor(BatchMode::Unknown).await?;
    let client = Arc::new(HttpExecutorClient::new(None, Duration::from_secs(10))?);
    assert_eq!(client.run(&base, &TriggerParam::default()).await.code, 200);
    let replies = burst(&client, &base, 20).await?;
    assert!(replies.iter().all(|(id, code, msg)| *code == 200 && *msg == format!("job {id}")), "{replies:?}");
    let tried = batches.lock().expect("lock").len();
    assert!(tried >= 1, "a batch was tried");
    assert_eq!(runs.load(Ordering::SeqCst), 21, "each trigger went as /run exactly once");

    let (base, runs, batches) = batching_executor(BatchMode::Broken).await?;
    assert_eq!(client.run(&base, &TriggerParam::default()).await.code, 200);
    let replies = burst(&client, &base, 20).await?;
    for (_, code, msg) in &replies {
        assert_eq!(*code, 500);
        assert!(msg.starts_with("xxl-job remoting fail, StatusCode(500) invalid. for url : "), "{msg}");
        assert!(msg.ends_with("/runBatch"), "{msg}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a failed batch is not sent again");
    assert_eq!(batches.lock().expect("lock").iter().sum::<usize>(), 20);
    Ok(())
}
