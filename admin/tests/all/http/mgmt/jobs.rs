//! `/api/v1/jobs` and `/api/v1/schedule/next`: the form's validation (jobwheel's `timeZone` and
//! `retryBackoff` too), permissions, start/stop, trigger once, and the next-fire-time preview.

use jobwheel_admin::store::{JobId, LogFilter, Page};
use serde_json::{Value, json};

use super::Env;
use crate::http::eventually;

/// A valid form for `group`.
pub(crate) fn form(group: i32) -> Value {
    json!({
        "jobGroup": group, "jobDesc": "nightly report", "author": "ops",
        "scheduleType": "CRON", "scheduleConf": "0 0 2 * * ?",
        "glueType": "BEAN", "executorHandler": "demoJobHandler",
        "executorRouteStrategy": "ROUND", "misfireStrategy": "DO_NOTHING",
        "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0, "executorFailRetryCount": 1
    })
}

fn with(mut value: Value, key: &str, v: Value) -> Value {
    value[key] = v;
    value
}

#[tokio::test]
async fn a_job_is_created_read_listed_edited_and_deleted() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let created = with(with(form(group.0), "timeZone", json!("America/New_York")), "retryBackoff", json!(30));
    let (status, job) = root.post("/api/v1/jobs", created).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    assert_eq!(
        (job["triggerStatus"].as_i64(), job["timeZone"].as_str(), job["retryBackoff"].as_i64()),
        (Some(0), Some("America/New_York"), Some(30))
    );
    assert_eq!(root.get(&format!("/api/v1/jobs/{id}")).await.1["retryBackoff"], 30, "read back");
    assert_eq!(job["executorRouteStrategy"], "ROUND");
    assert!(job["addTime"].as_i64().is_some());

    let (status, listed) = root.get(&format!("/api/v1/jobs?jobGroup={}&jobDesc=night", group.0)).await;
    assert_eq!((status, listed["total"].as_u64()), (200, Some(1)), "{listed}");
    assert_eq!(root.get("/api/v1/jobs?jobDesc=nomatch").await.1["total"], 0);

    let edited = with(with(form(group.0), "jobDesc", json!("weekly report")), "timeZone", Value::Null);
    let (status, job) = root.put(&format!("/api/v1/jobs/{id}"), edited).await;
    assert_eq!(
        (status, job["jobDesc"].as_str(), job["timeZone"].as_str()),
        (200, Some("weekly report"), None)
    );
    assert_eq!(job["retryBackoff"], Value::Null, "absent: back to the admin's default");
    let (status, reply) =
        root.put(&format!("/api/v1/jobs/{id}"), with(form(group.0), "glueType", json!("GLUE_SHELL"))).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().starts_with("glueType"));

    assert_eq!(root.delete(&format!("/api/v1/jobs/{id}")).await.0, 204);
    assert_eq!(root.get(&format!("/api/v1/jobs/{id}")).await.0, 404);
    env.admin.stop().await
}

#[tokio::test]
async fn every_form_rule_is_a_400_naming_the_field() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let (_, other) = root.post("/api/v1/jobs", form(group.0)).await;
    let cases = [
        ("jobGroup", json!(999)),
        ("jobDesc", json!(" ")),
        ("jobDesc", json!("x".repeat(51))),
        ("author", json!("")),
        ("alarmEmail", json!("not-a-mail")),
        ("scheduleType", json!("HOURLY")),
        ("scheduleConf", json!("0 0 25 * * ?")),
        ("scheduleConf", json!(null)),
        ("timeZone", json!("Mars/Olympus")),
        ("glueType", json!("GLUE_RUBY")),
        ("executorHandler", json!(null)),
        ("executorParam", json!("p".repeat(2049))),
        ("executorRouteStrategy", json!("NEAREST")),
        ("misfireStrategy", json!("RETRY")),
        ("executorBlockStrategy", json!("PARALLEL")),
        ("executorTimeout", json!(1_000_000)),
        ("executorFailRetryCount", json!(-1)),
        ("retryBackoff", json!(-1)),
        ("retryBackoff", json!(86_401)),
        ("childJobId", json!("abc")),
        ("childJobId", json!("424242")),
    ];
    for (field, value) in cases {
        let (status, reply) = root.post("/api/v1/jobs", with(form(group.0), field, value.clone())).await;
        assert_eq!(status, 400, "{field}={value}: {reply}");
        let msg = reply["msg"].as_str().unwrap_or_default();
        assert!(msg.starts_with(field), "{field}={value}: {msg}");
    }
    let fix_rate = with(with(form(group.0), "scheduleType", json!("FIX_RATE")), "scheduleConf", json!("0"));
    assert_eq!(root.post("/api/v1/jobs", fix_rate).await.0, 400, "FIX_RATE needs ≥ 1 s");
    // A valid child works; a job is not its own child.
    let child = other["id"].as_i64().expect("id");
    let (status, parent) =
        root.post("/api/v1/jobs", with(form(group.0), "childJobId", json!(child.to_string()))).await;
    assert_eq!(status, 201, "{parent}");
    let parent_id = parent["id"].as_i64().expect("id");
    let selfish = with(form(group.0), "childJobId", json!(format!("{child},{parent_id}")));
    let (status, reply) = root.put(&format!("/api/v1/jobs/{parent_id}"), selfish).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains("own child"));
    env.admin.stop().await
}

