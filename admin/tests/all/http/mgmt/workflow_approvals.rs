//! Approval nodes through the management API of a real admin, from the lesser user's side:
//! an instance waits at its approval; alice, who may use the workflow's group but not the group
//! of a job after the approval, cannot decide it (403, still waiting); carol, who may use both,
//! approves with a comment, which the run's message and the audit log keep; a node that is not
//! waiting is refused (409); a rejection fails the node.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

/// Waits until `node` of `instance` is in `state`; the instance's view.
async fn node_in(client: &super::Client, instance: i64, node: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, view) = client.get(&format!("/api/v1/workflow-instances/{instance}")).await;
        assert_eq!(status, 200, "{view}");
        let runs = view["runs"].as_array().cloned().unwrap_or_default();
        if runs.iter().any(|r| r["node"] == node && r["status"] == state) {
            return view;
        }
        assert!(Instant::now() < deadline, "{node} never {state}: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `instance` has ended (whichever way).
async fn instance_over(client: &super::Client, instance: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, view) = client.get(&format!("/api/v1/workflow-instances/{instance}")).await;
        assert_eq!(status, 200, "{view}");
        if view["endTime"].as_i64().unwrap_or(0) > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "instance {instance} never ended: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_decided_only_by_who_may_use_every_job_of_the_instance() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (a, b) = (env.group("appr-a").await, env.group("appr-b").await);
    env.normal_user("alice", &[a]).await;
    env.normal_user("carol", &[a, b]).await;
    let (root, alice, carol) = (env.login("root").await, env.login("alice").await, env.login("carol").await);
    let (_, job_b) = root.post("/api/v1/jobs", form(b.0)).await;
    let jb = job_b["id"].as_i64().expect("id");
    let graph = json!({
        "nodes": [{"name": "signoff", "kind": "APPROVAL", "timeoutSecs": 3600}, {"name": "load", "jobId": jb}],
        "edges": [{"from": "signoff", "to": "load"}]
    });
    let (status, created) =
        root.post("/api/v1/workflows", json!({"name": "gated", "jobGroup": a.0, "graph": graph})).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["graph"]["nodes"][0]["kind"], "APPROVAL", "{created}");
    let id = created["id"].as_i64().expect("id");
    let start = || async {
        let (status, started) = root.post(&format!("/api/v1/workflows/{id}/instances"), json!({})).await;
        assert_eq!(status, 201, "{started}");
        started["instanceId"].as_i64().expect("instance")
    };

    let instance = start().await;
    node_in(&root, instance, "signoff", "WAITING").await;
    let approve = format!("/api/v1/workflow-instances/{instance}/nodes/signoff/approve");
    let (status, refused) = alice.post(&approve, json!({"comment": "alice says yes"})).await;
    assert_eq!(status, 403, "alice may not use load's group: {refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("node load"), "{refused}");
    node_in(&root, instance, "signoff", "WAITING").await;
    let (status, refused) =
        carol.post(&format!("/api/v1/workflow-instances/{instance}/nodes/load/approve"), json!({})).await;
    assert_eq!(status, 409, "load is not waiting for approval: {refused}");
    let (status, view) = carol.post(&approve, json!({"comment": "numbers checked"})).await;
    assert_eq!(status, 200, "{view}");
    let runs = view["runs"].as_array().cloned().unwrap_or_default();
    let signoff = runs.iter().find(|r| r["node"] == "signoff").expect("signoff");
    assert_eq!(signoff["status"], "SUCCEEDED", "{view}");
    assert_eq!(signoff["message"], "approved by carol: numbers checked", "{view}");
    let (status, again) = carol.post(&approve, json!({})).await;
    assert_eq!(status, 409, "decided once: {again}");

    // The first instance runs `load` now (no executor: it fails) and then ends; a second start
    // before it ends would be skipped by the workflow's one-instance limit.
    instance_over(&root, instance).await;
    let second = start().await;
    node_in(&root, second, "signoff", "WAITING").await;
    let reject = format!("/api/v1/workflow-instances/{second}/nodes/signoff/reject");
    let (status, view) = carol.post(&reject, json!({"comment": "wrong totals"})).await;
    assert_eq!(status, 200, "{view}");
    let view = node_in(&root, second, "signoff", "FAILED").await;
    assert_eq!(view["status"], "FAILED", "a rejection fails the instance: {view}");

    let (_, audit) = root.get("/api/v1/audit?action=workflow.instance.&limit=50").await;
    let rows = audit["items"].as_array().cloned().unwrap_or_default();
    let approved =
        rows.iter().find(|r| r["action"] == "workflow.instance.approve" && r["username"] == "carol");
    let approved = approved.unwrap_or_else(|| panic!("carol's approval is audited: {audit}"));
    assert_eq!(approved["detail"], json!({"name": "signoff", "comment": "numbers checked"}), "{approved}");
    let rejected = rows.iter().find(|r| r["action"] == "workflow.instance.reject").expect("the rejection");
    assert_eq!(rejected["detail"], json!({"name": "signoff", "comment": "wrong totals"}), "{rejected}");
    Ok(())
}
