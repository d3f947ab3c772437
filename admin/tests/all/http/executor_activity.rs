//! The executor page's numbers (`GET /api/v1/groups/{id}/executors`): a real executor capped at
//! one run reports the run it executes and the one waiting for its slot; an unreachable address
//! is listed with the reason; jobwheel executors are told apart from xxl-job's own (whose
//! heartbeat is replayed from the 2.4.2 wire capture), which alone can run GLUE(Java).

use std::sync::Arc;

use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, oneshot};

use super::mgmt::Env;
use crate::http::executor::job;
use crate::http::{TOKEN, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_group_page_shows_runs_queues_and_slots_of_each_executor() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let group = jobwheel_tests::fixtures::auto_group(&*store, "capped-app").await?;

    let permits = Arc::new(Semaphore::new(0));
    let mut handlers = Handlers::new();
    let held = Arc::clone(&permits);
    handlers.register("echo", move |_ctx: JobContext| {
        let held = Arc::clone(&held);
        async move {
            held.acquire().await?.forget();
            Ok(())
        }
    });
    let dir = tempfile::tempdir()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new("capped-app", dir.path().join("logs"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![env.admin.base.clone()];
    config.max_concurrent_runs = 1;
    let (stop, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    eventually("the executor in its group", || async {
        store.load_group(group).await.expect("group").expect("exists").group.address_list.map(|_| ())
    })
    .await;

    for _ in 0..2 {
        let id = store.add_job(&job(group)).await?;
        assert_eq!(root.post(&format!("/api/v1/jobs/{}/trigger", id.0), json!({})).await.0, 200);
    }
    let path = format!("/api/v1/groups/{}/executors", group.0);
    let busy: Value = eventually("one run executing and one waiting for the slot", || async {
        let (_, list) = root.get(&path).await;
        (list[0]["running"] == 1 && list[0]["waitingForSlot"] == 1).then_some(list)
    })
    .await;
    assert_eq!(
        (busy[0]["reachable"].as_bool(), busy[0]["cap"].as_i64(), busy[0]["queued"].as_i64()),
        (Some(true), Some(1), Some(1)),
        "{busy}"
    );

    permits.add_permits(2);
    eventually("both runs done", || async {
        let (_, list) = root.get(&path).await;
        (list[0]["running"] == 0 && list[0]["queued"] == 0).then_some(())
    })
    .await;

    // xxl-job-core 2.4.2's own heartbeat, as captured, for the same AppName on another address.
    let capture = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/java-2.4.2/java-2.4.2.admin.jsonl"),
    )?;
    let beat: Value = capture
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|request| request["path"].as_str().is_some_and(|p| p.ends_with("/api/registry")))
        .expect("the captured registry beat");
    let mut body = beat["body"].clone();
    body["registryKey"] = json!("capped-app");
    body["registryValue"] = json!("http://127.0.0.1:9/");
    let sent = reqwest::Client::new()
        .post(format!("{}/api/registry", env.admin.base))
        .header("XXL-JOB-ACCESS-TOKEN", TOKEN)
        .json(&body)
        .send()
        .await?;
    assert_eq!(sent.status(), 200);
    let mixed: Value = eventually("both executors in the group", || async {
        let (_, list) = root.get(&path).await;
        (list.as_array().map(Vec::len) == Some(2)).then_some(list)
    })
    .await;
    let kinds: Vec<(&str, &str)> = mixed
        .as_array()
        .expect("list")
        .iter()
        .map(|e| (e["address"].as_str().unwrap_or_default(), e["kind"].as_str().unwrap_or_default()))
        .collect();
    assert!(kinds.contains(&("http://127.0.0.1:9/", "other")), "the Java executor: {mixed}");
    assert_eq!(kinds.iter().filter(|(_, kind)| *kind == "jobwheel").count(), 1, "ours: {mixed}");

    let manual = env.group("manual-app").await;
    let (status, list) = root.get(&format!("/api/v1/groups/{}/executors", manual.0)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (list[0]["address"].as_str(), list[0]["reachable"].as_bool(), list[0]["kind"].as_str()),
        (Some("http://127.0.0.1:9/"), Some(false), Some("unknown")),
        "{list}"
    );
    assert!(list[0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{list}");

    let _ = stop.send(());
    executor.await??;
    env.admin.stop().await
}
