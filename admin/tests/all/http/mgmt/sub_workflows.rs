//! Sub-workflows through the management API of a real admin, from the lesser user's side:
//! a sub-workflow node that names nothing, a workflow that does not exist, or a cycle (through
//! another workflow, or of a workflow with itself) is refused when saved, with the chain at
//! fault; alice, who may use group A only, can neither save nor start nor rerun a workflow of
//! A whose child runs a job of B (403, nothing started), while carol, who may use both, can; the
//! child's failure fails the parent's node and rerun from failure reruns the same child; a
//! workflow another one starts cannot be deleted; the instances name each other.

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;
use super::workflows::ended;

fn sub(workflow: i64) -> Value {
    json!({"nodes": [{"name": "sub", "kind": "WORKFLOW", "workflowId": workflow}], "edges": []})
}

fn msg(reply: &Value) -> &str {
    reply["msg"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_workflows_are_checked_when_saved_and_reach_only_what_their_starter_may_use() -> anyhow::Result<()>
{
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (a, b) = (env.group("sub-a").await, env.group("sub-b").await);
    env.normal_user("alice", &[a]).await;
    env.normal_user("carol", &[a, b]).await;
    let (root, alice, carol) = (env.login("root").await, env.login("alice").await, env.login("carol").await);
    let (_, job_a) = root.post("/api/v1/jobs", form(a.0)).await;
    let (_, job_b) = root.post("/api/v1/jobs", form(b.0)).await;
    let (ja, jb) = (job_a["id"].as_i64().expect("id"), job_b["id"].as_i64().expect("id"));
    let create = |client: super::Client, name: &str, group: i32, graph: Value| {
        let body = json!({"name": name, "jobGroup": group, "graph": graph});
        async move { client.post("/api/v1/workflows", body).await }
    };
    let only = |job: i64| json!({"nodes": [{"name": "load", "jobId": job}], "edges": []});

    // Refused when saved, each with what is wrong.
    let (status, refused) = create(root.clone(), "nowhere", a.0, sub(999_999)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("workflow 999999, which does not exist"), "{refused}");
    let unnamed = json!({"nodes": [{"name": "sub", "kind": "WORKFLOW"}], "edges": []});
    let (status, refused) = create(root.clone(), "unnamed", a.0, unnamed).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("needs the workflowId"), "{refused}");
    let (_, first) = create(root.clone(), "first", a.0, only(ja)).await;
    let first = first["id"].as_i64().expect("id");
    let retried = json!({"nodes": [{"name": "sub", "kind": "WORKFLOW", "workflowId": first, "retries": 2}]});
    let (status, refused) = create(root.clone(), "retried", a.0, retried).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("no retries"), "{refused}");
    let (status, second) = create(root.clone(), "second", a.0, sub(first)).await;
    assert_eq!(status, 201, "{second}");
    let second = second["id"].as_i64().expect("id");
    let back = json!({"name": "first", "jobGroup": a.0, "graph": sub(second)});
    let (status, refused) = root.put(&format!("/api/v1/workflows/{first}"), back).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        msg(&refused).contains(&format!("node sub starts workflow {second} → workflow {first}"))
            && msg(&refused).contains("cycle"),
        "{refused}"
    );
    let itself = json!({"name": "first", "jobGroup": a.0, "graph": sub(first)});
    let (status, refused) = root.put(&format!("/api/v1/workflows/{first}"), itself).await;
    assert_eq!(status, 400, "a workflow that starts itself: {refused}");
    let (status, view) = root.get(&format!("/api/v1/workflows/{first}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["graph"]["nodes"][0]["jobId"], ja, "nothing stored: {view}");
    assert_eq!(view["graph"]["nodes"].as_array().map(Vec::len), Some(1), "nothing stored: {view}");

    // The child (owned by A) runs B's job: alice may save nothing that starts it, nor start or
    // rerun the parent root saved; carol may.
    let (_, child) = create(root.clone(), "child", a.0, only(jb)).await;
    let child = child["id"].as_i64().expect("id");
    let (status, refused) = create(alice.clone(), "alices", a.0, sub(child)).await;
    assert_eq!(status, 403, "{refused}");
    assert!(msg(&refused).contains(&format!("→ workflow {child}: node load runs job {jb}")), "{refused}");
    let (_, parent) = create(root.clone(), "parent", a.0, sub(child)).await;
    let parent = parent["id"].as_i64().expect("id");
    let start = format!("/api/v1/workflows/{parent}/instances");
    let (status, refused) = alice.post(&start, json!({"context": {"x": "INJECT"}})).await;
    assert_eq!(status, 403, "{refused}");
    let (status, page) = root.get(&start).await;
    assert_eq!((status, page["total"].as_i64()), (200, Some(0)), "nothing started: {page}");
    let (status, started) = carol.post(&start, json!({"context": {"day": "d1"}})).await;
    assert_eq!(status, 201, "{started}");
    let instance = started["instanceId"].as_i64().expect("instance");

    // B's job cannot be reached (no executor): the child fails, and the parent's node with it.
    let view = ended(&carol, instance).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let run = view["runs"].as_array().and_then(|r| r.iter().find(|r| r["node"] == "sub")).cloned();
    let run = run.expect("sub's run");
    let kid = run["childInstanceId"].as_i64().expect("the child instance");
    assert_eq!(run["message"], format!("child workflow instance {kid} failed (nodes: load)"), "{view}");
    let (status, child_view) = carol.get(&format!("/api/v1/workflow-instances/{kid}")).await;
    assert_eq!(status, 200, "{child_view}");
    assert_eq!(child_view["parentInstanceId"], instance, "{child_view}");
    assert_eq!(child_view["triggerType"], format!("WORKFLOW of {instance}"), "{child_view}");
    assert_eq!(child_view["context"], json!({"day": "d1"}), "the parent's context: {child_view}");
    let (status, refused) =
        alice.post(&format!("/api/v1/workflow-instances/{instance}/rerun-failed"), json!({})).await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) = alice.get(&format!("/api/v1/workflow-instances/{kid}")).await;
    assert_eq!(status, 403, "the child's outputs are not hers either: {refused}");
    let (status, rerun) =
        carol.post(&format!("/api/v1/workflow-instances/{instance}/rerun-failed"), json!({})).await;
    assert_eq!(status, 200, "{rerun}");
    let view = ended(&carol, instance).await;
    let runs: Vec<&Value> = view["runs"]
        .as_array()
        .map(|r| r.iter().filter(|r| r["node"] == "sub").collect())
        .unwrap_or_default();
    assert_eq!(runs.len(), 2, "{view}");
    assert_eq!(runs[1]["childInstanceId"], kid, "the same child ran again: {view}");
    let (_, child_view) = carol.get(&format!("/api/v1/workflow-instances/{kid}")).await;
    let loads = child_view["runs"].as_array().map(|r| r.iter().filter(|r| r["node"] == "load").count());
    assert_eq!(loads, Some(2), "the child's failed node ran again: {child_view}");

    // A started workflow stays while another starts it.
    let (status, refused) = root.delete(&format!("/api/v1/workflows/{child}")).await;
    assert_eq!(status, 409, "{refused}");
    assert!(msg(&refused).contains("started by node sub of workflow \"parent\""), "{refused}");
    env.admin.stop().await
}
