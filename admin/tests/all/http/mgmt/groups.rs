//! `/api/v1/groups`: create/read/list/edit/delete, upstream's form rules, live registrations,
//! the delete guards, and who may read or write.

use chrono::Utc;
use jobwheel_admin::store::RegistryKey;
use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

fn manual(appname: &str, addresses: &str) -> Value {
    json!({"appname": appname, "title": "Orders", "addressType": 1, "addressList": addresses})
}

#[tokio::test]
async fn a_group_is_created_read_listed_edited_and_deleted() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let first = env.group("first-app").await;
    let root = env.login("root").await;
    let (status, group) =
        root.post("/api/v1/groups", manual("orders-app", " http://10.0.0.1:9999 ,https://b")).await;
    assert_eq!(status, 201, "{group}");
    let id = group["id"].as_i64().expect("id");
    assert_eq!(group["appname"], "orders-app");
    assert_eq!(group["addressList"], "http://10.0.0.1:9999,https://b", "entries trimmed");
    assert!(group["updateTime"].as_i64().is_some());

    let (status, listed) = root.get("/api/v1/groups?appname=ORDERS").await;
    assert_eq!((status, listed["total"].as_u64()), (200, Some(1)), "case-insensitive substring: {listed}");
    assert_eq!(listed["items"][0]["id"], id);
    assert_eq!(root.get("/api/v1/groups?title=orders").await.1["total"], 1);
    let (_, all) = root.get("/api/v1/groups?limit=1&offset=1").await;
    assert_eq!((all["total"].as_u64(), all["items"].as_array().map(Vec::len)), (Some(2), Some(1)));

    // AppNames are unique (review L6): a second group of the same name would share executors,
    // the group's token and its secrets.
    let (status, reply) = root.post("/api/v1/groups", manual("orders-app", "http://10.0.0.9:9999")).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("already the AppName"), "{reply}");
    let (status, reply) =
        root.put(&format!("/api/v1/groups/{}", first.0), manual("orders-app", "http://x")).await;
    assert_eq!(status, 400, "renaming onto another group's AppName: {reply}");

    let edited = json!({"appname": "orders-app", "title": "Orders (prod)", "addressType": 1, "addressList": "http://c"});
    let (status, group) = root.put(&format!("/api/v1/groups/{id}"), edited).await;
    assert_eq!(
        (status, group["title"].as_str(), group["addressList"].as_str()),
        (200, Some("Orders (prod)"), Some("http://c"))
    );
    let (status, group) = root.get(&format!("/api/v1/groups/{id}")).await;
    assert_eq!((status, group["title"].as_str()), (200, Some("Orders (prod)")));
    assert_eq!(group["registered"], json!([]));
    assert_eq!(group["maxRunning"], Value::Null, "no cap unless one is set");

    // jobwheel's cap on runs in flight: set, kept when left out, removed with 0, refused out of range.
    let mut capped = manual("orders-app", "http://c");
    capped["maxRunning"] = json!(3);
    assert_eq!(root.put(&format!("/api/v1/groups/{id}"), capped.clone()).await.1["maxRunning"], 3);
    assert_eq!(
        root.put(&format!("/api/v1/groups/{id}"), manual("orders-app", "http://c")).await.1["maxRunning"],
        3
    );
    for bad in [json!(-1), json!(100_001)] {
        capped["maxRunning"] = bad;
        let (status, refused) = root.put(&format!("/api/v1/groups/{id}"), capped.clone()).await;
        assert_eq!(status, 400, "{refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().starts_with("maxRunning"), "{refused}");
    }
    capped["maxRunning"] = json!(0);
    assert_eq!(root.put(&format!("/api/v1/groups/{id}"), capped).await.1["maxRunning"], Value::Null);

    assert_eq!(root.delete(&format!("/api/v1/groups/{id}")).await.0, 204);
    assert_eq!(root.get(&format!("/api/v1/groups/{id}")).await.0, 404);
    assert_eq!(root.put(&format!("/api/v1/groups/{id}"), manual("orders-app", "http://c")).await.0, 404);
    assert_eq!(root.delete(&format!("/api/v1/groups/{id}")).await.0, 404);
    assert_eq!(root.get(&format!("/api/v1/groups/{}", first.0)).await.0, 200);
    env.admin.stop().await
}

#[tokio::test]
async fn every_form_rule_is_a_400_naming_the_field() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let cases = [
        ("appname", json!({"appname": "abc", "title": "t", "addressType": 0})),
        ("appname", json!({"appname": "a".repeat(65), "title": "t", "addressType": 0})),
        ("appname", json!({"appname": "bad<app>", "title": "t", "addressType": 0})),
        ("title", json!({"appname": "good-app", "title": "  ", "addressType": 0})),
        ("title", json!({"appname": "good-app", "title": "t".repeat(65), "addressType": 0})),
        ("addressType", json!({"appname": "good-app", "title": "t", "addressType": 2})),
        ("addressList", manual("good-app", "")),
        ("addressList", manual("good-app", "10.0.0.1:9999")),
        ("addressList", manual("good-app", "http://a,,http://b")),
    ];
    for (field, body) in cases {
        let (status, reply) = root.post("/api/v1/groups", body.clone()).await;
        assert_eq!(status, 400, "{body} → {reply}");
        assert!(reply["msg"].as_str().unwrap_or_default().starts_with(field), "{field}: {reply}");
    }
    let (status, reply) = root.post("/api/v1/groups", json!({"title": "t"})).await;
    assert_eq!(status, 400, "missing appname: {reply}");
    assert_eq!(root.get("/api/v1/groups").await.1["total"], 0, "nothing was stored");
    // The longest legal values pass.
    let (status, reply) = root
        .post("/api/v1/groups", json!({"appname": "a".repeat(64), "title": "t".repeat(64), "addressType": 0}))
        .await;
    assert_eq!(status, 201, "{reply}");
    env.admin.stop().await
}

