//! Workflows through the management API of a real admin with its engine: checks that name the
//! node at fault, the owner group's permissions (another group's user is refused), a start
//! with a context, and an instance that ends FAILED because its executor is unreachable — the
//! failed node's child skipped, the context kept — then mark done, rerun from failure and a
//! whole rerun, with every write in the audit log.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

fn graph(first: i64, second: i64) -> Value {
    json!({
        "nodes": [{"name": "extract", "jobId": first}, {"name": "load", "jobId": second}],
        "edges": [{"from": "extract", "to": "load"}]
    })
}

#[tokio::test]
async fn workflows_are_checked_owned_by_their_group_and_run_to_an_end() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (mine, theirs) = (env.group("wf-mine").await, env.group("wf-theirs").await);
    env.normal_user("alice", &[mine]).await;
    env.normal_user("bob", &[theirs]).await;
    let (root, alice, bob) = (env.login("root").await, env.login("alice").await, env.login("bob").await);
    let mut jobs = Vec::new();
    for _ in 0..2 {
        let (status, job) = root.post("/api/v1/jobs", form(mine.0)).await;
        assert_eq!(status, 201, "{job}");
        jobs.push(job["id"].as_i64().expect("id"));
    }
    let body = |graph: Value| json!({"name": "nightly", "jobGroup": mine.0, "graph": graph});

    let mut cycle = graph(jobs[0], jobs[1]);
    cycle["edges"].as_array_mut().expect("edges").push(json!({"from": "load", "to": "extract"}));
    for (bad, needle) in [
        (cycle, "depends on itself: extract -> load -> extract"),
        (graph(jobs[0], 999_999), "node \"load\" runs job 999999, which does not exist"),
        (json!({"nodes": [{"name": "a b", "jobId": jobs[0]}]}), "node name \"a b\""),
        (json!({"nodes": [{"name": "a", "jobId": jobs[0]}], "edges": [{"from": "a", "to": "z"}]}), "\"z\""),
        (
            json!({"nodes": [{"name": "a", "jobId": jobs[0]}, {"name": "b", "jobId": jobs[1]}],
                   "edges": [{"from": "a", "to": "b", "if": "output.rows >\n  && secret"}]}),
            "edge \"a\" -> \"b\": its if does not check at line 2",
        ),
        (
            json!({"nodes": [{"name": "a", "jobId": jobs[0]}, {"name": "b", "jobId": jobs[1]}],
                   "edges": [{"from": "a", "to": "b", "if": "env.HOME == '/root'"}]}),
            "line 1, column 1: unknown name \"env\"",
        ),
        (
            json!({"nodes": [{"name": "a", "jobId": jobs[0]}, {"name": "b", "jobId": jobs[1]}],
                   "edges": [{"from": "a", "to": "b", "if": "output.rows > 0 && ['x'] == output.kinds"}]}),
            "column 26: compare a list or map with the data on the left",
        ),
        (
            json!({"nodes": [{"name": "s", "kind": "SWITCH", "jobId": jobs[0]}, {"name": "b", "jobId": jobs[1]}],
                   "edges": [{"from": "s", "to": "b"}]}),
            "switch node \"s\": a switch runs no job",
        ),
        (
            json!({"nodes": [{"name": "a", "jobId": jobs[0], "outputSchema": {"type": "objekt"}}]}),
            "node \"a\" outputSchema: not a valid JSON Schema at /type",
        ),
    ] {
        let (status, refused) = alice.post("/api/v1/workflows", body(bad)).await;
        assert_eq!(status, 400, "{refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains(needle), "{needle}: {refused}");
    }
    // A schema naming a remote document is refused, and nothing is fetched: the listener it
    // names hears no connection (the admin answered before this looks).
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let remote = format!("http://{}/schema.json", listener.local_addr()?);
    let fetching = json!({"nodes": [{"name": "a", "jobId": jobs[0], "inputSchema": {"$ref": remote}}]});
    let (status, refused) = alice.post("/api/v1/workflows", body(fetching)).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["msg"].as_str().unwrap_or_default().contains("inputSchema: not a valid JSON Schema"),
        "{refused}"
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the admin connected to the schema's remote $ref"
    );
    let mut typed = graph(jobs[0], jobs[1]);
    typed["inputSchema"] = json!({"type": "object", "required": ["day"]});
    let scheduled = json!({"name": "nightly", "jobGroup": mine.0, "scheduleType": "CRON", "scheduleConf": "0 0 1 * * ?", "graph": typed});
    let (status, refused) = alice.post("/api/v1/workflows", scheduled).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["msg"].as_str().unwrap_or_default().contains("a scheduled start's input is {}"),
        "{refused}"
    );
    let (status, _) = bob.post("/api/v1/workflows", body(graph(jobs[0], jobs[1]))).await;
    assert_eq!(status, 403, "bob may not use the owner group");
    let (status, created) = alice.post("/api/v1/workflows", body(graph(jobs[0], jobs[1]))).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");
    assert_eq!(created["graph"]["edges"][0]["when"], "SUCCESS", "the default condition is shown");
    let switched = json!({
        "nodes": [{"name": "a", "jobId": jobs[0]}, {"name": "s", "kind": "SWITCH"}, {"name": "b", "jobId": jobs[1]}],
        "edges": [{"from": "a", "to": "s"}, {"from": "s", "to": "b", "if": "output.rows > 0"}]
    });
    let (status, saved) = alice
        .post("/api/v1/workflows", json!({"name": "routed", "jobGroup": mine.0, "graph": switched}))
        .await;
    assert_eq!(status, 201, "{saved}");
    assert_eq!(saved["graph"]["nodes"][1]["kind"], "SWITCH", "{saved}");
    assert_eq!(saved["graph"]["edges"][1]["if"], "output.rows > 0", "{saved}");
    assert!(saved["graph"]["nodes"][0].get("kind").is_none(), "a job node's kind is left out: {saved}");
    let (status, _) = bob.get(&format!("/api/v1/workflows/{id}")).await;
    assert_eq!(status, 403);
    let (_, listed) = bob.get("/api/v1/workflows").await;
    assert_eq!(listed, json!([]), "bob sees none");
    let (status, refused) = alice.post(&format!("/api/v1/workflows/{id}/start"), json!({})).await;
    assert_eq!(status, 400, "NONE has no schedule to start: {refused}");

    let (status, refused) =
        alice.post(&format!("/api/v1/workflows/{id}/instances"), json!({"context": [1]})).await;
    assert_eq!(status, 400, "{refused}");
    let (status, started) = alice
        .post(&format!("/api/v1/workflows/{id}/instances"), json!({"context": {"day": "2031-01-01"}}))
        .await;
    assert_eq!((status, started["outcome"].clone()), (201, json!("STARTED")), "{started}");
    let instance = started["instanceId"].as_i64().expect("instance");

    // The executor at 127.0.0.1:9 refuses: extract fails at once, load is skipped.
    let deadline = Instant::now() + Duration::from_secs(20);
    let view = loop {
        let (status, view) = alice.get(&format!("/api/v1/workflow-instances/{instance}")).await;
        assert_eq!(status, 200, "{view}");
        if view["status"] != "RUNNING" {
            break view;
        }
        assert!(Instant::now() < deadline, "the instance did not end: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(view["context"], json!({"day": "2031-01-01"}));
    let runs = view["runs"].as_array().expect("runs");
    let states: Vec<(&str, &str)> =
        runs.iter().map(|r| (r["node"].as_str().unwrap_or(""), r["status"].as_str().unwrap_or(""))).collect();
    assert_eq!(states, vec![("extract", "FAILED"), ("load", "SKIPPED")], "{view}");
    assert!(runs[0]["logId"].as_i64().is_some(), "the failed trigger has its log row");
    let (status, _) = bob.get(&format!("/api/v1/workflow-instances/{instance}")).await;
    assert_eq!(status, 403);
    let (status, _) = alice.post(&format!("/api/v1/workflow-instances/{instance}/stop"), json!({})).await;
    assert_eq!(status, 409, "an instance that is over cannot be stopped");

    // Operations: bob is refused each; a node that did not fail cannot be marked done; the
    // failed root marked done with an output lets `load` run (and fail on the same executor).
    let ops = ["rerun-failed", "rerun", "nodes/extract/done"];
    for op in ops {
        let (status, _) = bob.post(&format!("/api/v1/workflow-instances/{instance}/{op}"), json!({})).await;
        assert_eq!(status, 403, "{op}");
    }
    let done = format!("/api/v1/workflow-instances/{instance}/nodes/load/done");
    let (status, refused) = alice.post(&done, json!({})).await;
    assert_eq!(status, 409, "load was skipped, not failed: {refused}");
    let (status, refused) =
        alice.post(&format!("/api/v1/workflow-instances/{instance}/nodes/nope/done"), json!({})).await;
    assert_eq!(status, 404, "{refused}");
    let done = format!("/api/v1/workflow-instances/{instance}/nodes/extract/done");
    let (status, view) = alice.post(&done, json!({"output": {"rows": 5}})).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["context"]["extract"], json!({"rows": 5}), "{view}");
    let view = ended(&alice, instance).await;
    let states: Vec<(&str, &str)> = view["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| (r["node"].as_str().unwrap_or(""), r["status"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        states,
        vec![("extract", "FAILED"), ("load", "REVOKED"), ("extract", "SUCCEEDED"), ("load", "FAILED")],
        "{view}"
    );
    // Rerun from failure: `load` runs again (and fails again); a whole rerun is a new instance.
    let (status, view) =
        alice.post(&format!("/api/v1/workflow-instances/{instance}/rerun-failed"), json!({})).await;
    assert_eq!(status, 200, "{view}");
    let view = ended(&alice, instance).await;
    assert_eq!(view["runs"].as_array().map(Vec::len), Some(5), "{view}");
    let (status, again) =
        alice.post(&format!("/api/v1/workflow-instances/{instance}/rerun"), json!({})).await;
    assert_eq!((status, again["outcome"].clone()), (201, json!("STARTED")), "{again}");
    let again = ended(&alice, again["instanceId"].as_i64().expect("new instance")).await;
    assert_eq!(again["context"], json!({"day": "2031-01-01"}), "the start input only: {again}");

    let (_, audit) = root.get("/api/v1/audit?action=workflow.&limit=50").await;
    let rows = audit["items"].as_array().cloned().unwrap_or_default();
    let actions: Vec<&str> = rows.iter().filter_map(|r| r["action"].as_str()).collect();
    for action in [
        "workflow.create",
        "workflow.run",
        "workflow.instance.mark_done",
        "workflow.instance.rerun_failed",
        "workflow.instance.rerun",
    ] {
        assert!(actions.contains(&action), "{action}: {audit}");
    }
    let marked = rows.iter().find(|r| r["action"] == "workflow.instance.mark_done").expect("mark done");
    assert_eq!(marked["detail"], json!({"name": "extract", "output": {"rows": 5}}), "{marked}");
    let (status, _) = alice.delete(&format!("/api/v1/workflows/{id}")).await;
    assert_eq!(status, 204);
    Ok(())
}