#[tokio::test]
async fn normal_users_reach_only_their_groups_and_tokens_act_as_their_owner() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let mine = env.group("app-mine").await;
    let theirs = env.group("app-theirs").await;
    env.normal_user("alice", &[mine]).await;
    let root = env.login("root").await;
    let (_, foreign) = root.post("/api/v1/jobs", form(theirs.0)).await;
    let foreign_id = foreign["id"].as_i64().expect("id");
    let alice = env.login("alice").await;

    assert_eq!(env.anonymous().get(&format!("/api/v1/jobs?jobGroup={}", mine.0)).await.0, 401);
    let (status, own) = alice.post("/api/v1/jobs", form(mine.0)).await;
    assert_eq!(status, 201, "{own}");
    assert_eq!(alice.post("/api/v1/jobs", form(theirs.0)).await.0, 403);
    assert_eq!(alice.get(&format!("/api/v1/jobs?jobGroup={}", theirs.0)).await.0, 403);
    assert_eq!(alice.get("/api/v1/jobs").await.0, 400, "normal users name a group");
    for path in ["", "/start", "/stop", "/trigger"] {
        let url = format!("/api/v1/jobs/{foreign_id}{path}");
        let status =
            if path.is_empty() { alice.get(&url).await.0 } else { alice.post(&url, json!({})).await.0 };
        assert_eq!(status, 403, "{url}");
    }
    assert_eq!(alice.put(&format!("/api/v1/jobs/{foreign_id}"), form(mine.0)).await.0, 403);
    assert_eq!(alice.delete(&format!("/api/v1/jobs/{foreign_id}")).await.0, 403);
    // A foreign job as a child is refused too (upstream CVE-2024-42681).
    let sneaky = with(form(mine.0), "childJobId", json!(foreign_id.to_string()));
    assert_eq!(alice.post("/api/v1/jobs", sneaky).await.0, 403);

    // Alice's API token: same rights, no CSRF header needed.
    let token = jobwheel_admin::store::NewApiToken {
        user_id: env.store().find_user("alice").await?.expect("alice").id,
        name: "ci".to_owned(),
        token_hash: sha256_hex("alice-token"),
        created_ms: 0,
        scope: "write".to_owned(),
        expires_ms: None,
    };
    env.store().add_api_token(&token).await?;
    let bot = env.anonymous().with_token("alice-token");
    assert_eq!(bot.post("/api/v1/jobs", form(mine.0)).await.0, 201);
    assert_eq!(bot.get(&format!("/api/v1/jobs/{foreign_id}")).await.0, 403);
    assert_eq!(env.anonymous().with_token("wrong").get("/api/v1/jobs").await.0, 401);
    env.admin.stop().await
}

fn sha256_hex(s: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

#[tokio::test]
async fn start_computes_the_first_fire_and_stop_clears_it() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let rate = with(with(form(group.0), "scheduleType", json!("FIX_RATE")), "scheduleConf", json!("3600"));
    let (_, job) = root.post("/api/v1/jobs", rate).await;
    let id = job["id"].as_i64().expect("id");
    let before = chrono::Utc::now().timestamp_millis();
    let (status, started) = root.post(&format!("/api/v1/jobs/{id}/start"), json!({})).await;
    assert_eq!(status, 200, "{started}");
    let next = started["triggerNextTime"].as_i64().expect("next");
    assert_eq!(started["triggerStatus"], 1);
    assert!(next >= before + 3_600_000 && next <= before + 3_607_000, "now + 5 s + 1 h: {next}");
    let (_, stopped) = root.post(&format!("/api/v1/jobs/{id}/stop"), json!({})).await;
    assert_eq!((stopped["triggerStatus"].as_i64(), stopped["triggerNextTime"].as_i64()), (Some(0), Some(0)));

    let none = with(with(form(group.0), "scheduleType", json!("NONE")), "scheduleConf", Value::Null);
    let (_, manual) = root.post("/api/v1/jobs", none).await;
    let (status, reply) = root.post(&format!("/api/v1/jobs/{}/start", manual["id"]), json!({})).await;
    assert_eq!(status, 400, "{reply}");
    env.admin.stop().await
}

