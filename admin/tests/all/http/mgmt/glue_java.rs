//! GLUE(Java) (`GLUE_GROOVY`) managed by the admin and never run by it: a job is created with
//! upstream's own GLUE(Java) source, edited through the GLUE IDE's endpoints, exported and
//! imported, and triggered — and the `/run` its executor gets has exactly the keys and values the
//! request upstream's admin sent to xxl-job-core 2.4.2 had (golden data in
//! `admin/tests/fixtures/java-2.4.2/java-2.4.2.probe.txt`).

use std::path::PathBuf;

use jobwheel_admin::store::Group;
use serde_json::{Value, json};

use super::Env;
use super::jobs::form;
use super::recording_executor::RecordingExecutor;
use crate::http::eventually;

/// The captures of xxl-job-core 2.4.2 kept with the tests (`admin/tests/fixtures/java-2.4.2/`).
fn interop(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/java-2.4.2").join(name)
}

/// The body of the captured `/run` of a GLUE(Java) job.
fn captured_run() -> Value {
    let probe = std::fs::read_to_string(interop("java-2.4.2.probe.txt")).expect("the wire capture");
    let mut lines = probe.lines().skip_while(|line| *line != "### run GLUE_GROOVY");
    let body =
        lines.find_map(|line| line.strip_prefix(">>> {").map(|rest| format!("{{{rest}"))).expect("a body");
    serde_json::from_str(&body).expect("JSON")
}

#[tokio::test]
async fn a_glue_java_job_is_kept_edited_moved_and_sent_as_upstream_sends_it() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let java = RecordingExecutor::start().await;
    let group = env
        .store()
        .add_group(&Group {
            app_name: "java-app".to_owned(),
            title: "java-app".to_owned(),
            address_type: 1,
            address_list: Some(java.address.clone()),
            update_time: None,
        })
        .await?;
    let golden = captured_run();
    let source = std::fs::read_to_string(interop("groovy_hello.java"))?;
    assert_eq!(golden["glueSource"], source.as_str(), "the capture ran this source");

    // Offered, created with upstream's source, and given a Java template when none is sent.
    let (_, meta) = root.get("/api/v1/meta").await;
    assert!(
        meta["glueTypes"].as_array().expect("types").iter().any(|t| t["name"] == "GLUE_GROOVY"),
        "{meta}"
    );
    let mut job = form(group.0);
    job["jobDesc"] = json!("GLUE(Java) hello");
    job["glueType"] = json!("GLUE_GROOVY");
    job["executorHandler"] = golden["executorHandler"].clone();
    job["executorRouteStrategy"] = json!("FIRST");
    job["glueSource"] = json!(source);
    let (status, created) = root.post("/api/v1/jobs", job.clone()).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_i64().expect("id");
    let mut blank = job.clone();
    blank["jobDesc"] = json!("GLUE(Java) template");
    blank["glueSource"] = Value::Null;
    let (status, templated) = root.post("/api/v1/jobs", blank).await;
    assert_eq!(status, 201, "{templated}");
    let (_, template) = root.get(&format!("/api/v1/jobs/{}/glue", templated["id"])).await;
    assert!(
        template["glueSource"].as_str().unwrap_or_default().contains("extends IJobHandler"),
        "{template}"
    );

    // The GLUE IDE: the source, a new version with a remark, the old one in the history.
    let (status, glue) = root.get(&format!("/api/v1/jobs/{id}/glue")).await;
    assert_eq!(
        (status, glue["glueType"].as_str(), glue["glueSource"].as_str()),
        (200, Some("GLUE_GROOVY"), Some(source.as_str()))
    );
    let edited = source.replace("Hello World", "Hello again");
    let (status, saved) = root
        .put(
            &format!("/api/v1/jobs/{id}/glue"),
            json!({"glueSource": edited, "glueRemark": "second version"}),
        )
        .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["glueRemark"], "second version");
    assert!(
        saved["history"].as_array().expect("history").iter().any(|v| v["glueRemark"] == "second version"),
        "{saved}"
    );

    // Triggered like any GLUE job: the /run body is upstream's, key for key.
    let (status, reply) = root.post(&format!("/api/v1/jobs/{id}/trigger"), json!({})).await;
    assert_eq!(status, 200, "{reply}");
    let run = eventually("the /run of the GLUE(Java) job", || async {
        java.runs().first().map(|run| run.body.clone())
    })
    .await;
    let keys = |v: &Value| {
        let mut keys: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        keys.sort();
        keys
    };
    // Plus jobwheel's per-fire key and scheduled time (docs/engine.md, "The per-fire key"),
    // which every trigger carries and upstream's executors ignore, as they ignore `priority`.
    let mut expected = keys(&golden);
    expected.extend(["fireKey".to_owned(), "scheduledTime".to_owned()]);
    expected.sort();
    assert_eq!(keys(&run), expected, "{run}");
    assert_eq!(run["fireKey"], json!(format!("log:{}", run["logId"])), "a manual run is a fire of its own");
    for key in [
        "executorHandler",
        "executorParams",
        "executorBlockStrategy",
        "executorTimeout",
        "glueType",
        "broadcastIndex",
        "broadcastTotal",
    ] {
        assert_eq!(run[key], golden[key], "{key}: {run}");
    }
    assert_eq!((run["jobId"].as_i64(), run["glueSource"].as_str()), (Some(id), Some(edited.as_str())));

    // Exported and imported: the job comes back with its type and current source.
    let (status, bundle) = root.get(&format!("/api/v1/jobs/export?ids={id}")).await;
    assert_eq!(status, 200, "{bundle}");
    assert_eq!(
        (bundle["jobs"][0]["glueType"].as_str(), bundle["jobs"][0]["glueSource"].as_str()),
        (Some("GLUE_GROOVY"), Some(edited.as_str()))
    );
    assert_eq!(root.delete(&format!("/api/v1/jobs/{id}")).await.0, 204);
    let (status, report) = root.post("/api/v1/jobs/import?dryRun=false", bundle).await;
    assert_eq!((status, report["applied"].as_bool()), (200, Some(true)), "{report}");
    let imported = report["items"][0]["id"].as_i64().expect("the new job's id");
    let (_, glue) = root.get(&format!("/api/v1/jobs/{imported}/glue")).await;
    assert_eq!(
        (glue["glueType"].as_str(), glue["glueSource"].as_str()),
        (Some("GLUE_GROOVY"), Some(edited.as_str()))
    );
    env.admin.stop().await
}
