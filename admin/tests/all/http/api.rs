//! `/api/registry`, `/api/registryRemove`, `/api/callback` at `/` and `/xxl-job-admin`:
//! upstream's validation order and messages, registry rows, callbacks reaching the core.

use std::sync::Arc;

use chrono::Utc;
use reqwest::Method;
use serde_json::json;

use crate::http::{Admin, RecordingCore, TOKEN, fail, sqlite_url, success, test_config};

const PREFIXES: [&str; 2] = ["", "/xxl-job-admin"];

async fn start() -> anyhow::Result<(tempfile::TempDir, Admin, Arc<RecordingCore>)> {
    let dir = tempfile::tempdir()?;
    let core = Arc::new(RecordingCore::default());
    let admin = Admin::start(test_config(&sqlite_url(dir.path())), core.clone()).await?;
    Ok((dir, admin, core))
}

fn registry_body(app: &str, address: &str) -> String {
    json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address}).to_string()
}

#[tokio::test]
async fn validation_follows_upstreams_order_and_messages() -> anyhow::Result<()> {
    let (_dir, admin, core) = start().await?;
    let valid = registry_body("app", "http://127.0.0.1:9999/");
    let long_value = registry_body("app", &format!("http://{}/", "h".repeat(260)));
    let cases: &[(Method, &str, &str, Option<&str>, &str)] = &[
        // Method first: even a wrong token hears about the method.
        (Method::GET, "/api/registry", &valid, Some(TOKEN), "invalid request, HttpMethod not support."),
        (Method::PUT, "/api/callback", "[]", Some("wrong"), "invalid request, HttpMethod not support."),
        (Method::GET, "/api/", "", None, "invalid request, HttpMethod not support."),
        // Then the URI, then the body, then the token.
        (Method::POST, "/api/", &valid, Some("wrong"), "invalid request, uri-mapping empty."),
        (Method::POST, "/api/registry", "", Some("wrong"), "invalid request, requestBody empty."),
        (Method::POST, "/api/callback", " \n\t", Some(TOKEN), "invalid request, requestBody empty."),
        (Method::POST, "/api/registry", &valid, None, "The access token is wrong."),
        (Method::POST, "/api/registry", &valid, Some("wrong"), "The access token is wrong."),
        (Method::POST, "/api/registry", &valid, Some(""), "The access token is wrong."),
        (Method::POST, "/api/nope", &valid, Some("wrong"), "The access token is wrong."),
        // Only then the route and the arguments.
        (Method::POST, "/api/nope", &valid, Some(TOKEN), "invalid request, uri-mapping(nope) not found."),
        (
            Method::POST,
            "/api/registry",
            r#"{"registryGroup":"EXECUTOR","registryKey":"app"}"#,
            Some(TOKEN),
            "Illegal Argument.",
        ),
        (Method::POST, "/api/registry", &registry_body(" ", "http://a/"), Some(TOKEN), "Illegal Argument."),
        (Method::POST, "/api/registry", &long_value, Some(TOKEN), "Illegal Argument."),
        (Method::POST, "/api/registryRemove", &registry_body("app", ""), Some(TOKEN), "Illegal Argument."),
    ];
    for prefix in PREFIXES {
        for (method, path, body, token, msg) in cases {
            let path = format!("{prefix}{path}");
            let (status, reply) = admin.send(method.clone(), &path, body, *token).await;
            assert_eq!(status, 200, "{method} {path}: upstream answers errors with HTTP 200");
            assert_eq!(reply, fail(msg), "{method} {path} body {body:?} token {token:?}");
        }
    }
    let recorded = core.recorded();
    assert!(recorded.refreshes.is_empty() && recorded.callback_batches.is_empty(), "{recorded:?}");
    admin.stop().await
}

#[tokio::test]
async fn bad_json_is_a_request_error_naming_the_endpoint() -> anyhow::Result<()> {
    let (_dir, admin, _core) = start().await?;
    for prefix in PREFIXES {
        for (uri, body) in [("callback", "[{"), ("registry", "{\"registryKey\": [1]}"), ("callback", "42")] {
            let (status, reply) = admin.post(&format!("{prefix}/api/{uri}"), body, Some(TOKEN)).await;
            assert_eq!(status, 200);
            assert_eq!(reply["code"], 500, "{reply}");
            let msg = reply["msg"].as_str().unwrap_or_default();
            assert!(msg.starts_with(&format!("request error: invalid JSON body for api/{uri}: ")), "{msg}");
        }
    }
    admin.stop().await
}

