//! Job export and import between two admins: SQLite → PostgreSQL (→ MariaDB when only that is
//! set up; SQLite → SQLite without either). The dry run says what would happen and writes
//! nothing; the import recreates every job with its source, module, grant, variables and tags,
//! asks for the secrets again, brings the workflow over those jobs with its nodes mapped to
//! the new jobs, and a second import updates instead of duplicating.

use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

use super::jobs::form;
use super::{Client, Env, reply};
use jobwheel_tests::databases::{FreshDatabase, Server};

const MODULE_WAT: &str = r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "_start")))"#;

async fn send(client: &Client, method: Method, path: &str, body: Vec<u8>, kind: &str) -> (u16, Value) {
    let request = client.request(method, path).header("content-type", kind).body(body);
    reply(request.send().await.expect("admin answers")).await
}

/// Three jobs of `transfer-app` on the source: BEAN with tags, backoff and zone; a shell script;
/// a Wasm job with a module, a policy, a variable and a secret.
async fn source_jobs(root: &Client, group: i32) -> i64 {
    let mut bean = form(group);
    bean["jobDesc"] = json!("Nightly report");
    bean["tags"] = json!(["etl", "nightly"]);
    bean["retryBackoff"] = json!(30);
    bean["timeZone"] = json!("Asia/Shanghai");
    assert_eq!(root.post("/api/v1/jobs", bean).await.0, 201);
    let mut shell = form(group);
    shell["jobDesc"] = json!("Clean temp");
    shell["glueType"] = json!("GLUE_SHELL");
    shell["glueSource"] = json!("#!/bin/sh\nrm -rf /tmp/jobwheel-*\n");
    assert_eq!(root.post("/api/v1/jobs", shell).await.0, 201);
    let mut wasm = form(group);
    wasm["jobDesc"] = json!("Fetch prices");
    wasm["glueType"] = json!("GLUE_WASM");
    wasm["executorHandler"] = json!(null);
    let (status, job) = root.post("/api/v1/jobs", wasm).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let module = wat::parse_str(MODULE_WAT).expect("WAT");
    let (status, _) =
        send(root, Method::POST, &format!("/api/v1/jobs/{id}/wasm"), module, "application/wasm").await;
    assert_eq!(status, 201);
    let grant =
        json!({"httpAllow": ["https://api.example.com"], "fuel": 5_000_000, "variables": {"REGION": "eu"}});
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}/grant"), grant).await.0, 200);
    let secret = json!({"value": "s3cret-api-key"});
    assert_eq!(root.put(&format!("/api/v1/jobs/{id}/secrets/API_KEY"), secret).await.0, 204);
    id
}

async fn import(root: &Client, file: &Value, dry_run: bool) -> Value {
    let path = format!("/api/v1/jobs/import?dryRun={dry_run}");
    let (status, report) =
        send(root, Method::POST, &path, file.to_string().into_bytes(), "application/json").await;
    assert_eq!(status, 200, "{report}");
    report
}

