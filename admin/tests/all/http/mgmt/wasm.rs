//! `/api/v1/jobs/{id}/wasm` and `/api/v1/wasm/validate`: uploads are inspected before they are
//! stored, versions list newest first with what each module exports, rollback re-points the job.

use reqwest::Method;
use serde_json::{Value, json};

use super::jobs::form;
use super::{Client, Env, reply};

/// A WASI command: imports `fd_write`, exports `_start` and `memory`.
const HELLO: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;

async fn upload(client: &Client, job: i64, bytes: Vec<u8>, remark: &str) -> (u16, Value) {
    let request = client
        .request(Method::POST, &format!("/api/v1/jobs/{job}/wasm?remark={remark}"))
        .header("content-type", "application/wasm")
        .body(bytes);
    reply(request.send().await.expect("admin answers")).await
}

/// An admin user's client, a group, and a GLUE_WASM job in it.
async fn wasm_job(env: &Env) -> (Client, jobwheel_admin::store::GroupId, i64) {
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let mut wasm_form = form(group.0);
    wasm_form["glueType"] = json!("GLUE_WASM");
    wasm_form["executorHandler"] = json!(null);
    let (status, job) = root.post("/api/v1/jobs", wasm_form).await;
    assert_eq!(status, 201, "{job}");
    (root, group, job["id"].as_i64().expect("id"))
}

fn module(wat: &str) -> Vec<u8> {
    wat::parse_str(wat).expect("valid WAT")
}

#[tokio::test]
async fn upload_inspects_stores_lists_and_rolls_back_versions() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let (root, _, id) = wasm_job(&env).await;
    let (status, empty) = root.get(&format!("/api/v1/jobs/{id}/wasm")).await;
    assert_eq!((status, &empty["current"]), (200, &Value::Null));

    let first = module(HELLO);
    let (status, v1) = upload(&root, id, first.clone(), "first").await;
    assert_eq!(status, 201, "{v1}");
    assert_eq!(v1["digest"].as_str().map(str::len), Some(64));
    assert_eq!(v1["size"].as_u64(), Some(first.len() as u64));
    assert_eq!(v1["exports"], json!(["memory", "_start"]));
    assert_eq!(v1["imports"], json!(["wasi_snapshot_preview1.fd_write"]));
    assert_eq!((v1["remark"].as_str(), v1["uploader"].as_str()), (Some("first"), Some("root")));

    let second = module(r#"(module (func (export "_start")) (func (export "extra")))"#);
    let (status, v2) = upload(&root, id, second, "second").await;
    assert_eq!(status, 201, "{v2}");
    let (_, listed) = root.get(&format!("/api/v1/jobs/{id}/wasm")).await;
    assert_eq!(listed["current"]["id"], v2["id"]);
    assert_eq!(listed["versions"].as_array().map(Vec::len), Some(2));

    let (status, v3) =
        root.post(&format!("/api/v1/jobs/{id}/wasm/rollback"), json!({"versionId": v1["id"]})).await;
    assert_eq!(status, 201, "{v3}");
    assert_eq!(v3["digest"], v1["digest"]);
    let (_, listed) = root.get(&format!("/api/v1/jobs/{id}/wasm")).await;
    assert_eq!(listed["current"]["digest"], v1["digest"], "the rollback is what runs next");
    let (status, _) =
        root.post(&format!("/api/v1/jobs/{id}/wasm/rollback"), json!({"versionId": 99_999})).await;
    assert_eq!(status, 404);
    env.admin.stop().await
}

#[tokio::test]
async fn bad_uploads_are_refused_with_a_clear_message_and_change_nothing() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let (root, group, id) = wasm_job(&env).await;
    let (status, good) = upload(&root, id, module(HELLO), "good").await;
    assert_eq!(status, 201);

    let cases: [(Vec<u8>, &str); 4] = [
        (Vec::new(), "empty"),
        (b"#!/bin/sh\necho hi\n".to_vec(), "magic"),
        (module(r#"(module (func (export "run")))"#), "_start"),
        (module(r#"(module (import "env" "foo" (func)) (func (export "_start")))"#), "env.foo"),
    ];
    for (bytes, expected) in cases {
        let (status, reply) = upload(&root, id, bytes, "bad").await;
        assert_eq!(status, 400, "{expected}: {reply}");
        let msg = reply["msg"].as_str().unwrap_or_default();
        assert!(msg.contains(expected), "{expected} in {msg}");
    }
    let too_big = vec![0u8; 32 * 1024 * 1024 + 1];
    assert_eq!(upload(&root, id, too_big, "huge").await.0, 413);
    let (_, listed) = root.get(&format!("/api/v1/jobs/{id}/wasm")).await;
    assert_eq!(listed["versions"].as_array().map(Vec::len), Some(1), "nothing stored: {listed}");
    assert_eq!(listed["current"]["digest"], good["digest"]);

    // validate answers the same checks without storing.
    let response = root.request(Method::POST, "/api/v1/wasm/validate").body(module(HELLO)).send().await?;
    let (status, info) = reply(response).await;
    assert_eq!((status, info["exports"].clone()), (200, json!(["memory", "_start"])));
    let response = root.request(Method::POST, "/api/v1/wasm/validate").body(b"nope".to_vec()).send().await?;
    assert_eq!(reply(response).await.0, 400);

    // Not a GLUE_WASM job; not the caller's group; anonymous.
    let (_, bean) = root.post("/api/v1/jobs", form(group.0)).await;
    let bean_id = bean["id"].as_i64().expect("id");
    assert_eq!(upload(&root, bean_id, module(HELLO), "x").await.0, 400);
    let other = env.group("app-other").await;
    env.normal_user("alice", &[other]).await;
    let alice = env.login("alice").await;
    assert_eq!(upload(&alice, id, module(HELLO), "x").await.0, 403);
    assert_eq!(alice.get(&format!("/api/v1/jobs/{id}/wasm")).await.0, 403);
    assert_eq!(upload(&env.anonymous(), id, module(HELLO), "x").await.0, 401);
    env.admin.stop().await
}