#[tokio::test]
async fn registered_lists_live_registrations_and_an_automatic_group_gets_them_as_addresses()
-> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let key = |app: &str, address: &str| RegistryKey {
        registry_group: "EXECUTOR".to_owned(),
        registry_key: app.to_owned(),
        registry_value: address.to_owned(),
    };
    let now = Utc::now();
    env.store().registry_upsert(&key("auto-app", "http://10.0.0.2:9999/"), now).await?;
    env.store().registry_upsert(&key("auto-app", "http://10.0.0.1:9999/"), now).await?;
    // Silent for longer than upstream's 90 s DEAD_TIMEOUT: not live.
    env.store()
        .registry_upsert(&key("auto-app", "http://10.0.0.9:9999/"), now - chrono::Duration::seconds(91))
        .await?;
    env.store().registry_upsert(&key("other-app", "http://10.0.0.5:9999/"), now).await?;

    let (status, group) = root
        .post(
            "/api/v1/groups",
            json!({"appname": "auto-app", "title": "Auto", "addressType": 0, "addressList": "ignored"}),
        )
        .await;
    assert_eq!(status, 201, "{group}");
    assert_eq!(
        group["addressList"], "http://10.0.0.1:9999/,http://10.0.0.2:9999/",
        "filled from the registry at once"
    );
    let (status, group) = root.get(&format!("/api/v1/groups/{}", group["id"])).await;
    assert_eq!(status, 200);
    assert_eq!(group["registered"], json!(["http://10.0.0.1:9999/", "http://10.0.0.2:9999/"]));
    env.admin.stop().await
}

#[tokio::test]
async fn a_group_with_jobs_or_the_last_group_cannot_be_deleted() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let busy = env.group("busy-app").await;
    let root = env.login("root").await;
    let (status, job) = root.post("/api/v1/jobs", form(busy.0)).await;
    assert_eq!(status, 201, "{job}");
    let spare = env.group("spare-app").await;
    let (status, reply) = root.delete(&format!("/api/v1/groups/{}", busy.0)).await;
    assert_eq!(status, 409, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("job"), "{reply}");
    assert_eq!(root.delete(&format!("/api/v1/jobs/{}", job["id"])).await.0, 204);
    assert_eq!(root.delete(&format!("/api/v1/groups/{}", busy.0)).await.0, 204);
    let (status, reply) = root.delete(&format!("/api/v1/groups/{}", spare.0)).await;
    assert_eq!(status, 409, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("last"), "{reply}");
    env.admin.stop().await
}

#[tokio::test]
async fn normal_users_read_their_groups_only_and_write_none() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let mine = env.group("mine-app").await;
    let theirs = env.group("theirs-app").await;
    env.normal_user("alice", &[mine]).await;
    let alice = env.login("alice").await;
    let (status, listed) = alice.get("/api/v1/groups").await;
    assert_eq!((status, listed["total"].as_u64()), (200, Some(1)), "{listed}");
    assert_eq!(listed["items"][0]["id"], mine.0);
    assert_eq!(alice.get(&format!("/api/v1/groups/{}", mine.0)).await.0, 200);
    assert_eq!(alice.get(&format!("/api/v1/groups/{}", theirs.0)).await.0, 403);
    assert_eq!(alice.get("/api/v1/groups/999").await.0, 403, "no hint whether it exists");
    let (status, reply) = alice.post("/api/v1/groups", manual("new-app", "http://a")).await;
    assert_eq!(status, 403, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("administrator"));
    assert_eq!(alice.put(&format!("/api/v1/groups/{}", mine.0), manual("mine-app", "http://a")).await.0, 403);
    assert_eq!(alice.delete(&format!("/api/v1/groups/{}", theirs.0)).await.0, 403);
    assert_eq!(env.anonymous().get("/api/v1/groups").await.0, 401);

    // An API token acts with its owner's rights.
    let (status, created) = alice.post("/api/v1/tokens", json!({"name": "ci"})).await;
    assert_eq!(status, 201, "{created}");
    let script = env.anonymous().with_token(created["token"].as_str().expect("token"));
    assert_eq!(script.get("/api/v1/groups").await.1["total"], 1);
    assert_eq!(script.get(&format!("/api/v1/groups/{}", theirs.0)).await.0, 403);
    assert_eq!(script.post("/api/v1/groups", manual("new-app", "http://a")).await.0, 403);
    env.admin.stop().await
}