/// Waits until the instance is no longer running; its view.
pub(super) async fn ended(client: &super::Client, instance: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, view) = client.get(&format!("/api/v1/workflow-instances/{instance}")).await;
        assert_eq!(status, 200, "{view}");
        if view["status"] != "RUNNING" {
            return view;
        }
        assert!(Instant::now() < deadline, "the instance did not end: {view}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A workflow's calendars, windows and alarm address through the API: checked with the field
/// named, shown back, used for the first start, and a calendar in use cannot be deleted.
#[tokio::test]
async fn workflow_days_and_alarm_address_are_checked_shown_and_hold_their_calendars() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("wf-days").await;
    let root = env.login("root").await;
    let (status, job) = root.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(status, 201, "{job}");
    let job = job["id"].as_i64().expect("id");
    let (status, every_day) = root
        .post(
            "/api/v1/calendars",
            json!({"name": "every day", "weekdays": ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]}),
        )
        .await;
    assert_eq!(status, 201, "{every_day}");
    let calendar = every_day["id"].as_i64().expect("calendar id");
    let body = |extra: Value| {
        let mut body = json!({
            "name": "daily", "jobGroup": group.0, "scheduleType": "CRON", "scheduleConf": "0 0 9 * * ?", "timeZone": "UTC",
            "graph": {"nodes": [{"name": "only", "jobId": job}]}
        });
        body.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        body
    };
    for (extra, needle) in [
        (json!({"neverOn": [999_999]}), "neverOn: calendar 999999 does not exist"),
        (json!({"onlyOn": [calendar], "neverOn": [calendar]}), "is also in onlyOn"),
        (json!({"exclusionWindows": ["25:00-26:00"]}), "exclusionWindows:"),
        (json!({"alarmEmail": "ops@example.com, not-an-address"}), "alarmEmail: \"not-an-address\""),
        (json!({"neverOn": [calendar]}), "leave the schedule no start time"),
        (json!({"exclusionWindows": ["08:30-09:30"]}), "leave the schedule no start time"),
    ] {
        let (status, refused) = root.post("/api/v1/workflows", body(extra)).await;
        assert_eq!(status, 400, "{refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains(needle), "{needle}: {refused}");
    }
    let (status, created) = root
        .post(
            "/api/v1/workflows",
            body(json!({"onlyOn": [calendar], "exclusionWindows": ["10:00-11:00"], "alarmEmail": " ops@example.com "})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["onlyOn"], json!([calendar]));
    assert_eq!(created["neverOn"], json!([]));
    assert_eq!(created["exclusionWindows"], json!(["10:00-11:00"]));
    assert_eq!(created["alarmEmail"], "ops@example.com");
    let id = created["id"].as_i64().expect("id");
    let (status, started) = root.post(&format!("/api/v1/workflows/{id}/start"), json!({})).await;
    assert_eq!(status, 200, "{started}");
    let next = started["triggerNextTime"].as_i64().expect("next");
    assert_eq!(next % 86_400_000, 9 * 3_600_000, "09:00 UTC: {started}");
    let (status, refused) = root.delete(&format!("/api/v1/calendars/{calendar}")).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("workflow(s) \"daily\""), "{refused}");
    let (status, updated) = root.put(&format!("/api/v1/workflows/{id}"), body(json!({}))).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["onlyOn"], json!([]), "a form without onlyOn clears it");
    assert_eq!(updated["triggerStatus"], 1, "the schedule goes on");
    let (status, _) = root.delete(&format!("/api/v1/calendars/{calendar}")).await;
    assert_eq!(status, 204, "no longer in use");
    Ok(())
}

