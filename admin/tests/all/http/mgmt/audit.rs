//! The audit log: every kind of management change made through the API appears in
//! `GET /api/v1/audit` with who, when, from where and the resource before and after, with no
//! secret value, password or token in it; the filters narrow it; failed changes are not
//! recorded, failed logins are; retention deletes old entries.

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

/// The entries, newest first, for `query`.
async fn audit(client: &super::Client, query: &str) -> Vec<Value> {
    let (status, page) = client.get(&format!("/api/v1/audit?limit=500{query}")).await;
    assert_eq!(status, 200, "{page}");
    page["items"].as_array().cloned().unwrap_or_default()
}

fn actions(entries: &[Value]) -> Vec<String> {
    entries.iter().rev().map(|e| e["action"].as_str().unwrap_or_default().to_owned()).collect()
}

#[tokio::test]
async fn every_kind_of_change_is_recorded_with_its_before_and_after() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("audit-app").await;
    let root = env.login("root").await;
    let anonymous = env.anonymous();
    assert_eq!(
        anonymous.post("/api/v1/session", json!({"username": "root", "password": "wrong"})).await.0,
        401
    );

    let (status, job) = root.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let mut edited = form(group.0);
    edited["jobDesc"] = json!("renamed by audit test");
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}"), edited).await.0, 200);
    // Refused: changes nothing, so no entry.
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}"), json!({"jobDesc": ""})).await.0, 400);
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/start"), json!({})).await.0, 200);
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/stop"), json!({})).await.0, 200);
    let trigger = json!({"executorParam": "audit-param", "addressList": "http://127.0.0.1:9/"});
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/trigger"), trigger).await.0, 200);
    let grant = json!({"httpAllow": ["https://api.example.com"], "variables": {"REGION": "eu"}});
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}/grant"), grant).await.0, 200);
    let secret = format!("/api/v1/jobs/{id}/secrets/API_KEY");
    assert_eq!(root.put(&secret, json!({"value": "sekrit-value-123"})).await.0, 204);
    assert_eq!(root.delete(&secret).await.0, 204);

    let (status, created) = root
        .post("/api/v1/groups", json!({"appname": "audit-manual", "title": "Manual", "addressType": 1, "addressList": "http://10.0.0.1:9999"}))
        .await;
    assert_eq!(status, 201, "{created}");
    let other = created["id"].as_i64().expect("group id");
    let variables = json!({"variables": {"ENV": "prod"}});
    assert_eq!(root.put(&format!("/api/v1/groups/{other}/variables"), variables).await.0, 200);
    assert_eq!(root.delete(&format!("/api/v1/groups/{other}")).await.0, 204);

    let (status, bob) = root
        .post(
            "/api/v1/users",
            json!({"username": "bobb", "password": "bob-password-1", "role": 0, "permission": [group.0]}),
        )
        .await;
    assert_eq!(status, 201, "{bob}");
    let bob_id = bob["id"].as_i64().expect("user id");
    let renamed = json!({"username": "bobby", "password": "bob-password-2", "role": 0, "permission": []});
    assert_eq!(root.put(&format!("/api/v1/users/{bob_id}"), renamed).await.0, 200);
    let (status, token) = root.post("/api/v1/tokens", json!({"name": "audit-ci"})).await;
    assert_eq!(status, 201, "{token}");
    let secret_token = token["token"].as_str().expect("token").to_owned();
    let token_id = token["id"].as_i64().expect("token id");
    assert_eq!(root.delete(&format!("/api/v1/tokens/{token_id}")).await.0, 204);
    assert_eq!(root.post("/api/v1/logs/clear", json!({"jobGroup": group.0, "type": 9})).await.0, 200);
    assert_eq!(root.delete(&format!("/api/v1/jobs/{id}")).await.0, 204);

    let entries = audit(&root, "").await;
    let expected = [
        "session.login",
        "session.login_failed",
        "job.create",
        "job.update",
        "job.start",
        "job.stop",
        "job.trigger",
        "grant.update",
        "secret.put",
        "secret.delete",
        "group.create",
        "variables.update",
        "group.delete",
        "user.create",
        "user.update",
        "token.create",
        "token.delete",
        "log.clear",
        "job.delete",
    ];
    assert_eq!(actions(&entries), expected, "{entries:#?}");
    let text = serde_json::to_string(&entries)?;
    for secret in ["sekrit-value-123", "bob-password-1", "bob-password-2", &secret_token, "wrong"] {
        assert!(!text.contains(secret), "{secret} is in the audit log: {text}");
    }
    let find = |action: &str| entries.iter().find(|e| e["action"] == action).cloned().expect(action);
    let update = find("job.update");
    assert_eq!((update["username"].as_str(), update["client"].as_str()), (Some("root"), Some("127.0.0.1")));
    assert_eq!(update["target"], format!("job {id}"));
    assert_eq!(update["before"]["jobDesc"], job["jobDesc"]);
    assert_eq!(update["after"]["jobDesc"], "renamed by audit test");
    assert_eq!(
        (
            find("job.start")["after"]["triggerStatus"].as_i64(),
            find("job.stop")["after"]["triggerStatus"].as_i64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(find("job.trigger")["detail"]["executorParam"], "audit-param");
    let secret_put = find("secret.put");
    assert_eq!(secret_put["detail"], json!({"name": "API_KEY"}));
    assert_eq!(secret_put["before"]["secrets"], json!([]));
    assert_eq!(secret_put["after"]["secrets"][0]["name"], "API_KEY");
    assert_eq!(find("grant.update")["after"]["variables"]["REGION"], "eu");
    assert_eq!(find("variables.update")["after"]["variables"]["ENV"], "prod");
    assert_eq!(find("group.delete")["before"]["appname"], "audit-manual");
    assert!(find("group.delete")["after"].is_null());
    assert_eq!(find("user.update")["before"]["username"], "bobb");
    assert_eq!(find("user.update")["after"]["username"], "bobby");
    assert_eq!(find("token.create")["detail"], json!({"name": "audit-ci"}));
    assert_eq!(find("job.delete")["before"]["jobDesc"], "renamed by audit test");
    let failed = find("session.login_failed");
    assert_eq!((failed["username"].as_str(), failed["userId"].as_i64()), (Some("root"), None));

    // Filters.
    let jobs = audit(&root, "&action=job.").await;
    assert!(jobs.iter().all(|e| e["action"].as_str().is_some_and(|a| a.starts_with("job."))), "{jobs:#?}");
    assert_eq!(jobs.len(), 6);
    assert_eq!(audit(&root, &format!("&target=user%20{bob_id}")).await.len(), 2);
    assert_eq!(audit(&root, "&username=nobody").await.len(), 0);
    let now = chrono::Utc::now().timestamp_millis();
    assert_eq!(audit(&root, &format!("&from={}", now + 60_000)).await.len(), 0);
    assert_eq!(audit(&root, &format!("&to={}", now + 60_000)).await.len(), expected.len());

    // Retention: entries older than the cut-off go (the report monitor passes its day).
    assert_eq!(env.store().purge_audit(now + 60_000).await?, expected.len() as u64);
    assert!(audit(&root, "").await.is_empty());
    env.admin.stop().await
}
