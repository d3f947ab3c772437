//! The authorization matrix's anonymous column, driven by the served OpenAPI document: every
//! documented operation exists (no "no such path") and refuses anonymous callers with 401,
//! except the public ones (login, the OpenAPI document, single sign-on); and a logged-in normal user gets 403 from every admin-only one.

use reqwest::Method;
use serde_json::Value;

use super::{Env, reply};

const METHODS: [&str; 4] = ["get", "post", "put", "delete"];

/// `(method, path with ids filled in, public)` of every documented operation.
fn operations(doc: &Value) -> Vec<(Method, String, bool)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in METHODS {
            let Some(op) = item.get(method) else { continue };
            let public = op.get("security").is_some_and(|s| s.as_array().is_some_and(Vec::is_empty));
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            out.push((method, path.replace("{id}", "1"), public));
        }
    }
    out
}

#[tokio::test]
async fn every_documented_operation_exists_and_refuses_anonymous_callers() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let anonymous = env.anonymous();
    let (status, doc) = anonymous.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    let ops = operations(&doc);
    assert!(ops.len() >= 30, "documented operations: {}", ops.len());
    for (method, path, public) in ops {
        let response = anonymous.request(method.clone(), &path).send().await?;
        let (status, body) = reply(response).await;
        if public {
            // The OpenID Connect endpoints of an admin without providers: 404 naming the provider.
            let no_provider = status == 404
                && path.starts_with("/api/v1/sso/oidc/")
                && body["msg"].as_str().is_some_and(|m| m.contains("no OpenID Connect provider"));
            assert!(
                status == 200 || status == 400 || no_provider,
                "{method} {path}: public, got {status} {body}"
            );
        } else {
            assert_eq!(status, 401, "{method} {path}: {body}");
        }
    }
    env.admin.stop().await
}

#[tokio::test]
async fn normal_users_are_refused_every_admin_only_operation() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let group = env.group("app-one").await;
    env.normal_user("alice", &[group]).await;
    let alice = env.login("alice").await;
    let admin_only = [
        (Method::POST, "/api/v1/groups".to_owned()),
        (Method::PUT, format!("/api/v1/groups/{}", group.0)),
        (Method::DELETE, format!("/api/v1/groups/{}", group.0)),
        (Method::GET, "/api/v1/users".to_owned()),
        (Method::POST, "/api/v1/users".to_owned()),
        (Method::PUT, "/api/v1/users/1".to_owned()),
        (Method::DELETE, "/api/v1/users/1".to_owned()),
    ];
    for (method, path) in admin_only {
        let body = serde_json::json!({"appname": "x-app", "title": "x", "addressType": 0, "username": "mallory", "password": "pw-1234", "role": 1});
        let (status, reply) = alice.call(method.clone(), &path, Some(body)).await;
        assert_eq!(status, 403, "{method} {path}: {reply}");
    }
    env.admin.stop().await
}

#[tokio::test]
async fn errors_axum_answers_by_itself_are_json_too() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    // `reply` asserts the `{"code","msg"}` shape for every error.
    let (status, body) = root.get("/api/v1/jobs/not-a-number").await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = root.call(Method::PATCH, "/api/v1/jobs/1", None).await;
    assert_eq!(status, 405);
    let response = root
        .request(Method::POST, "/api/v1/jobs")
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await?;
    assert_eq!(reply(response).await.0, 400);
    env.admin.stop().await
}
