//! A group's own access token (xxl-job 3.5): set and removed by administrators, shown once and
//! never again, recorded in the audit log without its value; accepted with its AppName on the
//! executor API for its own group only — where the global token is then refused.

use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use jobwheel_admin::store::{NewLog, NewWasmVersion};
use serde_json::{Value, json};

use super::Env;
use crate::http::gen_c::set_token;
use crate::http::{TOKEN, fail, success};

fn registry(app: &str) -> Value {
    json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": "http://127.0.0.1:9/"})
}

#[tokio::test]
async fn administrators_set_a_token_that_is_shown_once_and_audited_without_its_value() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("token-app").await;
    env.normal_user("alice", &[group]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let path = format!("/api/v1/groups/{}/access-token", group.0);

    let (status, reply) = alice.put(&path, json!({})).await;
    assert_eq!(status, 403, "normal users cannot: {reply}");
    let (status, reply) = root.put(&path, json!({"accessToken": "short"})).await;
    assert_eq!(status, 400, "{reply}");
    assert!(!reply.to_string().contains("\"short\""), "a refused token is not echoed: {reply}");
    let (status, reply) = root.put(&path, json!({"accessToken": "has space inside"})).await;
    assert_eq!(status, 400, "{reply}");
    assert_eq!(root.put("/api/v1/groups/999/access-token", json!({})).await.0, 404);

    let generated = set_token(&root, group, None).await;
    assert!(generated.len() >= 32, "a generated token is long: {generated}");
    let chosen = set_token(&root, group, Some("default_token_of_3.5")).await;
    assert_eq!(chosen, "default_token_of_3.5");
    for (path, who) in [(format!("/api/v1/groups/{}", group.0), &root), ("/api/v1/groups".to_owned(), &alice)]
    {
        let (status, reply) = who.get(&path).await;
        assert_eq!(status, 200, "{reply}");
        let text = reply.to_string();
        assert!(text.contains("\"accessTokenSet\":true"), "{text}");
        assert!(!text.contains(&generated) && !text.contains(&chosen), "never shown again: {text}");
    }
    let (_, audit) = root.get("/api/v1/audit?action=group.token").await;
    let entries = audit["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 2, "two changes recorded: {audit}");
    assert!(!audit.to_string().contains(&generated) && !audit.to_string().contains(&chosen), "{audit}");

    let (status, _) = root.delete(&path).await;
    assert_eq!(status, 204);
    let (_, reply) = root.get(&format!("/api/v1/groups/{}", group.0)).await;
    assert_eq!(reply["accessTokenSet"], false, "{reply}");
    let (_, audit) = root.get("/api/v1/audit?action=group.token.clear").await;
    assert_eq!(audit["total"], 1, "{audit}");
    env.admin.stop().await
}

#[tokio::test]
async fn the_executor_api_takes_a_group_token_with_its_appname_for_that_group_only() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let (own, other) = (env.group("own-app").await, env.group("other-app").await);
    let token = set_token(&root, own, Some("own-group-token")).await;

    // Gen C's messages when the AppName header is sent; Gen A/B's without it.
    let own_registry = registry("own-app");
    assert_eq!(
        env.admin.executor_call("registry", &own_registry, Some(&token), Some("own-app")).await,
        success()
    );
    // The global token does not act for a group with its own token (review M3): its holder
    // would receive that group's token, triggers and secrets.
    let reply = env.admin.executor_call("registry", &own_registry, Some(TOKEN), None).await;
    assert_eq!(reply["code"], 500, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("has its own access token"), "{reply}");
    let plain = env.group("plain-app").await;
    assert_eq!(
        env.admin.executor_call("registry", &registry("plain-app"), Some(TOKEN), None).await,
        success(),
        "the global token registers groups without a token of their own"
    );
    let invalid = fail("invalid request, accessToken or appname invalid.");
    let empty = fail("invalid request, accessToken or appname is empty.");
    assert_eq!(
        env.admin.executor_call("registry", &own_registry, Some("wrong-token"), Some("own-app")).await,
        invalid
    );
    assert_eq!(
        env.admin.executor_call("registry", &own_registry, Some(&token), Some("other-app")).await,
        invalid
    );
    assert_eq!(env.admin.executor_call("registry", &own_registry, Some(""), Some("own-app")).await, empty);
    assert_eq!(
        env.admin.executor_call("registry", &own_registry, Some(&token), None).await,
        fail("The access token is wrong.")
    );
    // A group's token cannot register executors of another group (they would get its triggers).
    let reply =
        env.admin.executor_call("registry", &registry("other-app"), Some(&token), Some("own-app")).await;
    assert_eq!(reply["code"], 500, "{reply}");
    assert!(
        reply["msg"].as_str().unwrap_or_default().contains("is not the AppName of the access token"),
        "{reply}"
    );
    let rows = env.store().alive_registry(chrono::Utc::now() - chrono::Duration::minutes(1)).await?;
    assert!(rows.iter().all(|r| r.registry_key == "own-app" || r.registry_key == "plain-app"), "{rows:?}");

    // Modules: a group's token downloads its own jobs' modules only.
    let bytes = b"\0asm\x01\0\0\0";
    let put = env.store().put_wasm_module(bytes, 0).await?;
    let own_job = env.store().add_job(&jobwheel_tests::fixtures::bean_job(own, "echo", "echo")).await?;
    env.store()
        .add_wasm_version(&NewWasmVersion {
            job_id: own_job,
            digest: put.digest.clone(),
            uploader: None,
            remark: None,
            created_at_ms: 0,
            candidate: false,
        })
        .await?;
    let download = |token: &'static str, app: Option<&'static str>, digest: String| {
        let mut request = env
            .admin
            .http
            .get(env.admin.url(&format!("/api/wasm/{digest}")))
            .header(ACCESS_TOKEN_HEADER, token);
        if let Some(app) = app {
            request = request.header(APPNAME_HEADER, app);
        }
        async move { request.send().await.expect("admin answers").status().as_u16() }
    };
    assert_eq!(download("own-group-token", Some("own-app"), put.digest.clone()).await, 200);
    assert_eq!(download(TOKEN, None, put.digest.clone()).await, 404, "only a token group uses it");
    assert_eq!(download("own-group-token", Some("other-app"), put.digest.clone()).await, 401);
    let other_token = set_token(&root, other, Some("other-group-token")).await;
    assert_eq!(other_token, "other-group-token");
    assert_eq!(
        download("other-group-token", Some("other-app"), put.digest.clone()).await,
        404,
        "not its group's"
    );

    // Callbacks: a group's token decides its own group's runs only.
    let own_log = env
        .store()
        .insert_log(&NewLog { job_group: own, job_id: own_job, trigger_time: chrono::Utc::now() })
        .await?;
    let other_job = env.store().add_job(&jobwheel_tests::fixtures::bean_job(other, "echo", "echo")).await?;
    let other_log = env
        .store()
        .insert_log(&NewLog { job_group: other, job_id: other_job, trigger_time: chrono::Utc::now() })
        .await?;
    let results = json!([
        {"logId": own_log.0, "logDateTim": 0, "handleCode": 200, "handleMsg": "own"},
        {"logId": other_log.0, "logDateTim": 0, "handleCode": 500, "handleMsg": "forged"},
    ]);
    let reply = env.admin.executor_call("callback", &results, Some(&token), Some("own-app")).await;
    assert_eq!(reply["code"], 200, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("ignored 1 result"), "{reply}");
    assert_eq!(env.store().load_log(own_log).await?.expect("log").handle_code, 200);
    assert_eq!(
        env.store().load_log(other_log).await?.expect("log").handle_code,
        0,
        "the other group's run is untouched"
    );
    let reply = env.admin.executor_call("callback", &results, Some(TOKEN), None).await;
    assert_eq!(reply["code"], 200, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("ignored 2 result"), "{reply}");
    assert_eq!(
        env.store().load_log(other_log).await?.expect("log").handle_code,
        0,
        "the global token reports for no group with its own token"
    );
    let plain_job = env.store().add_job(&jobwheel_tests::fixtures::bean_job(plain, "echo", "echo")).await?;
    let plain_log = env
        .store()
        .insert_log(&NewLog { job_group: plain, job_id: plain_job, trigger_time: chrono::Utc::now() })
        .await?;
    let results = json!([{"logId": plain_log.0, "logDateTim": 0, "handleCode": 200, "handleMsg": "plain"}]);
    assert_eq!(env.admin.executor_call("callback", &results, Some(TOKEN), None).await, success());
    assert_eq!(env.store().load_log(plain_log).await?.expect("log").handle_code, 200);

    // Removed: refused at once on this admin.
    assert_eq!(root.delete(&format!("/api/v1/groups/{}/access-token", own.0)).await.0, 204);
    assert_eq!(
        env.admin.executor_call("registry", &own_registry, Some(&token), Some("own-app")).await,
        invalid
    );
    env.admin.stop().await
}

