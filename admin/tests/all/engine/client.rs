//! `HttpExecutorClient` against a local axum server: URL joining for addresses with a path,
//! the token header, non-200 statuses and unparsable bodies as code 500, and `/log` payloads
//! under `content` (Gen A) or `data` (Gen B).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
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
