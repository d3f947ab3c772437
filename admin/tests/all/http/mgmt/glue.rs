//! `/api/v1/jobs/{id}/glue`: the GLUE IDE's source, remark rules and version history.

use serde_json::json;

use super::Env;
use super::jobs::form;

#[tokio::test]
async fn saving_a_script_keeps_history_and_a_rollback_is_a_save_of_an_old_version() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let mut shell = form(group.0);
    shell["glueType"] = json!("GLUE_SHELL");
    shell["executorHandler"] = json!(null);
    let (status, job) = root.post("/api/v1/jobs", shell).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let (status, glue) = root.get(&format!("/api/v1/jobs/{id}/glue")).await;
    assert_eq!(status, 200);
    assert!(
        glue["glueSource"].as_str().unwrap_or_default().contains("$1"),
        "template prints the param: {glue}"
    );
    assert_eq!(glue["history"].as_array().map(Vec::len), Some(0));

    for (n, source) in ["echo one", "echo two"].into_iter().enumerate() {
        let (status, saved) = root
            .put(
                &format!("/api/v1/jobs/{id}/glue"),
                json!({"glueSource": source, "glueRemark": format!("version {n}")}),
            )
            .await;
        assert_eq!((status, saved["glueSource"].as_str()), (200, Some(source)), "{saved}");
    }
    let (_, glue) = root.get(&format!("/api/v1/jobs/{id}/glue")).await;
    let history = glue["history"].as_array().expect("history");
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["glueSource"], "echo two", "newest first");
    let old = history[1]["glueSource"].as_str().expect("source");
    let (_, rolled) = root
        .put(&format!("/api/v1/jobs/{id}/glue"), json!({"glueSource": old, "glueRemark": "rollback"}))
        .await;
    assert_eq!(rolled["glueSource"], "echo one");
    assert_eq!(rolled["glueRemark"], "rollback");

    let (status, reply) =
        root.put(&format!("/api/v1/jobs/{id}/glue"), json!({"glueSource": "x", "glueRemark": "abc"})).await;
    assert_eq!(status, 400, "remark too short: {reply}");
    let (status, reply) = root
        .put(&format!("/api/v1/jobs/{id}/glue"), json!({"glueSource": "x", "glueRemark": "y".repeat(101)}))
        .await;
    assert_eq!(status, 400, "remark too long: {reply}");

    // A BEAN job has no source; another group's job is not yours.
    let (_, bean) = root.post("/api/v1/jobs", form(group.0)).await;
    let (status, reply) = root.get(&format!("/api/v1/jobs/{}/glue", bean["id"])).await;
    assert_eq!(status, 400, "{reply}");
    let other = env.group("app-other").await;
    env.normal_user("alice", &[other]).await;
    let alice = env.login("alice").await;
    assert_eq!(alice.get(&format!("/api/v1/jobs/{id}/glue")).await.0, 403);
    assert_eq!(
        alice
            .put(&format!("/api/v1/jobs/{id}/glue"), json!({"glueSource": "rm -rf /", "glueRemark": "evil"}))
            .await
            .0,
        403
    );
    env.admin.stop().await
}
