//! Approval of new capabilities (issue 62 item 4), from each caller's side: a module version or a
//! grant change that lets a job reach further waits for an administrator when a member makes it
//! or when it comes through an API token (`write`: what an agent holds); the same change by an
//! administrator signed in or with an `approve` token takes effect, and a change that reaches no
//! further never waits. Deciding is an administrator's, audited, and happens once.

use reqwest::Method;
use serde_json::{Value, json};

use super::jobs::form;
use super::{Client, Env, reply};

/// Reaches nothing outside: only `fd_write`.
const QUIET: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;
/// The same reach as [`QUIET`], another module.
const QUIET_TOO: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $w (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")) (func (export "other")))"#;
/// Reads the clock.
const CLOCK: &str = r#"(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $c (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;
/// Reads the clock and the environment.
const CLOCK_ENV: &str = r#"(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $c (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_get" (func $e (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;

async fn upload(client: &Client, job: i64, wat: &str) -> (u16, Value) {
    let request = client
        .request(Method::POST, &format!("/api/v1/jobs/{job}/wasm?remark=x"))
        .header("content-type", "application/wasm")
        .body(wat::parse_str(wat).expect("valid WAT"));
    reply(request.send().await.expect("admin answers")).await
}

async fn current(client: &Client, job: i64) -> Value {
    let (status, versions) = client.get(&format!("/api/v1/jobs/{job}/wasm")).await;
    assert_eq!(status, 200, "{versions}");
    versions["current"]["digest"].clone()
}

/// A token of `client`'s user with `scope`.
async fn token(client: &Client, scope: &str) -> (u16, Value) {
    client.post("/api/v1/tokens", json!({"name": format!("t-{scope}"), "scope": scope})).await
}

#[tokio::test]
async fn a_version_that_reaches_further_waits_for_an_administrator() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let other = env.group("app-two").await;
    env.normal_user("member", &[group]).await;
    env.normal_user("stranger", &[other]).await;
    let root = env.login("root").await;
    let member = env.login("member").await;
    let stranger = env.login("stranger").await;
    let mut wasm_form = form(group.0);
    wasm_form["glueType"] = json!("GLUE_WASM");
    wasm_form["executorHandler"] = json!(null);
    let (status, job) = member.post("/api/v1/jobs", wasm_form).await;
    assert_eq!(status, 201, "{job}");
    let job = job["id"].as_i64().expect("id");

    // A module that reaches nothing outside runs at once, even as the job's first.
    let (status, quiet) = upload(&member, job, QUIET).await;
    assert_eq!(status, 201, "{quiet}");
    assert_eq!(quiet["capabilities"]["imports"], json!([]), "{quiet}");
    assert_eq!(current(&member, job).await, quiet["digest"]);

    // The member's clock-reading version is held: a candidate, not what triggers run.
    let (status, held) = upload(&member, job, CLOCK).await;
    assert_eq!(status, 202, "{held}");
    assert_eq!(
        (held["candidate"].clone(), held["capabilities"]["imports"].clone()),
        (json!(true), json!(["clocks"]))
    );
    let approval = &held["approval"];
    assert_eq!(approval["status"], "pending", "{held}");
    assert_eq!(approval["widening"], json!(["imports clocks"]), "{held}");
    assert_eq!(approval["versionId"], held["id"], "{held}");
    assert_eq!(current(&member, job).await, quiet["digest"], "the held version does not run");
    let member_approval = approval["id"].as_i64().expect("approval id");

    // One that reaches no further than the current one does not wait.
    let (status, same) = upload(&member, job, QUIET_TOO).await;
    assert_eq!(status, 201, "{same}");
    assert_eq!(current(&member, job).await, same["digest"]);

    // Nor does activating a candidate that reaches no further; activating the held one waits.
    let rollback = format!("/api/v1/jobs/{job}/wasm/rollback");
    let (status, back) = member.post(&rollback, json!({"versionId": quiet["id"]})).await;
    assert_eq!(status, 201, "{back}");
    let (status, again) = member.post(&rollback, json!({"versionId": held["id"]})).await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["approval"]["widening"], json!(["imports clocks"]), "{again}");
    assert_eq!(current(&member, job).await, quiet["digest"]);

    // Through an administrator's `write` token — what an agent holds — it waits too, and such a
    // token can neither approve nor mint a token that could.
    let (status, write) = token(&root, "write").await;
    assert_eq!(status, 201, "{write}");
    let agent = root.with_token(write["token"].as_str().expect("token"));
    let (status, by_agent) = upload(&agent, job, CLOCK_ENV).await;
    assert_eq!(status, 202, "{by_agent}");
    assert_eq!(by_agent["approval"]["widening"], json!(["imports clocks", "imports environment"]));
    let agent_approval = by_agent["approval"]["id"].as_i64().expect("approval id");

    // Trying a held version on recorded runs hands it their variables and secrets: one that
    // newly reads the environment is tried only by an administrator until approved; one that
    // only reads the clock may be tried by whoever proposed it.
    let what_if = format!("/api/v1/jobs/{job}/wasm/what-if");
    let (status, table) = member.post(&what_if, json!({"version": held["id"]})).await;
    assert_eq!(status, 200, "{table}");
    let (status, refused) = agent.post(&what_if, json!({"version": by_agent["id"]})).await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused.to_string().contains("reads the environment"), "{refused}");
    let group_id =
        env.store().load_job(jobwheel_admin::store::JobId(i32::try_from(job)?)).await?.expect("job");
    let new_log = jobwheel_admin::store::NewLog {
        job_group: group_id.job.job_group,
        job_id: group_id.id,
        trigger_time: chrono::Utc::now(),
    };
    let log = env.store().insert_log(&new_log).await?;
    let (status, refused) =
        member.post(&format!("/api/v1/logs/{}/replay", log.0), json!({"version": by_agent["id"]})).await;
    assert_eq!(status, 403, "{refused}");
    let (status, table) = root.post(&what_if, json!({"version": by_agent["id"]})).await;
    assert_eq!(status, 200, "an administrator tries it: {table}");
    let (status, refused) =
        agent.post(&format!("/api/v1/approvals/{agent_approval}/approve"), json!({})).await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) = token(&agent, "approve").await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) = token(&member, "approve").await;
    assert_eq!(status, 403, "{refused}");
    let (status, refused) =
        member.post(&format!("/api/v1/approvals/{member_approval}/approve"), json!({})).await;
    assert_eq!(status, 403, "a member does not approve: {refused}");

    // The member sees the job's approvals; a user of another group sees none of them.
    let (status, listed) = member.get(&format!("/api/v1/approvals?jobId={job}&pending=true")).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed.as_array().map(Vec::len), Some(3), "{listed}");
    let name = root.get(&format!("/api/v1/jobs/{job}")).await.1["jobDesc"].clone();
    assert!(name.is_string() && listed[0]["jobName"] == name, "the list names the job: {listed}");
    let (_, listed) = stranger.get("/api/v1/approvals").await;
    assert_eq!(listed, json!([]));
    let (status, _) = stranger.get(&format!("/api/v1/approvals/{member_approval}")).await;
    assert_eq!(status, 404);

    // An administrator approves one (it becomes current) and refuses another; each is decided once.
    let (status, decided) = root
        .post(
            &format!("/api/v1/approvals/{member_approval}/approve"),
            json!({"note": "reads the clock, fine"}),
        )
        .await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!((decided["status"].clone(), decided["decidedBy"].clone()), (json!("approved"), json!("root")));
    assert_eq!(current(&member, job).await, held["digest"], "the approved version runs");
    let (status, twice) = root.post(&format!("/api/v1/approvals/{member_approval}/refuse"), json!({})).await;
    assert_eq!(status, 409, "{twice}");
    let (status, decided) = root.post(&format!("/api/v1/approvals/{agent_approval}/refuse"), json!({})).await;
    assert_eq!((status, decided["status"].clone()), (200, json!("refused")), "{decided}");
    assert_eq!(current(&member, job).await, held["digest"], "a refused version never runs");

    // An administrator's `approve` token (its deploy pipeline) widens at once, as a session does.
    let (status, approve) = token(&root, "approve").await;
    assert_eq!(status, 201, "{approve}");
    let pipeline = root.with_token(approve["token"].as_str().expect("token"));
    let (status, deployed) = upload(&pipeline, job, CLOCK_ENV).await;
    assert_eq!(status, 201, "{deployed}");
    assert_eq!(current(&member, job).await, deployed["digest"]);

    let (status, page) = root.get("/api/v1/audit?limit=500&action=approval.").await;
    assert_eq!(status, 200, "{page}");
    let actions: Vec<&str> =
        page["items"].as_array().into_iter().flatten().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions, ["approval.refuse", "approval.approve"], "{page}");
    Ok(())
}

