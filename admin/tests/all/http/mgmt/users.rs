//! `/api/v1/users`: administrators manage users; the rules of upstream's user form, no editing
//! or deleting oneself, and changes that take effect on the user's very next request.

use serde_json::{Value, json};

use super::{Env, PASSWORD};

fn user(name: &str, role: i64, permission: &[i32]) -> Value {
    json!({"username": name, "password": PASSWORD, "role": role, "permission": permission})
}

#[tokio::test]
async fn a_user_is_created_listed_edited_and_deleted() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let root_id = env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let (status, bob) = root.post("/api/v1/users", user("  bob.smith@ops ", 0, &[group.0])).await;
    assert_eq!(status, 201, "{bob}");
    assert_eq!((bob["username"].as_str(), bob["role"].as_i64()), (Some("bob.smith@ops"), Some(0)));
    assert_eq!(bob["permission"], json!([group.0]));
    assert!(bob.get("password").is_none(), "{bob}");
    let id = bob["id"].as_i64().expect("id");
    let bob_client = env.login("bob.smith@ops").await;

    let (status, listed) = root.get("/api/v1/users?username=bob").await;
    assert_eq!((status, listed["total"].as_u64()), (200, Some(1)), "{listed}");
    // The first start made its own administrator ("admin") besides root.
    let (_, admins) = root.get("/api/v1/users?role=1").await;
    let names: Vec<&str> =
        admins["items"].as_array().expect("items").iter().filter_map(|u| u["username"].as_str()).collect();
    assert_eq!(names, ["admin", "root"], "{admins}");
    assert_eq!(admins["items"][1]["id"], root_id.0);
    assert_eq!(root.get("/api/v1/users?role=-1").await.1["total"], 3);
    assert_eq!(root.get("/api/v1/users?limit=1&offset=2").await.1["items"][0]["username"], "root");

    // Without a password the old one stays; the rename is checked like a new name.
    let (status, edited) = root
        .put(&format!("/api/v1/users/{id}"), json!({"username": "bobby", "role": 0, "permission": []}))
        .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!((edited["username"].as_str(), edited["permission"].clone()), (Some("bobby"), json!([])));
    assert_eq!(bob_client.get("/api/v1/session").await.1["user"]["username"], "bobby", "session still valid");
    let (status, _) =
        env.anonymous().post("/api/v1/session", json!({"username": "bobby", "password": PASSWORD})).await;
    assert_eq!(status, 200, "old password kept");

    // A new password ends the user's sessions.
    let (status, _) = root
        .put(&format!("/api/v1/users/{id}"), json!({"username": "bobby", "password": "fresh-pw", "role": 0}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(bob_client.get("/api/v1/session").await.0, 401);
    let (status, _) =
        env.anonymous().post("/api/v1/session", json!({"username": "bobby", "password": "fresh-pw"})).await;
    assert_eq!(status, 200);

    assert_eq!(root.delete(&format!("/api/v1/users/{id}")).await.0, 204);
    assert_eq!(root.delete(&format!("/api/v1/users/{id}")).await.0, 404);
    assert_eq!(root.put(&format!("/api/v1/users/{id}"), user("bobby", 0, &[])).await.0, 404);
    env.admin.stop().await
}

#[tokio::test]
async fn every_form_rule_is_a_400_naming_the_field_and_names_are_unique() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let cases = [
        ("username", user("abc", 0, &[])),
        ("username", user(&"u".repeat(21), 0, &[])),
        ("username", user("bad name", 0, &[])),
        ("password", json!({"username": "carol", "role": 0})),
        ("password", json!({"username": "carol", "password": "abc", "role": 0})),
        ("password", json!({"username": "carol", "password": "p".repeat(21), "role": 0})),
        ("role", user("carol", 2, &[])),
        ("permission", user("carol", 0, &[group.0, 999])),
    ];
    for (field, body) in cases {
        let (status, reply) = root.post("/api/v1/users", body.clone()).await;
        assert_eq!(status, 400, "{body} → {reply}");
        assert!(reply["msg"].as_str().unwrap_or_default().starts_with(field), "{field}: {reply}");
    }
    let (status, carol) = root.post("/api/v1/users", user("carol", 0, &[])).await;
    assert_eq!(status, 201, "{carol}");
    let (status, reply) = root.post("/api/v1/users", user(" carol", 1, &[])).await;
    assert_eq!(status, 409, "{reply}");
    let (_, dave) = root.post("/api/v1/users", user("dave", 0, &[])).await;
    let (status, reply) = root.put(&format!("/api/v1/users/{}", dave["id"]), user("carol", 0, &[])).await;
    assert_eq!(status, 409, "rename onto a taken name: {reply}");
    let (status, reply) = root.put(&format!("/api/v1/users/{}", dave["id"]), user("dave", 0, &[999])).await;
    assert_eq!(status, 400, "{reply}");
    env.admin.stop().await
}

#[tokio::test]
async fn nobody_edits_or_deletes_their_own_account_here() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let me = env.admin_user("root").await;
    let root = env.login("root").await;
    let (status, reply) = root.put(&format!("/api/v1/users/{}", me.0), user("root", 0, &[])).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("own account"));
    assert_eq!(root.delete(&format!("/api/v1/users/{}", me.0)).await.0, 400);
    assert_eq!(root.get("/api/v1/session").await.1["user"]["role"], 1, "unchanged");
    env.admin.stop().await
}

#[tokio::test]
async fn only_administrators_manage_users_and_changes_apply_at_once() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let alice_id = env.normal_user("alice", &[]).await;
    let root = env.login("root").await;
    let alice = env.login("alice").await;
    let (status, created) = alice.post("/api/v1/tokens", json!({"name": "script"})).await;
    assert_eq!(status, 201);
    let script = env.anonymous().with_token(created["token"].as_str().expect("token"));
    for client in [&alice, &script] {
        let (status, reply) = client.get("/api/v1/users").await;
        assert_eq!(status, 403, "{reply}");
        assert_eq!(client.post("/api/v1/users", user("mallory", 1, &[])).await.0, 403);
        assert_eq!(client.put(&format!("/api/v1/users/{}", alice_id.0), user("alice", 1, &[])).await.0, 403);
        assert_eq!(client.delete(&format!("/api/v1/users/{}", alice_id.0)).await.0, 403);
    }
    assert_eq!(env.anonymous().get("/api/v1/users").await.0, 401);

    // Granting a group is visible to alice's existing session on the next request…
    assert_eq!(alice.get(&format!("/api/v1/groups/{}", group.0)).await.0, 403);
    let (status, _) = root
        .put(
            &format!("/api/v1/users/{}", alice_id.0),
            json!({"username": "alice", "role": 0, "permission": [group.0]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(alice.get(&format!("/api/v1/groups/{}", group.0)).await.0, 200);
    // …and so is a promotion, for her token too.
    let (status, _) =
        root.put(&format!("/api/v1/users/{}", alice_id.0), json!({"username": "alice", "role": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(script.get("/api/v1/users").await.0, 200);

    // Deleting her ends her session and her token.
    assert_eq!(root.delete(&format!("/api/v1/users/{}", alice_id.0)).await.0, 204);
    assert_eq!(alice.get("/api/v1/session").await.0, 401);
    assert_eq!(script.get("/api/v1/session").await.0, 401);
    assert!(env.store().list_api_tokens(alice_id).await?.is_empty(), "token rows deleted");
    env.admin.stop().await
}