#[tokio::test]
async fn jobs_move_from_sqlite_to_another_database_with_a_dry_run_first() -> anyhow::Result<()> {
    let source = Env::start().await?;
    source.admin_user("root").await;
    let root = source.login("root").await;
    let group = source.group("transfer-app").await;
    let wasm_id = source_jobs(&root, group.0).await;
    // A workflow over two of the jobs travels with them, its nodes mapped to the new jobs.
    let (_, listed) = root.get(&format!("/api/v1/jobs?jobGroup={}", group.0)).await;
    let first = listed["items"].as_array().expect("items").iter().find(|j| j["id"] != wasm_id).expect("job")
        ["id"]
        .clone();
    // With a switch, an approval, a condition on data and a declared output shape, which travel
    // as written (a switch and an approval name no job to map).
    let graph = json!({"nodes": [{"name": "prepare", "jobId": first, "outputSchema": {"type": "object"}},
                                 {"name": "route", "kind": "SWITCH"},
                                 {"name": "gate", "kind": "APPROVAL", "timeoutSecs": 60, "onDeadline": "APPROVE"},
                                 {"name": "fetch", "jobId": wasm_id},
                                 {"name": "each", "kind": "MAP", "jobId": wasm_id, "items": "/prepare/files", "parallelism": 5}],
                       "edges": [{"from": "prepare", "to": "route"},
                                 {"from": "route", "to": "gate", "if": "output.ok == true"},
                                 {"from": "route", "to": "fetch"},
                                 {"from": "fetch", "to": "each"}]});
    // Its calendar (one no job uses), window and alarm address travel too.
    let (status, rest) =
        root.post("/api/v1/calendars", json!({"name": "flow rest days", "weekdays": ["SUN"]})).await;
    assert_eq!(status, 201, "{rest}");
    let flow = json!({"name": "nightly flow", "jobGroup": group.0, "graph": graph, "neverOn": [rest["id"]],
                      "exclusionWindows": ["12:00-13:00"], "alarmEmail": "ops@example.com"});
    let (status, created) = root.post("/api/v1/workflows", flow).await;
    assert_eq!(status, 201, "{created}");
    // A workflow that starts it travels with it, its node mapped to the workflow made there.
    let outer = json!({"nodes": [{"name": "inner", "kind": "WORKFLOW", "workflowId": created["id"]}]});
    let (status, outer) = root
        .post("/api/v1/workflows", json!({"name": "outer flow", "jobGroup": group.0, "graph": outer}))
        .await;
    assert_eq!(status, 201, "{outer}");

    let (status, file) = root.get(&format!("/api/v1/jobs/export?jobGroup={}", group.0)).await;
    assert_eq!(status, 200, "{file}");
    let text = file.to_string();
    assert!(!text.contains("s3cret-api-key"), "no secret value in an export");
    assert_eq!(file["jobs"].as_array().map(Vec::len), Some(3), "{file}");
    assert_eq!(file["workflows"][0]["name"], "nightly flow", "{file}");
    assert_eq!(file["workflows"][0]["neverOn"], json!(["flow rest days"]), "{file}");
    assert!(
        file["calendars"].as_array().expect("calendars").iter().any(|c| c["name"] == "flow rest days"),
        "the workflow's calendar is in the file: {file}"
    );
    let wasm_entry = file["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["jobDesc"] == "Fetch prices")
        .expect("wasm job")
        .clone();
    assert_eq!(wasm_entry["grant"]["secrets"], json!(["API_KEY"]));
    let digest = wasm_entry["wasmDigest"].as_str().expect("digest").to_owned();
    assert!(file["modules"][&digest].is_string(), "the module's bytes travel once");
    let (_, by_id) = root.get(&format!("/api/v1/jobs/export?ids={wasm_id}")).await;
    assert_eq!(by_id["jobs"].as_array().map(Vec::len), Some(1));
    assert_eq!(by_id["workflows"], json!([]), "a workflow goes only with all of its jobs");

    // The other admin: PostgreSQL (or MariaDB) when the suite has one.
    let server = if std::env::var_os("JOBWHEEL_TEST_POSTGRES_URL").is_some() {
        Server::Postgres
    } else {
        Server::MySql
    };
    let fresh = FreshDatabase::create(server).await?;
    let target = match &fresh {
        Some(db) => Env::start_on(&db.url).await?,
        None => Env::start().await?,
    };
    target.admin_user("root").await;
    let there = target.login("root").await;

    let report = import(&there, &file, true).await;
    assert_eq!(report["applied"], false);
    let problems = report["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 5, "no group of that AppName yet (3 jobs, 2 workflows): {report}");
    assert!(
        problems[0].as_str().unwrap_or_default().contains("no executor group with AppName transfer-app"),
        "{report}"
    );
    let there_group = target.group("transfer-app").await;
    let report = import(&there, &file, true).await;
    assert_eq!(
        (report["applied"].as_bool(), report["problems"].as_array().map(Vec::len)),
        (Some(false), Some(0)),
        "{report}"
    );
    let actions: Vec<&str> =
        report["items"].as_array().expect("items").iter().filter_map(|i| i["action"].as_str()).collect();
    assert_eq!(actions, ["create", "create", "create"]);
    assert_eq!(report["workflows"][0]["action"], "create", "{report}");
    let (_, listed) = there.get(&format!("/api/v1/jobs?jobGroup={}", there_group.0)).await;
    assert_eq!(listed["total"], 0, "a dry run writes nothing");

    let report = import(&there, &file, false).await;
    assert_eq!(report["applied"], true, "{report}");
    let wasm_item = report["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["jobDesc"] == "Fetch prices")
        .expect("item");
    assert_eq!(wasm_item["secretsToSet"], json!(["API_KEY"]));
    let new_wasm = wasm_item["id"].as_i64().expect("created id");
    let (_, listed) = there.get(&format!("/api/v1/jobs?jobGroup={}", there_group.0)).await;
    assert_eq!(listed["total"], 3);
    let (_, bean) = there.get(&format!("/api/v1/jobs?jobGroup={}&tag=nightly", there_group.0)).await;
    let bean_id = bean["items"][0]["id"].as_i64().expect("the tagged job");
    let (_, bean) = there.get(&format!("/api/v1/jobs/{bean_id}")).await;
    assert_eq!(
        (bean["retryBackoff"].as_i64(), bean["timeZone"].as_str()),
        (Some(30), Some("Asia/Shanghai")),
        "{bean}"
    );
    assert_eq!(bean["tags"], json!(["etl", "nightly"]));
    let (_, glue) = there.get(&format!("/api/v1/jobs?jobGroup={}&q=clean", there_group.0)).await;
    let shell_id = glue["items"][0]["id"].as_i64().expect("the shell job");
    let (_, source_text) = there.get(&format!("/api/v1/jobs/{shell_id}/glue")).await;
    assert_eq!(source_text["glueSource"], "#!/bin/sh\nrm -rf /tmp/jobwheel-*\n", "{source_text}");
    let (_, versions) = there.get(&format!("/api/v1/jobs/{new_wasm}/wasm")).await;
    assert_eq!(versions["current"]["digest"], digest, "{versions}");
    let (_, grant) = there.get(&format!("/api/v1/jobs/{new_wasm}/grant")).await;
    assert_eq!(
        (grant["httpAllow"].clone(), grant["fuel"].clone()),
        (json!(["https://api.example.com"]), json!(5_000_000))
    );
    assert_eq!(grant["variables"], json!({"REGION": "eu"}));
    assert_eq!(grant["secrets"], json!([]), "secret values never travel");
    let (_, flows) = there.get(&format!("/api/v1/workflows?jobGroup={}", there_group.0)).await;
    assert_eq!(flows.as_array().map(Vec::len), Some(2), "{flows}");
    assert_eq!(
        (flows[1]["name"].clone(), flows[1]["graph"]["nodes"][0]["workflowId"].clone()),
        (json!("outer flow"), flows[0]["id"].clone()),
        "the sub-workflow node starts the workflow imported here: {flows}"
    );
    assert_eq!(
        flows[0]["graph"]["nodes"][3]["jobId"], new_wasm,
        "the node runs the job created here: {flows}"
    );
    let nodes = &flows[0]["graph"]["nodes"];
    assert_eq!((nodes[1]["kind"].clone(), nodes[1]["jobId"].clone()), (json!("SWITCH"), json!(0)), "{flows}");
    assert_eq!(
        (nodes[2]["kind"].clone(), nodes[2]["onDeadline"].clone()),
        (json!("APPROVAL"), json!("APPROVE"))
    );
    assert_eq!(nodes[0]["outputSchema"], json!({"type": "object"}), "{flows}");
    assert_eq!(
        (
            nodes[4]["kind"].clone(),
            nodes[4]["jobId"].clone(),
            nodes[4]["items"].clone(),
            nodes[4]["parallelism"].clone()
        ),
        (json!("MAP"), json!(new_wasm), json!("/prepare/files"), json!(5)),
        "the map node runs the job created here: {flows}"
    );
    assert_eq!(flows[0]["graph"]["edges"][1]["if"], "output.ok == true", "{flows}");
    assert_eq!(flows[0]["triggerStatus"], 0, "imported with its schedule off");
    let (_, calendars) = there.get("/api/v1/calendars").await;
    let rest_there = calendars.as_array().expect("calendars").iter().find(|c| c["name"] == "flow rest days");
    let rest_there = rest_there.expect("the workflow's calendar was created here")["id"].clone();
    assert_eq!(flows[0]["neverOn"], json!([rest_there]), "{flows}");
    assert_eq!(
        (flows[0]["exclusionWindows"].clone(), flows[0]["alarmEmail"].clone()),
        (json!(["12:00-13:00"]), json!("ops@example.com"))
    );

    // Again: updates, no duplicates; the secret set meanwhile is no longer asked for.
    assert_eq!(
        there.put(&format!("/api/v1/jobs/{new_wasm}/secrets/API_KEY"), json!({"value": "k"})).await.0,
        204
    );
    let report = import(&there, &file, false).await;
    let actions: Vec<&str> =
        report["items"].as_array().expect("items").iter().filter_map(|i| i["action"].as_str()).collect();
    assert_eq!(actions, ["update", "update", "update"], "{report}");
    assert_eq!(report["workflows"][0]["action"], "update", "{report}");
    assert!(
        report["items"]
            .as_array()
            .expect("items")
            .iter()
            .all(|i| i["secretsToSet"] == json!([]) && i["module"].is_null()),
        "{report}"
    );
    assert_eq!(there.get(&format!("/api/v1/jobs?jobGroup={}", there_group.0)).await.1["total"], 3);
    let (_, audit) = there.get("/api/v1/audit?action=job.&limit=50").await;
    assert!(audit["total"].as_i64().unwrap_or_default() >= 6, "each imported change is audited: {audit}");

    // A tampered module is refused and nothing is written.
    let mut tampered = file.clone();
    let other = wat::parse_str(
        MODULE_WAT.replace("(memory (export \"memory\") 1)", "(memory (export \"memory\") 2)"),
    )?;
    tampered["modules"][&digest] = json!(base64::engine::general_purpose::STANDARD.encode(other));
    let report = import(&there, &tampered, false).await;
    assert_eq!(report["applied"], false);
    assert!(report["problems"][0].as_str().unwrap_or_default().contains("its bytes have digest"), "{report}");

    source.admin.stop().await?;
    target.admin.stop().await?;
    if let Some(db) = fresh {
        db.drop_it().await?;
    }
    Ok(())
}

#[tokio::test]
async fn imports_are_checked_like_the_job_form_and_limited_to_permitted_groups() -> anyhow::Result<()> {
    let env = Env::start().await?;
    let (mine, theirs) = (env.group("mine-app").await, env.group("theirs-app").await);
    env.normal_user("alice", &[mine]).await;
    let alice = env.login("alice").await;
    let entry = |app: &str, desc: &str, author: &str| {
        json!({"appname": app, "jobDesc": desc, "author": author, "scheduleType": "CRON", "scheduleConf": "0 0 1 * * ?",
               "misfireStrategy": "DO_NOTHING", "executorRouteStrategy": "FIRST", "executorHandler": "demo",
               "executorBlockStrategy": "SERIAL_EXECUTION", "glueType": "BEAN"})
    };
    // A module on a BEAN entry: refused, as the upload endpoint refuses it (review L11).
    let mut with_module = entry("mine-app", "bean with a module", "ops");
    with_module["wasmDigest"] = json!("0".repeat(64));
    let file = json!({"format": "jobwheel-jobs", "version": 1, "jobs": [
        entry("mine-app", "fine", "ops"), entry("theirs-app", "not mine", "ops"), entry("mine-app", "no author", ""),
        with_module]});
    let report = import(&alice, &file, false).await;
    assert_eq!(report["applied"], false, "{report}");
    let problems: Vec<&str> =
        report["problems"].as_array().expect("problems").iter().filter_map(Value::as_str).collect();
    assert_eq!(problems.len(), 4, "{report}");
    assert!(problems[0].contains("no permission on executor group"), "{report}");
    assert!(problems[1].contains("author: required"), "{report}");
    assert!(problems[2].contains("is not in the file"), "{report}");
    assert!(problems[3].contains("goes only with a GLUE_WASM job"), "{report}");
    assert_eq!(
        alice.get(&format!("/api/v1/jobs?jobGroup={}", mine.0)).await.1["total"],
        0,
        "nothing written"
    );
    let (status, _) = alice.get(&format!("/api/v1/jobs/export?jobGroup={}", theirs.0)).await;
    assert_eq!(status, 403);
    let (status, reply) = send(
        &alice,
        Method::POST,
        "/api/v1/jobs/import",
        b"{\"format\":\"other\",\"version\":1,\"jobs\":[]}".to_vec(),
        "application/json",
    )
    .await;
    assert_eq!(status, 400, "{reply}");
    env.admin.stop().await
}
