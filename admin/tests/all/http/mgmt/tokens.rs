//! `/api/v1/tokens`: a user's own API tokens — shown once, listed without the secret, usable
//! as a bearer credential, deletable only by their owner.

use serde_json::json;

use super::Env;

#[tokio::test]
async fn a_token_is_shown_once_listed_without_its_secret_used_and_deleted() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let alice_id = env.normal_user("alice", &[]).await;
    let alice = env.login("alice").await;
    assert_eq!(alice.get("/api/v1/tokens").await.1, json!([]));
    let (status, created) = alice.post("/api/v1/tokens", json!({"name": "  deploy script "})).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["name"], "deploy script");
    let token = created["token"].as_str().expect("token").to_owned();
    assert_eq!(token.len(), 64);
    let stored = env.store().list_api_tokens(alice_id).await?;
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0].name, token);

    let script = env.anonymous().with_token(&token);
    let (status, me) = script.get("/api/v1/session").await;
    assert_eq!((status, me["user"]["username"].as_str()), (200, Some("alice")));
    let (status, listed) = alice.get("/api/v1/tokens").await;
    assert_eq!(status, 200);
    let listed = listed.as_array().expect("array").clone();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0]["id"].clone(), listed[0]["name"].as_str()),
        (created["id"].clone(), Some("deploy script"))
    );
    assert!(listed[0]["createdAt"].as_i64().is_some());
    assert!(listed[0]["lastUsedAt"].as_i64().is_some(), "the bearer request was recorded: {listed:?}");
    assert!(listed[0].get("token").is_none(), "never listed again");

    // A second token; tokens can manage tokens (same rights as the owner).
    let (_, second) = script.post("/api/v1/tokens", json!({"name": "second"})).await;
    assert_eq!(alice.get("/api/v1/tokens").await.1[0]["id"], second["id"], "newest first");
    assert_eq!(alice.delete(&format!("/api/v1/tokens/{}", created["id"])).await.0, 204);
    assert_eq!(script.get("/api/v1/session").await.0, 401, "a deleted token no longer works");
    assert_eq!(alice.delete(&format!("/api/v1/tokens/{}", created["id"])).await.0, 404);
    assert_eq!(alice.get("/api/v1/tokens").await.1.as_array().map(Vec::len), Some(1));
    env.admin.stop().await
}

#[tokio::test]
async fn names_are_checked_and_other_users_tokens_are_out_of_reach() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    env.normal_user("alice", &[]).await;
    let root = env.login("root").await;
    let alice = env.login("alice").await;
    for name in [json!(""), json!("   "), json!("n".repeat(101))] {
        let (status, reply) = alice.post("/api/v1/tokens", json!({"name": name})).await;
        assert_eq!(status, 400, "{reply}");
        assert!(reply["msg"].as_str().unwrap_or_default().starts_with("name"), "{reply}");
    }
    assert_eq!(alice.post("/api/v1/tokens", json!({})).await.0, 400);
    assert_eq!(alice.post("/api/v1/tokens", json!({"name": "n".repeat(100)})).await.0, 201);

    let (_, roots) = root.post("/api/v1/tokens", json!({"name": "root's"})).await;
    assert_eq!(alice.get("/api/v1/tokens").await.1.as_array().map(Vec::len), Some(1), "only her own");
    let (status, reply) = alice.delete(&format!("/api/v1/tokens/{}", roots["id"])).await;
    assert_eq!(status, 404, "even an administrator's token id is not hers: {reply}");
    let root_script = env.anonymous().with_token(roots["token"].as_str().expect("token"));
    assert_eq!(root_script.get("/api/v1/session").await.0, 200, "still valid");

    let anonymous = env.anonymous();
    assert_eq!(anonymous.get("/api/v1/tokens").await.0, 401);
    assert_eq!(anonymous.post("/api/v1/tokens", json!({"name": "x"})).await.0, 401);
    assert_eq!(anonymous.delete("/api/v1/tokens/1").await.0, 401);
    assert_eq!(anonymous.with_token("not-a-token").get("/api/v1/tokens").await.0, 401);
    env.admin.stop().await
}

/// Review N4: a token may be given an expiry, shown in its listing, and refused once past it.
#[tokio::test]
async fn a_token_with_an_expiry_is_refused_after_it() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let user = env.admin_user("root").await;
    let root = env.login("root").await;
    let (status, refused) = root.post("/api/v1/tokens", json!({"name": "x", "expiresInDays": 0})).await;
    assert_eq!(status, 400, "{refused}");
    let before = chrono::Utc::now().timestamp_millis();
    let (status, made) = root.post("/api/v1/tokens", json!({"name": "monthly", "expiresInDays": 30})).await;
    assert_eq!(status, 201, "{made}");
    let expires = made["expiresAt"].as_i64().expect("expiresAt");
    assert!((expires - before - 30 * 86_400_000).abs() < 60_000, "{made}");
    let (_, listed) = root.get("/api/v1/tokens").await;
    assert_eq!(listed[0]["expiresAt"], expires, "{listed}");
    assert_eq!(
        env.anonymous().with_token(made["token"].as_str().expect("token")).get("/api/v1/session").await.0,
        200
    );

    // One whose time has come (written as the store would keep it a month later).
    let token = "an-expired-token-0123456789abcdef";
    env.store()
        .add_api_token(&jobwheel_admin::store::NewApiToken {
            user_id: user,
            name: "old".to_owned(),
            token_hash: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes())),
            created_ms: before - 1000,
            scope: "write".to_owned(),
            expires_ms: Some(before - 1),
        })
        .await?;
    let (status, body) = env.anonymous().with_token(token).get("/api/v1/session").await;
    assert_eq!(status, 401, "{body}");
    assert!(body["msg"].as_str().unwrap_or_default().contains("expired"), "{body}");
    env.admin.stop().await
}
