//! Job tags and the fuzzy job search through the management API: tags are normalized, shown,
//! filtered by, counted, kept or cleared on edit and refused when malformed; `q` finds jobs by
//! description, handler or author despite typos, best match first, within the other filters.

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

fn job(group: i32, desc: &str, handler: &str, author: &str, tags: Value) -> Value {
    let mut body = form(group);
    body["jobDesc"] = json!(desc);
    body["executorHandler"] = json!(handler);
    body["author"] = json!(author);
    if !tags.is_null() {
        body["tags"] = tags;
    }
    body
}

fn descs(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|j| j["jobDesc"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn tags_are_normalized_listed_filtered_counted_and_kept_or_cleared() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("tag-app").await;
    let root = env.login("root").await;
    let body = job(group.0, "Nightly report", "reportJob", "alice", json!(["ETL", " nightly ", "etl", ""]));
    let (status, created) = root.post("/api/v1/jobs", body.clone()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["tags"], json!(["etl", "nightly"]), "lower-cased, trimmed, once each");
    let id = created["id"].as_i64().expect("id");
    let (_, other) =
        root.post("/api/v1/jobs", job(group.0, "Hourly sync", "syncJob", "bob", json!(["etl"]))).await;
    root.post("/api/v1/jobs", job(group.0, "Untagged", "plainJob", "carol", Value::Null)).await;

    let (_, etl) = root.get(&format!("/api/v1/jobs?jobGroup={}&tag=ETL", group.0)).await;
    assert_eq!(descs(&etl), ["Hourly sync", "Nightly report"], "{etl}");
    assert_eq!(etl["items"][0]["tags"], json!(["etl"]));
    let (_, counts) = root.get(&format!("/api/v1/jobs/tags?jobGroup={}", group.0)).await;
    assert_eq!(counts, json!([{"tag": "etl", "jobs": 2}, {"tag": "nightly", "jobs": 1}]));

    // An edit without `tags` keeps them; `[]` clears them.
    let (status, kept) = root.put(&format!("/api/v1/jobs/{id}"), form(group.0)).await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["tags"], json!(["etl", "nightly"]));
    let mut clear = form(group.0);
    clear["tags"] = json!([]);
    let (_, cleared) = root.put(&format!("/api/v1/jobs/{id}"), clear).await;
    assert_eq!(cleared["tags"], json!([]));

    for (bad, needle) in [
        (json!(["two words"]), "contains ' '"),
        (json!(["x".repeat(33)]), "longer than 32"),
        (json!((0..17).map(|i| format!("t{i}")).collect::<Vec<_>>()), "at most 16"),
    ] {
        let (status, reply) = root.post("/api/v1/jobs", job(group.0, "bad", "h", "a", bad)).await;
        assert_eq!(status, 400, "{reply}");
        assert!(reply["msg"].as_str().unwrap_or_default().contains(needle), "{needle}: {reply}");
    }

    // Deleting a job takes its tags along.
    assert_eq!(root.delete(&format!("/api/v1/jobs/{}", other["id"])).await.0, 204);
    let (_, counts) = root.get(&format!("/api/v1/jobs/tags?jobGroup={}", group.0)).await;
    assert_eq!(counts, json!([]), "{counts}");
    env.admin.stop().await
}

#[tokio::test]
async fn the_fuzzy_search_finds_jobs_despite_typos_best_first_within_the_filters() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (group, elsewhere) = (env.group("search-app").await, env.group("other-app").await);
    let root = env.login("root").await;
    for (desc, handler, author, tags) in [
        ("Nightly report", "reportJob", "alice", json!(["etl"])),
        ("Hourly sync", "syncJob", "bob", json!([])),
        ("Port scan", "scanJob", "carol", json!(["etl"])),
        ("Quarterly report export", "exportJob", "dave", json!([])),
    ] {
        let (status, reply) = root.post("/api/v1/jobs", job(group.0, desc, handler, author, tags)).await;
        assert_eq!(status, 201, "{reply}");
    }
    root.post("/api/v1/jobs", job(elsewhere.0, "Nightly report", "reportJob", "alice", Value::Null)).await;

    let search = |q: &str| format!("/api/v1/jobs?jobGroup={}&q={q}", group.0);
    let (_, found) = root.get(&search("ngt%20rep")).await;
    assert_eq!(descs(&found), ["Nightly report"], "typos and gaps, both words: {found}");
    assert_eq!(found["total"], 1);
    let (_, found) = root.get(&search("port")).await;
    assert_eq!(descs(&found)[0], "Port scan", "a word start first: {found}");
    assert_eq!(found["total"], 3, "report, export and port all contain it: {found}");
    let (_, found) = root.get(&search("BOB")).await;
    assert_eq!(descs(&found), ["Hourly sync"], "the author, any case");
    let (_, found) = root.get(&search("scanjb")).await;
    assert_eq!(descs(&found), ["Port scan"], "the handler");
    let (_, found) = root.get(&format!("{}&tag=etl", search("rep"))).await;
    assert_eq!(descs(&found), ["Nightly report"], "within the tag filter: {found}");
    let (_, paged) = root.get(&format!("{}&limit=1&offset=1", search("port"))).await;
    assert_eq!((paged["total"].as_i64(), descs(&paged).len()), (Some(3), 1), "{paged}");
    let (status, reply) = root.get(&search(&"x".repeat(201))).await;
    assert_eq!(status, 400, "{reply}");
    env.admin.stop().await
}