/// Review N2, from the lesser user's side: alice may use group A only; root built a workflow
/// owned by A whose second node runs B's job. Alice cannot start it (no instance is made),
/// turn its schedule on, read, stop or rerun its instances, or mark a node done. After root
/// takes B's node out, alice starts the new graph, but not a rerun of the old instance, whose
/// stored graph still holds B's node. A job that a workflow still runs cannot be deleted, nor a
/// group that owns workflows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_runs_nothing_of_a_group_its_starter_may_not_use() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (a, b) = (env.group("wf-a").await, env.group("wf-b").await);
    env.normal_user("alice", &[a]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let (_, job_a) = root.post("/api/v1/jobs", form(a.0)).await;
    let (_, job_b) = root.post("/api/v1/jobs", form(b.0)).await;
    let (ja, jb) = (job_a["id"].as_i64().expect("id"), job_b["id"].as_i64().expect("id"));
    let (status, created) = root
        .post("/api/v1/workflows", json!({"name": "cross", "jobGroup": a.0, "graph": graph(ja, jb)}))
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");

    let (status, refused) =
        alice.post(&format!("/api/v1/workflows/{id}/instances"), json!({"context": {"x": "INJECT"}})).await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("node load"), "names the node: {refused}");
    let (status, refused) = alice.post(&format!("/api/v1/workflows/{id}/start"), json!({})).await;
    assert_eq!(status, 403, "nor turn its schedule on: {refused}");
    let instances = |client: super::Client| async move {
        let (status, page) = client.get(&format!("/api/v1/workflows/{id}/instances")).await;
        assert_eq!(status, 200, "{page}");
        page["total"].as_i64().expect("total")
    };
    assert_eq!(instances(root.clone()).await, 0, "nothing was started");

    // An instance root started (extract fails on 127.0.0.1:9, so load is skipped).
    let (status, started) = root.post(&format!("/api/v1/workflows/{id}/instances"), json!({})).await;
    assert_eq!(status, 201, "{started}");
    let instance = started["instanceId"].as_i64().expect("instance");
    let view = ended(&root, instance).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let path = format!("/api/v1/workflow-instances/{instance}");
    assert_eq!(alice.get(&path).await.0, 403, "B's outputs are not hers to read");
    for op in ["rerun", "rerun-failed", "stop"] {
        let (status, refused) = alice.post(&format!("{path}/{op}"), json!({})).await;
        assert_eq!(status, 403, "{op}: {refused}");
    }
    let (status, refused) =
        alice.post(&format!("{path}/nodes/extract/done"), json!({"output": {"forged": 1}})).await;
    assert_eq!(status, 403, "no forged input for B's node: {refused}");

    // A job or group still in use is not deleted from under the workflow.
    let (status, refused) = root.delete(&format!("/api/v1/jobs/{jb}")).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("cross"), "{refused}");
    let c = env.group("wf-c").await;
    let only_a = json!({"nodes": [{"name": "extract", "jobId": ja}], "edges": []});
    let (status, owned) =
        root.post("/api/v1/workflows", json!({"name": "owned-by-c", "jobGroup": c.0, "graph": only_a})).await;
    assert_eq!(status, 201, "{owned}");
    let (status, refused) = root.delete(&format!("/api/v1/groups/{}", c.0)).await;
    assert_eq!(status, 409, "a group with no jobs but a workflow: {refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("workflow"), "{refused}");

    // Root takes B's node out: alice runs the new graph, not the old instance's.
    let one = json!({"nodes": [{"name": "extract", "jobId": ja}], "edges": []});
    let (status, reply) = root
        .put(&format!("/api/v1/workflows/{id}"), json!({"name": "cross", "jobGroup": a.0, "graph": one}))
        .await;
    assert_eq!(status, 200, "{reply}");
    let (status, started) = alice.post(&format!("/api/v1/workflows/{id}/instances"), json!({})).await;
    assert_eq!(status, 201, "{started}");
    ended(&alice, started["instanceId"].as_i64().expect("instance")).await;
    let (status, refused) = alice.post(&format!("{path}/rerun"), json!({})).await;
    assert_eq!(status, 403, "the old instance's graph still runs B's job: {refused}");
    assert_eq!(instances(root.clone()).await, 2, "root's instance and alice's of the new graph only");
    // Now unused, the job can go.
    assert_eq!(root.delete(&format!("/api/v1/jobs/{jb}")).await.0, 204);
    env.admin.stop().await
}