#[tokio::test]
async fn a_grant_that_reaches_further_waits_too() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    env.normal_user("member", &[group]).await;
    let root = env.login("root").await;
    let member = env.login("member").await;
    let (status, job) = member.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(status, 201, "{job}");
    let grant = format!("/api/v1/jobs/{}/grant", job["id"]);

    // A new host is held, variables and all; nothing of the request is applied meanwhile.
    let (status, held) =
        member.put(&grant, json!({"httpAllow": ["api.example.com"], "variables": {"REGION": "eu"}})).await;
    assert_eq!(status, 202, "{held}");
    assert_eq!(
        (held["kind"].clone(), held["widening"].clone()),
        (json!("grant"), json!(["may reach api.example.com"]))
    );
    let (_, view) = member.get(&grant).await;
    assert_eq!((view["httpAllow"].clone(), view["variables"].clone()), (json!([]), json!({})), "{view}");

    // Approved, the request is applied as it was made, in the grant's history under both names.
    let id = held["id"].as_i64().expect("approval id");
    let (status, decided) = root.post(&format!("/api/v1/approvals/{id}/approve"), json!({})).await;
    assert_eq!(status, 200, "{decided}");
    let (_, view) = member.get(&grant).await;
    assert_eq!(view["httpAllow"], json!(["api.example.com"]), "{view}");
    assert_eq!(view["variables"], json!({"REGION": "eu"}), "{view}");
    let history = view["history"].to_string();
    assert!(history.contains("root (approving member's change"), "{history}");

    // A limit set where the executor's default applied may be above it: held. Raising one is
    // held; lowering one is not.
    let keep = |fuel: Option<i64>| json!({"httpAllow": ["api.example.com"], "variables": {"REGION": "eu"}, "fuel": fuel});
    let (status, limit) = member.put(&grant, keep(Some(5000))).await;
    assert_eq!(
        (status, limit["widening"].clone()),
        (202, json!(["fuel the executor's default → 5000"])),
        "{limit}"
    );
    let (status, _) = root.put(&grant, keep(Some(5000))).await;
    assert_eq!(status, 200);
    let (status, lower) = member.put(&grant, keep(Some(4000))).await;
    assert_eq!(status, 200, "{lower}");
    let (status, raise) = member.put(&grant, keep(Some(6000))).await;
    assert_eq!((status, raise["widening"].clone()), (202, json!(["fuel 4000 → 6000"])), "{raise}");

    // A held change that would now allow more than it listed (the grant changed since) is not
    // approved as it is: it names what more, and stays pending.
    let (status, stale) =
        member.put(&grant, json!({"httpAllow": ["api.example.com", "b.example.com"]})).await;
    assert_eq!(
        (status, stale["widening"].clone()),
        (202, json!(["may reach b.example.com", "fuel 4000 → the executor's default"]))
    );
    let (status, _) = root.put(&grant, keep(Some(100))).await;
    assert_eq!(status, 200);
    let (status, refused) = root.post(&format!("/api/v1/approvals/{}/approve", stale["id"]), json!({})).await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused.to_string().contains("fuel 100 → the executor's default"), "{refused}");
    let (_, still) = root.get(&format!("/api/v1/approvals/{}", stale["id"])).await;
    assert_eq!(still["status"], "pending", "{still}");
    Ok(())
}
