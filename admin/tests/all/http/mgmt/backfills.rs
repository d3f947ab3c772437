//! Backfills through the management API of a real admin with its engine, from the lesser
//! user's side: requests checked with the field at fault (both or neither target, a reversed
//! range, a future end, parallelism, `existing`, a schedule without past times, a range past the
//! limit or holding no time); alice, who may use group A only, cannot backfill B's job, nor a
//! workflow of A that reaches B's job, nor read or cancel B's backfill (403); her own runs to the
//! end with its progress counted (every trigger fails: no executor); a cancel stops it once; a
//! `run` token may backfill, a `read` token may not; both writes are audited.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::Env;
use super::jobs::form;

const DAY: i64 = 86_400_000;

fn msg(reply: &Value) -> &str {
    reply["msg"].as_str().unwrap_or_default()
}

/// Waits until backfill `id` is no longer running; its view.
async fn over(client: &super::Client, id: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, view) = client.get(&format!("/api/v1/backfills/{id}")).await;
        assert_eq!(status, 200, "{view}");
        if view["status"] != "RUNNING" && view["running"] == 0 {
            return view;
        }
        assert!(Instant::now() < deadline, "the backfill did not end: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backfills_are_checked_held_to_their_groups_run_counted_and_cancelled() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let (a, b) = (env.group("fill-a").await, env.group("fill-b").await);
    env.normal_user("alice", &[a]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let (_, job_a) = alice.post("/api/v1/jobs", form(a.0)).await;
    let (_, job_b) = root.post("/api/v1/jobs", form(b.0)).await;
    let (ja, jb) = (job_a["id"].as_i64().expect("id"), job_b["id"].as_i64().expect("id"));
    let now = chrono::Utc::now().timestamp_millis();
    // Three whole past days: the daily 02:00 job has three times in it.
    let midnight = now - now.rem_euclid(DAY);
    let (from, to) = (midnight - 4 * DAY, midnight - DAY - 1);
    let post = |client: &super::Client, body: Value| {
        let client = client.clone();
        async move { client.post("/api/v1/backfills", body).await }
    };

    for (body, says) in [
        (json!({"jobId": ja, "workflowId": 1, "from": from, "to": to}), "either jobId or workflowId"),
        (json!({"from": from, "to": to}), "either jobId or workflowId"),
        (json!({"jobId": ja, "from": to, "to": from}), "from: must not be after to"),
        (json!({"jobId": ja, "from": from, "to": now + DAY}), "to must not be in the future"),
        (json!({"jobId": ja, "from": from, "to": to, "parallelism": 0}), "parallelism: 1 to 50"),
        (json!({"jobId": ja, "from": from, "to": to, "parallelism": 51}), "parallelism: 1 to 50"),
        (json!({"jobId": ja, "from": from, "to": to, "existing": "MAYBE"}), "existing: SKIP or RERUN"),
        (json!({"jobId": ja, "from": from + 3 * 3_600_000, "to": from + 4 * 3_600_000}), "no scheduled time"),
    ] {
        let (status, refused) = post(&alice, body.clone()).await;
        assert_eq!(status, 400, "{body}: {refused}");
        assert!(msg(&refused).contains(says), "{body}: {refused}");
    }
    let every_second = json!({"scheduleType": "CRON", "scheduleConf": "* * * * * ?"});
    let mut busy = form(a.0);
    busy.as_object_mut().expect("form").extend(every_second.as_object().cloned().expect("object"));
    let (_, busy) = alice.post("/api/v1/jobs", busy).await;
    let (status, refused) = post(&alice, json!({"jobId": busy["id"], "from": from, "to": to})).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("more than 100000 scheduled times"), "{refused}");
    let mut delayed = form(a.0);
    delayed["scheduleType"] = json!("FIX_DELAY");
    delayed["scheduleConf"] = json!("60");
    let (_, delayed) = alice.post("/api/v1/jobs", delayed).await;
    let (status, refused) = post(&alice, json!({"jobId": delayed["id"], "from": from, "to": to})).await;
    assert_eq!(status, 400, "{refused}");
    assert!(msg(&refused).contains("CRON or FIX_RATE"), "{refused}");

    // Another group's job, or a workflow of A that reaches it: refused, nothing made.
    let (status, refused) = post(&alice, json!({"jobId": jb, "from": from, "to": to})).await;
    assert_eq!(status, 403, "{refused}");
    let graph = json!({"nodes": [{"name": "load", "jobId": jb}]});
    let flow = json!({"name": "reaches-b", "jobGroup": a.0, "graph": graph,
                      "scheduleType": "CRON", "scheduleConf": "0 0 2 * * ?"});
    let (status, flow) = root.post("/api/v1/workflows", flow).await;
    assert_eq!(status, 201, "{flow}");
    let (status, refused) = post(&alice, json!({"workflowId": flow["id"], "from": from, "to": to})).await;
    assert_eq!(status, 403, "{refused}");
    assert!(msg(&refused).contains("node load"), "{refused}");
    let (status, theirs) = post(&root, json!({"jobId": jb, "from": from, "to": to})).await;
    assert_eq!(status, 201, "{theirs}");
    let path = format!("/api/v1/backfills/{}", theirs["id"]);
    assert_eq!(alice.get(&path).await.0, 403);
    assert_eq!(alice.post(&format!("{path}/cancel"), json!({})).await.0, 403);
    let (_, listed) = alice.get("/api/v1/backfills").await;
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "not B's: {listed}");

    // Alice's own: three times, two at a time; no executor, so each trigger fails.
    let (status, mine) = post(&alice, json!({"jobId": ja, "from": from, "to": to, "parallelism": 2})).await;
    assert_eq!(status, 201, "{mine}");
    assert_eq!((mine["total"].clone(), mine["status"].clone()), (json!(3), json!("RUNNING")), "{mine}");
    let id = mine["id"].as_i64().expect("id");
    let view = over(&alice, id).await;
    assert_eq!(
        (view["status"].clone(), view["handed"].clone(), view["failed"].clone()),
        (json!("DONE"), json!(3), json!(3)),
        "{view}"
    );
    let (_, logs) = alice.get(&format!("/api/v1/logs?jobGroup={}&jobId={ja}", a.0)).await;
    let rows = logs["data"].as_array().or_else(|| logs["items"].as_array()).cloned().unwrap_or_default();
    assert_eq!(rows.len(), 3, "one log row per time: {logs}");
    let (_, listed) = alice.get(&format!("/api/v1/backfills?jobId={ja}")).await;
    assert_eq!(listed[0]["id"], id, "{listed}");

    // A cancel: nothing more is handed out, and only once.
    let wide = json!({"jobId": ja, "from": midnight - 40 * DAY, "to": to, "existing": "RERUN"});
    let (status, wide) = post(&alice, wide).await;
    assert_eq!(status, 201, "{wide}");
    let cancel = format!("/api/v1/backfills/{}/cancel", wide["id"]);
    let (status, cancelled) = alice.post(&cancel, json!({})).await;
    assert_eq!((status, cancelled["status"].clone()), (200, json!("CANCELLED")), "{cancelled}");
    let view = over(&alice, wide["id"].as_i64().expect("id")).await;
    assert!(view["handed"].as_i64().unwrap_or(99) <= 1, "at most the one in flight: {view}");
    assert_eq!(alice.post(&cancel, json!({})).await.0, 409);

    // Tokens: `run` may backfill, `read` may not.
    let mut tokens = Vec::new();
    for scope in ["read", "run"] {
        let (status, made) =
            alice.post("/api/v1/tokens", json!({"name": format!("fill-{scope}"), "scope": scope})).await;
        assert_eq!(status, 201, "{made}");
        tokens.push(alice.with_token(made["token"].as_str().expect("token")));
    }
    let request = json!({"jobId": ja, "from": from, "to": to});
    assert_eq!(post(&tokens[0], request.clone()).await.0, 403, "a read token");
    assert_eq!(post(&tokens[1], request).await.0, 201, "a run token");

    let (_, audit) = root.get("/api/v1/audit?action=backfill.&limit=20").await;
    let actions: Vec<&str> = audit["rows"]
        .as_array()
        .or_else(|| audit["items"].as_array())
        .map(|r| r.iter().filter_map(|e| e["action"].as_str()).collect())
        .unwrap_or_default();
    assert!(actions.contains(&"backfill.create") && actions.contains(&"backfill.cancel"), "{audit}");
    env.admin.stop().await
}
