//! Size limits of the management API: a JSON body over 2 MiB and a Wasm module over 32 MiB are
//! refused with 413 and a message naming the limit, before anything is stored.

use reqwest::Method;
use serde_json::json;

use super::{Env, reply};

#[tokio::test]
async fn oversized_bodies_are_413_with_a_message() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-limits").await;
    let root = env.login("root").await;

    let mut job = super::jobs::form(group.0);
    job["executorParam"] = json!("x".repeat(3 * 1024 * 1024));
    let (status, body) = root.post("/api/v1/jobs", job).await;
    assert_eq!(status, 413, "{body}");
    assert!(body["msg"].as_str().is_some_and(|m| m.contains("2 MiB")), "names the limit: {body}");
    let (_, listed) = root.get(&format!("/api/v1/jobs?jobGroup={}", group.0)).await;
    assert_eq!(listed["total"], 0, "nothing was stored");

    let module = vec![0u8; 32 * 1024 * 1024 + 1];
    let response = root
        .request(Method::POST, "/api/v1/wasm/validate")
        .header("content-type", "application/wasm")
        .body(module)
        .send()
        .await?;
    let (status, body) = reply(response).await;
    assert_eq!(status, 413, "{body}");
    assert!(body["msg"].as_str().is_some_and(|m| m.contains("32 MiB")), "names the limit: {body}");
    env.admin.stop().await
}