/// Review L4, from the guesser's side: `GET /api/wasm/{digest}` answers 401 for a wrong token
/// and 404 for a right one with an unknown digest, so it is throttled like every other
/// executor-facing route. Of 200 wrong guesses from 127.0.0.1 at most 60 get anything but 429;
/// meanwhile the right token from 127.0.0.2 keeps its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_downloads_throttle_wrong_tokens_per_address() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("guessed-app").await;
    let token = set_token(&env.login("root").await, group, None).await;
    let url = env.admin.url(&format!("/api/wasm/{}", "0".repeat(64)));
    let guesser =
        reqwest::Client::builder().local_address("127.0.0.1".parse::<std::net::IpAddr>()?).build()?;
    let executor =
        reqwest::Client::builder().local_address("127.0.0.2".parse::<std::net::IpAddr>()?).build()?;
    let mut answered = 0;
    for guess in 0..200 {
        let response = guesser
            .get(&url)
            .header(ACCESS_TOKEN_HEADER, format!("guess-{guess:08}"))
            .header(APPNAME_HEADER, "guessed-app")
            .send()
            .await?;
        if response.status() != 429 {
            assert_eq!(response.status(), 401, "a wrong token");
            answered += 1;
        }
    }
    assert!(answered <= 60, "{answered} of 200 wrong guesses were answered");
    let right = executor
        .get(&url)
        .header(ACCESS_TOKEN_HEADER, &token)
        .header(APPNAME_HEADER, "guessed-app")
        .send()
        .await?;
    assert_eq!(right.status(), 404, "the right token from another address: no such module, not 429");
    let right_here = guesser
        .get(&url)
        .header(ACCESS_TOKEN_HEADER, &token)
        .header(APPNAME_HEADER, "guessed-app")
        .send()
        .await?;
    assert_eq!(right_here.status(), 429, "the guessing address waits out its window");
    env.admin.stop().await
}

