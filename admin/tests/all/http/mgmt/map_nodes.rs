//! Map nodes through the management API of a real admin and a real (in-process) jobwheel
//! executor: a map node without items or with a parallelism out of range is refused when saved,
//! naming the field; alice, who may use group A only, cannot save a map whose job is in group B
//! (403) nor read the items of another group's instance; a run maps over its parent's output,
//! each item reaching the BEAN handler as `workflow_item`, the reduce step sums the outputs in
//! item order; a failing item fails the map, shows as failed in the run's counts and the items
//! list, and rerun from failure runs that item only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Env;
use super::jobs::form;
use super::workflows::ended;
use crate::http::{TOKEN, eventually};

const APP: &str = "map-app";

/// An executor of [`APP`]: `ids` outputs `{"ids": [0..n)}` for parameter n, `double` outputs
/// twice its item (failing item 3 while `flaky`), `sum` adds up its context's `each`.
async fn executor(
    admin: &str,
    dir: &std::path::Path,
    flaky: Arc<AtomicBool>,
    doubled: Arc<AtomicUsize>,
) -> anyhow::Result<(oneshot::Sender<()>, tokio::task::JoinHandle<anyhow::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new(APP, dir.join("executor"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin.to_owned()];
    config.timings.registry_interval = Duration::from_secs(1);
    let mut handlers = Handlers::new();
    handlers.register("ids", |ctx: JobContext| async move {
        let n: i64 = ctx.param().trim().parse()?;
        ctx.set_output(&json!({ "ids": (0..n).collect::<Vec<_>>() }));
        Ok(())
    });
    handlers.register("double", move |ctx: JobContext| {
        let (flaky, doubled) = (Arc::clone(&flaky), Arc::clone(&doubled));
        async move {
            doubled.fetch_add(1, Ordering::SeqCst);
            let item =
                ctx.workflow_item().and_then(Value::as_i64).ok_or_else(|| anyhow::anyhow!("no item"))?;
            anyhow::ensure!(ctx.param() == item.to_string(), "the item is the parameter too");
            anyhow::ensure!(ctx.workflow_context().is_none(), "an item's run gets no context");
            anyhow::ensure!(!(item == 3 && flaky.load(Ordering::SeqCst)), "item 3 is flaky");
            ctx.set_output(&json!(item * 2));
            Ok(())
        }
    });
    handlers.register("sum", |ctx: JobContext| async move {
        let each = ctx.workflow_context().map(|c| c["each"].clone()).unwrap_or_default();
        let sum: i64 = each.as_array().map(|a| a.iter().filter_map(Value::as_i64).sum()).unwrap_or(-1);
        ctx.set_output(&json!({ "sum": sum, "each": each }));
        Ok(())
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    Ok((stop, task))
}

fn msg(reply: &Value) -> String {
    reply["msg"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_nodes_are_checked_held_to_their_groups_run_counted_and_rerun_item_by_item() -> anyhow::Result<()>
{
    let env = Env::start().await?;
    env.admin_user("root").await;
    let store = env.store();
    let group = jobwheel_tests::fixtures::auto_group(store, APP).await?;
    let other = env.group("map-other").await;
    env.normal_user("alice", &[other]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let mut jobs = Vec::new();
    for handler in ["ids", "double", "sum"] {
        let job = store.add_job(&jobwheel_tests::fixtures::bean_job(group, handler, handler)).await?;
        jobs.push(job.0);
    }
    let [ids, double, sum] = jobs[..] else { unreachable!() };
    let graph = |each: Value| {
        json!({
            "nodes": [{"name": "load", "jobId": ids, "param": "6"}, each, {"name": "sum", "jobId": sum}],
            "edges": [{"from": "load", "to": "each"}, {"from": "each", "to": "sum"}]
        })
    };
    let create = |client: super::Client, group: i32, graph: Value| {
        let body = json!({"name": "doubling", "jobGroup": group, "graph": graph});
        async move { client.post("/api/v1/workflows", body).await }
    };

    // Refused when saved, naming what is wrong.
    let (status, refused) =
        create(root.clone(), group.0, graph(json!({"name": "each", "kind": "MAP", "jobId": double}))).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("a map node needs items"), "{refused}");
    let too_wide =
        json!({"name": "each", "kind": "MAP", "jobId": double, "items": "/load/ids", "parallelism": 5000});
    let (status, refused) = create(root.clone(), group.0, graph(too_wide)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("parallelism is 1 to 1000"), "{refused}");
    let pointer = json!({"name": "each", "kind": "MAP", "jobId": double, "items": "load.ids"});
    let (status, refused) = create(root.clone(), group.0, graph(pointer)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("is not a JSON Pointer"), "{refused}");
    // alice may use her group only: a map of her group running another group's job is refused.
    let (_, own) = root.post("/api/v1/jobs", form(other.0)).await;
    let own = own["id"].as_i64().expect("id");
    let foreign = json!({
        "nodes": [{"name": "load", "jobId": own}, {"name": "each", "kind": "MAP", "jobId": double, "items": "/load"}],
        "edges": [{"from": "load", "to": "each"}]
    });
    let (status, refused) = create(alice.clone(), other.0, foreign).await;
    assert_eq!(status, 403, "{refused}");

    let each =
        json!({"name": "each", "kind": "MAP", "jobId": double, "items": "/load/ids", "parallelism": 2});
    let (status, saved) = create(root.clone(), group.0, graph(each)).await;
    assert_eq!(status, 201, "{saved}");
    let workflow = saved["id"].as_i64().expect("id");

    let dir = tempfile::tempdir()?;
    let (flaky, doubled) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicUsize::new(0)));
    let (stop, task) =
        executor(&env.admin.base, dir.path(), Arc::clone(&flaky), Arc::clone(&doubled)).await?;
    eventually("the executor registered", || async {
        let row = store.load_group(group).await.expect("group").expect("exists");
        row.group.address_list.filter(|l| !l.is_empty()).map(|_| ())
    })
    .await;

    // Item 3 fails: the map fails naming it, its counts and the failed items say so.
    let (status, started) = root.post(&format!("/api/v1/workflows/{workflow}/instances"), json!({})).await;
    assert_eq!(status, 201, "{started}");
    let instance = started["instanceId"].as_i64().expect("instance");
    let view = ended(&root, instance).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let run =
        view["runs"].as_array().expect("runs").iter().find(|r| r["node"] == "each").cloned().expect("each");
    assert_eq!(
        run["items"],
        json!({"total": 6, "succeeded": 5, "failed": 1, "running": 0, "due": 0, "stopped": 0})
    );
    assert!(
        run["message"].as_str().unwrap_or_default().starts_with("1 of 6 items failed; the first, item 3"),
        "{run}"
    );
    let path = format!("/api/v1/workflow-instances/{instance}/nodes/each/items");
    let (status, failed) = root.get(&format!("{path}?status=FAILED")).await;
    assert_eq!(status, 200, "{failed}");
    assert_eq!(
        (failed["total"].as_i64(), failed["rows"][0]["index"].as_i64()),
        (Some(1), Some(3)),
        "{failed}"
    );
    assert_eq!(failed["rows"][0]["item"], json!(3));
    assert!(
        failed["rows"][0]["message"].as_str().unwrap_or_default().contains("item 3 is flaky"),
        "{failed}"
    );
    let (status, refused) = alice.get(&path).await;
    assert_eq!(status, 403, "another group's items: {refused}");
    let (status, refused) = root.get(&format!("{path}?status=LOST")).await;
    assert_eq!(status, 400, "{refused}");

    // Rerun from failure runs item 3 only; the reduce step sums the outputs in item order.
    flaky.store(false, Ordering::SeqCst);
    assert_eq!(doubled.load(Ordering::SeqCst), 6);
    let (status, reply) =
        root.post(&format!("/api/v1/workflow-instances/{instance}/rerun-failed"), json!({})).await;
    assert_eq!(status, 200, "{reply}");
    let view = ended(&root, instance).await;
    assert_eq!(view["status"], "SUCCEEDED", "{view}");
    assert_eq!(doubled.load(Ordering::SeqCst), 7, "only the failed item ran again");
    assert_eq!(view["context"]["sum"], json!({"sum": 30, "each": [0, 2, 4, 6, 8, 10]}), "{view}");
    let (_, all) = root.get(&path).await;
    let states: Vec<&str> =
        all["rows"].as_array().expect("rows").iter().filter_map(|r| r["status"].as_str()).collect();
    assert_eq!(states, vec!["SUCCEEDED"; 6], "{all}");

    let _ = stop.send(());
    task.await??;
    env.admin.stop().await
}
