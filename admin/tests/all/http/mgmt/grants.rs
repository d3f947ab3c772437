//! `/api/v1/jobs/{id}/grant`, `…/secrets/{name}` and `/api/v1/groups/{id}/variables`: what a
//! Wasm job may reach, its variables, and write-only secrets that no read returns.

use serde_json::json;

use super::Env;
use super::jobs::form;

#[tokio::test]
async fn policies_are_validated_secrets_are_write_only_and_changes_are_recorded() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let (status, job) = root.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let grant = format!("/api/v1/jobs/{id}/grant");

    let (status, empty) = root.get(&grant).await;
    assert_eq!(status, 200);
    assert_eq!(empty["httpAllow"], json!([]), "no policy, no network: {empty}");

    for (body, needle) in [
        (json!({"httpAllow": ["ftp://files.example.com"]}), "scheme `ftp`"),
        (json!({"httpAllow": ["https://api.example.com/v1"]}), "origin only"),
        (json!({"httpAllow": [], "fuel": 0}), "fuel must be at least 1"),
        (json!({"variables": {"JOBWHEEL_PARAM": "x"}}), "runtime's own"),
        (json!({"variables": {"1BAD": "x"}}), "not a variable name"),
        (json!({"surprise": true}), "unknown field"),
    ] {
        let (status, reply) = root.put(&grant, body.clone()).await;
        assert_eq!(status, 400, "{body}: {reply}");
        assert!(reply.to_string().contains(needle), "{body}: {reply}");
    }

    let body = json!({
        "httpAllow": ["https://api.example.com", "10.0.0.0/8"],
        "httpMaxRequests": 5,
        "fuel": 1000000,
        "variables": {"CHECK_URL": "https://api.example.com/health"}
    });
    let (status, saved) = root.put(&grant, body).await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["httpAllow"], json!(["https://api.example.com", "10.0.0.0/8"]));
    assert_eq!(saved["variables"]["CHECK_URL"], "https://api.example.com/health");

    let (status, _) = root
        .put(&format!("/api/v1/jobs/{id}/secrets/CHECK_TOKEN"), json!({"value": "tok-very-secret"}))
        .await;
    assert_eq!(status, 204);
    let (status, reply) =
        root.put(&format!("/api/v1/jobs/{id}/secrets/CHECK_URL"), json!({"value": "x"})).await;
    assert_eq!(status, 409, "a plain variable cannot silently become a secret: {reply}");
    let (status, view) = root.get(&grant).await;
    assert_eq!(status, 200);
    assert!(!view.to_string().contains("tok-very-secret"), "{view}");
    assert_eq!(
        view["secrets"],
        json!([{"name": "CHECK_TOKEN", "set": true, "updateTime": view["secrets"][0]["updateTime"]}])
    );
    let history = view["history"].as_array().expect("history");
    assert_eq!(history.len(), 2, "{view}");
    assert_eq!(history[0]["change"], "secret CHECK_TOKEN set", "newest first, no value");
    assert_eq!(history[0]["author"], "root");
    assert!(history[1]["change"].as_str().expect("change").contains("network policy"), "{view}");
    // The value is sealed at rest too.
    let stored = env
        .store()
        .list_variables(jobwheel_admin::store::VariableOwner::Job(jobwheel_admin::store::JobId(id as i32)))
        .await?;
    assert!(stored.iter().all(|row| !row.value.contains("tok-very-secret")), "{stored:?}");

    let (status, _) = root.delete(&format!("/api/v1/jobs/{id}/secrets/CHECK_TOKEN")).await;
    assert_eq!(status, 204);
    let (status, _) = root.delete(&format!("/api/v1/jobs/{id}/secrets/CHECK_TOKEN")).await;
    assert_eq!(status, 404);
    Ok(())
}

#[tokio::test]
async fn group_variables_are_for_administrators_and_readable_by_the_group() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    env.normal_user("member", &[group]).await;
    let root = env.login("root").await;
    let member = env.login("member").await;
    let path = format!("/api/v1/groups/{}/variables", group.0);
    let (status, saved) = root.put(&path, json!({"variables": {"REGION": "eu"}})).await;
    assert_eq!(status, 200, "{saved}");
    let (status, _) =
        root.put(&format!("/api/v1/groups/{}/secrets/API_KEY", group.0), json!({"value": "k-123"})).await;
    assert_eq!(status, 204);
    let (status, view) = member.get(&path).await;
    assert_eq!(status, 200);
    assert_eq!(view["variables"]["REGION"], "eu");
    assert_eq!(view["secrets"][0]["name"], "API_KEY");
    assert!(!view.to_string().contains("k-123"));
    let (status, _) = member.put(&path, json!({"variables": {}})).await;
    assert_eq!(status, 403, "members do not change what every job of the group sees");
    Ok(())
}

/// Review M7, from the member's side: a member of the group cannot put the administrators'
/// group secret into their own job's `uses` (then upload a module that prints it); an
/// administrator can, and the member may keep or drop it but not add it back.
#[tokio::test]
async fn only_an_administrator_gives_a_job_the_groups_secrets() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    env.normal_user("member", &[group]).await;
    let root = env.login("root").await;
    let member = env.login("member").await;
    let (status, _) =
        root.put(&format!("/api/v1/groups/{}/secrets/DB_PASSWORD", group.0), json!({"value": "pw-1"})).await;
    assert_eq!(status, 204);
    let (status, job) = member.post("/api/v1/jobs", form(group.0)).await;
    assert_eq!(status, 201, "{job}");
    let grant = format!("/api/v1/jobs/{}/grant", job["id"]);

    let (status, reply) = member.put(&grant, json!({"uses": ["DB_PASSWORD"]})).await;
    assert_eq!(status, 403, "{reply}");
    assert!(reply.to_string().contains("DB_PASSWORD"), "names what was refused: {reply}");
    let (status, reply) = member.put(&grant, json!({"uses": ["NOT_YET_A_SECRET"]})).await;
    assert_eq!(status, 403, "a name the administrators may fill later is theirs to grant too: {reply}");
    let (_, view) = member.get(&grant).await;
    assert_eq!(view["uses"], json!([]), "nothing stored: {view}");

    let (status, view) = root.put(&grant, json!({"uses": ["DB_PASSWORD"]})).await;
    assert_eq!(status, 200, "{view}");
    let (status, view) = member.put(&grant, json!({"uses": ["DB_PASSWORD"], "httpTimeoutMs": null})).await;
    assert_eq!(status, 200, "keeping what an administrator granted: {view}");
    let (status, view) = member.put(&grant, json!({"uses": []})).await;
    assert_eq!(status, 200, "dropping it: {view}");
    let (status, reply) = member.put(&grant, json!({"uses": ["DB_PASSWORD"]})).await;
    assert_eq!(status, 403, "and not adding it back: {reply}");
    Ok(())
}