/// Review N10, from the global token holder's side: a group whose stored token cannot be opened
/// (sealed under another key, or damaged) stays fenced off instead of falling back to the global
/// token, so nobody registers under its AppName with the global token; the Executors page says
/// why, and an administrator's new token opens it again.
#[tokio::test]
async fn a_group_token_that_cannot_be_opened_fences_the_group_off() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("fenced-app").await;
    let root = env.login("root").await;
    let sealed_elsewhere = jobwheel_admin::store::StoredToken::Sealed("not-sealed-with-this-key".to_owned());
    env.store().set_group_token(group, Some(&sealed_elsewhere), 0).await?;
    // The edge reads tokens as a snapshot; the group view refreshes it.
    let (status, view) = root.get(&format!("/api/v1/groups/{}", group.0)).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["accessTokenSet"], true, "{view}");
    assert!(view["accessTokenRefused"].as_str().unwrap_or_default().contains("cannot be opened"), "{view}");
    for app in [Some("fenced-app"), None] {
        let reply = env.admin.executor_call("registry", &registry("fenced-app"), Some(TOKEN), app).await;
        assert_eq!(reply["code"], 500, "the global token does not act for the group: {reply}");
    }
    let fresh = set_token(&root, group, None).await;
    let reply =
        env.admin.executor_call("registry", &registry("fenced-app"), Some(&fresh), Some("fenced-app")).await;
    assert_eq!(reply, success(), "a new token opens it again");
    env.admin.stop().await
}
