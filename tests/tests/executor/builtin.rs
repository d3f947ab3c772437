//! The daemon's built-in handlers: demo, sharding, and the SSRF-guarded HTTP handler.

use axum::Router;
use axum::routing::post;
use jobwheel_executor::Handlers;
use jobwheel_executor::builtin::{self, HttpPolicy};
use jobwheel_tests::trigger;
use serde_json::json;

use crate::support::{SETTLE, rig};

fn builtins(allow_private: bool) -> Handlers {
    let mut handlers = Handlers::new();
    builtin::register(&mut handlers, HttpPolicy { allow_private }, false);
    handlers
}

async fn local_http_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/ok", post(|body: String| async move { format!("echo:{body}") }))
        .route("/boom", post(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test]
async fn sharding_handler_takes_its_slice() {
    let rig = rig(builtins(false), |_| {}).await;
    let mut body = trigger(1, 1, "BEAN", "shardingJobHandler", "10");
    body["broadcastIndex"] = json!(1);
    body["broadcastTotal"] = json!(3);
    rig.executor.run(body).await;
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (200, "shard 1/3 processed 3 items"));
    let text = rig.executor.log_text(1, result.log_date_tim).await;
    assert!(text.contains("processing items [1,4,7]"), "{text}");
}

#[tokio::test]
async fn http_handler_refuses_private_targets_by_default() {
    let server = local_http_server().await;
    let rig = rig(builtins(false), |_| {}).await;
    let param = json!({"url": format!("{server}/ok"), "method": "POST", "data": "x"}).to_string();
    rig.executor.run(trigger(1, 1, "BEAN", "httpJobHandler", &param)).await;
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(result.handle_code, 500);
    assert!(result.handle_msg.contains("--http-handler-allow-private"), "{}", result.handle_msg);
}

#[tokio::test]
async fn http_handler_calls_allowed_targets_and_fails_on_error_status() {
    let server = local_http_server().await;
    let rig = rig(builtins(true), |_| {}).await;
    let ok = json!({"url": format!("{server}/ok"), "method": "POST", "data": "payload"}).to_string();
    let boom = json!({"url": format!("{server}/boom"), "method": "post"}).to_string();
    rig.executor.run(trigger(1, 1, "BEAN", "httpJobHandler", &ok)).await;
    rig.executor.run(trigger(2, 2, "BEAN", "httpJobHandler", &boom)).await;
    rig.executor.run(trigger(3, 3, "BEAN", "httpJobHandler", "not a url")).await;
    let ok = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(ok.handle_code, 200, "{}", ok.handle_msg);
    assert!(rig.executor.log_text(1, ok.log_date_tim).await.contains("echo:payload"));
    let boom = rig.admin.callback_for(2, SETTLE).await;
    assert_eq!((boom.handle_code, boom.handle_msg.as_str()), (500, "HTTP status 500 Internal Server Error"));
    let bad = rig.admin.callback_for(3, SETTLE).await;
    assert_eq!(bad.handle_code, 500);
    assert!(bad.handle_msg.contains("invalid url"), "{}", bad.handle_msg);
}