#[tokio::test]
async fn a_large_body_without_the_token_is_not_read_in_full() -> anyhow::Result<()> {
    let (_dir, admin, _core) = start().await?;
    let big = format!("[{}]", vec![r#"{"logId":1,"handleCode":200}"#; 10_000].join(","));
    assert!(big.len() > 64 * 1024);
    let (_, reply) = admin.post("/api/callback", &big, Some("wrong")).await;
    assert_eq!(reply, fail("The access token is wrong."));
    let (_, reply) = admin.post("/api/callback", &big, Some(TOKEN)).await;
    assert_eq!(reply, success(), "the same body is fine with the token");
    admin.stop().await
}

/// A token guesser (review L4): after 60 wrong tokens within a minute its address is refused
/// before its token is checked — even the right one — with a message that says so; requests
/// that carry the right token never count.
#[tokio::test]
async fn an_address_sending_wrong_tokens_is_throttled_before_the_token_check() -> anyhow::Result<()> {
    let (_dir, admin, _core) = start().await?;
    let valid = registry_body("app", "http://127.0.0.1:9999/");
    for _ in 0..100 {
        assert_eq!(
            admin.post("/api/registry", &valid, Some(TOKEN)).await.1,
            success(),
            "the right token never counts"
        );
    }
    for n in 0..60 {
        let guess = format!("guess-{n}");
        assert_eq!(
            admin.post("/api/registry", &valid, Some(&guess)).await.1,
            fail("The access token is wrong."),
            "guess {n}"
        );
    }
    for token in ["guess-60", TOKEN] {
        let (_, reply) = admin.post("/api/registry", &valid, Some(token)).await;
        assert_eq!(reply["code"], 500, "{reply}");
        let msg = reply["msg"].as_str().unwrap_or_default();
        assert!(
            msg.contains("too many requests with a wrong access token") && msg.contains("try again in"),
            "{reply}"
        );
    }
    admin.stop().await
}

#[tokio::test]
async fn registrations_are_stored_and_new_executors_refresh_their_group() -> anyhow::Result<()> {
    let (_dir, admin, core) = start().await?;
    for (i, prefix) in PREFIXES.into_iter().enumerate() {
        let app = format!("app-{i}");
        let (a, b) = ("http://10.0.0.1:9999/", "http://10.0.0.2:9999/");
        let alive = || async {
            let rows = admin
                .store
                .alive_registry(Utc::now() - chrono::Duration::seconds(90))
                .await
                .expect("registry");
            let mut values: Vec<String> =
                rows.into_iter().filter(|r| r.registry_key == app).map(|r| r.registry_value).collect();
            values.sort();
            values
        };
        let refreshes = || core.recorded().refreshes.iter().filter(|r| **r == app).count();

        let (status, reply) =
            admin.post(&format!("{prefix}/api/registry"), &registry_body(&app, a), Some(TOKEN)).await;
        assert_eq!((status, reply), (200, success()));
        assert_eq!(alive().await, [a], "the row exists when the executor hears 200");
        assert_eq!(refreshes(), 1, "a new executor refreshes its group before the reply");

        // A regular heartbeat refreshes the row but not the group.
        assert_eq!(
            admin.post(&format!("{prefix}/api/registry"), &registry_body(&app, a), Some(TOKEN)).await.1,
            success()
        );
        assert_eq!(refreshes(), 1);
        assert_eq!(
            admin.post(&format!("{prefix}/api/registry"), &registry_body(&app, b), Some(TOKEN)).await.1,
            success()
        );
        assert_eq!(alive().await, [a, b]);
        assert_eq!(refreshes(), 2, "a second address is new");

        let remove = format!("{prefix}/api/registryRemove");
        assert_eq!(admin.post(&remove, &registry_body(&app, a), Some(TOKEN)).await.1, success());
        assert_eq!(alive().await, [b]);
        assert_eq!(refreshes(), 3, "deregistering refreshes the group");
        // Removing what is not there is not an error (upstream: async delete of 0 rows).
        assert_eq!(admin.post(&remove, &registry_body(&app, a), Some(TOKEN)).await.1, success());
        assert_eq!(
            admin.post(&format!("{prefix}/api/registry"), &registry_body(&app, a), Some(TOKEN)).await.1,
            success()
        );
        assert_eq!(refreshes(), 5, "an executor back after registryRemove is new again");
    }
    admin.stop().await
}

#[tokio::test]
async fn bare_and_wrapped_callbacks_reach_the_core() -> anyhow::Result<()> {
    let (_dir, admin, core) = start().await?;
    let bare = json!([
        {"logId": 11, "logDateTim": 1_700_000_000_000i64, "handleCode": 200, "handleMsg": "ok"},
        {"logId": "12", "logDateTim": null, "handleCode": 500},
    ]);
    let wrapped = json!({"callbackList": [
        {"logId": 13, "logDateTime": 1_700_000_000_001i64, "handleCode": 502, "handleMsg": "timeout"},
    ]});
    for prefix in PREFIXES {
        for body in [&bare, &wrapped] {
            let (status, reply) =
                admin.post(&format!("{prefix}/api/callback"), &body.to_string(), Some(TOKEN)).await;
            assert_eq!((status, reply), (200, success()));
        }
        // An empty batch is acknowledged and reaches nobody.
        assert_eq!(admin.post(&format!("{prefix}/api/callback"), "[]", Some(TOKEN)).await.1, success());
    }
    // Each request is answered once its batch is applied, so all four are there already.
    let batches = core.recorded().callback_batches;
    assert_eq!(batches.len(), 4, "{batches:?}");
    let items: Vec<_> = batches.iter().flatten().collect();
    assert_eq!(items.len(), 6);
    let first = items.iter().find(|c| c.log_id == 11).expect("log 11");
    assert_eq!(
        (first.log_date_tim, first.handle_code, first.handle_msg.as_str()),
        (1_700_000_000_000, 200, "ok")
    );
    let lenient = items.iter().find(|c| c.log_id == 12).expect("log 12: quoted ids are read like Gson");
    assert_eq!((lenient.handle_code, lenient.handle_msg.as_str()), (500, ""));
    let gen_c = items.iter().find(|c| c.log_id == 13).expect("log 13 from the wrapped body");
    assert_eq!((gen_c.log_date_tim, gen_c.handle_code), (1_700_000_000_001, 502), "Gen C logDateTime");
    admin.stop().await
}

#[tokio::test]
async fn unknown_paths_get_a_json_404() -> anyhow::Result<()> {
    let (_dir, admin, _core) = start().await?;
    for path in ["/nope", "/api/registry/extra", "/xxl-job-admin/nope"] {
        let (status, reply) = admin.post(path, "{}", Some(TOKEN)).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(reply, json!({"code": 404, "msg": format!("no such path: {path}")}));
    }
    admin.stop().await
}