#[tokio::test]
async fn trigger_once_records_a_log_with_the_given_param_and_addresses() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("app-one").await;
    let root = env.login("root").await;
    let (_, job) = root.post("/api/v1/jobs", form(group.0)).await;
    let id = job["id"].as_i64().expect("id");
    let body = json!({"executorParam": "once", "addressList": "http://127.0.0.1:9/"});
    let (status, reply) = root.post(&format!("/api/v1/jobs/{id}/trigger"), body).await;
    assert_eq!((status, reply["triggered"].as_bool()), (200, Some(true)), "{reply}");
    let bad = json!({"addressList": "ftp://x"});
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/trigger"), bad).await.0, 400);
    // Nothing listens on port 9: the trigger is recorded as failed, with the given param.
    let store = env.admin.store.clone();
    let log = eventually("the manual trigger's log row", || async {
        let filter = LogFilter { job_id: Some(JobId(i32::try_from(id).ok()?)), ..LogFilter::default() };
        let rows = store.page_logs(&filter, Page { offset: 0, limit: 10 }).await.ok()?.rows;
        rows.into_iter().find(|r| r.trigger_code != 0)
    })
    .await;
    assert_eq!(log.executor_param.as_deref(), Some("once"));
    assert_eq!(log.executor_address.as_deref(), Some("http://127.0.0.1:9/"));
    assert_eq!(log.trigger_code, 500);
    env.admin.stop().await
}

#[tokio::test]
async fn the_next_five_fire_times_are_previewed_or_the_parse_error_shown() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let (status, next) = root.get("/api/v1/schedule/next?scheduleType=FIX_RATE&scheduleConf=60").await;
    assert_eq!(status, 200);
    let times: Vec<i64> = next["times"].as_array().expect("times").iter().filter_map(Value::as_i64).collect();
    assert_eq!(times.len(), 5);
    assert!(times.windows(2).all(|w| w[1] - w[0] == 60_000), "{times:?}");
    let (status, next) =
        root.get("/api/v1/schedule/next?scheduleType=CRON&scheduleConf=0%200%2012%20*%20*%20%3F&timeZone=Asia/Tokyo").await;
    assert_eq!(status, 200);
    for t in next["times"].as_array().expect("times") {
        let at = chrono::DateTime::from_timestamp_millis(t.as_i64().expect("ms")).expect("time");
        assert_eq!(at.format("%H:%M:%S").to_string(), "03:00:00", "noon in Tokyo is 03:00 UTC");
    }
    let (status, reply) = root.get("/api/v1/schedule/next?scheduleType=CRON&scheduleConf=nonsense").await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().starts_with("scheduleConf"));
    env.admin.stop().await
}

/// The retry backoff's four fields: read back, exported, kept by an edit that names them, each
/// rule a 400 naming its field, and ignored without `retryBackoff` (the admin's default).
#[tokio::test]
async fn retry_backoff_fields_round_trip_and_are_checked() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("retry-app").await;
    let root = env.login("root").await;
    let retry = json!({"retryBackoff": 10, "retryBackoffStrategy": "exponential", "retryBackoffMax": 300, "retryJitter": 20});
    let mut body = form(group.0);
    for (key, value) in retry.as_object().expect("object") {
        body[key] = value.clone();
    }
    let (status, job) = root.post("/api/v1/jobs", body.clone()).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let read = root.get(&format!("/api/v1/jobs/{id}")).await.1;
    let stored = json!({
        "retryBackoff": 10, "retryBackoffStrategy": "EXPONENTIAL", "retryBackoffMax": 300, "retryJitter": 20
    });
    for (key, value) in stored.as_object().expect("object") {
        assert_eq!(&read[key], value, "{key}: {read}");
    }
    let (status, export) = root.get(&format!("/api/v1/jobs/export?jobGroup={}", group.0)).await;
    assert_eq!(status, 200, "{export}");
    assert_eq!(export["jobs"][0]["retryBackoffStrategy"], "EXPONENTIAL", "{export}");
    assert_eq!(export["jobs"][0]["retryBackoffMax"], 300, "{export}");

    // A fixed backoff keeps no ceiling of its own; without `retryBackoff` the rest is ignored.
    let fixed = with(with(form(group.0), "retryBackoff", json!(45)), "retryBackoffMax", json!(999));
    let (_, job) = root.put(&format!("/api/v1/jobs/{id}"), fixed).await;
    assert_eq!(
        (job["retryBackoffStrategy"].as_str(), job["retryBackoffMax"].as_i64()),
        (Some("FIXED"), Some(45))
    );
    let (_, job) =
        root.put(&format!("/api/v1/jobs/{id}"), with(form(group.0), "retryJitter", json!(500))).await;
    assert_eq!(
        (job["retryBackoff"].clone(), job["retryJitter"].clone()),
        (Value::Null, Value::Null),
        "{job}"
    );

    for (field, value) in [
        ("retryBackoffStrategy", json!("LINEAR")),
        ("retryBackoffMax", json!(5)),
        ("retryBackoffMax", json!(86_401)),
        ("retryJitter", json!(101)),
        ("retryJitter", json!(-1)),
    ] {
        let (status, reply) = root.post("/api/v1/jobs", with(body.clone(), field, value.clone())).await;
        assert_eq!(status, 400, "{field}={value}: {reply}");
        assert!(reply["msg"].as_str().unwrap_or_default().starts_with(field), "{field}={value}: {reply}");
    }
    env.admin.stop().await
}
