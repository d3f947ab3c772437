//! xxl-job 3.5's job OpenAPI, driven by a client written from upstream's document (§6.3 of the
//! 3.5 manual: `POST {admin}/api/addJob` … with `XXL-JOB-ACCESS-TOKEN` and `XXL-JOB-APPNAME`):
//! the whole job life cycle, upstream's reply shapes and messages, the caller's group as the
//! limit of what it may touch, the rate limit, and the audit log.

use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use jobwheel_admin::store::{GroupId, JobId, LogFilter, Page};
use serde_json::{Value, json};

use super::Env;
use crate::http::gen_c::set_token;
use crate::http::{TOKEN, eventually};

/// An xxl-job 3.5 job-API client: `AdminJobBiz` over HTTP, as `AdminJobBizTest` builds it.
struct JobApi<'a> {
    env: &'a Env,
    token: String,
    app: String,
}

impl JobApi<'_> {
    async fn call(&self, method: &str, body: Value) -> Value {
        let response = self
            .env
            .admin
            .http
            .post(self.env.admin.url(&format!("/api/{method}")))
            .header(ACCESS_TOKEN_HEADER, &self.token)
            .header(APPNAME_HEADER, &self.app)
            .json(&body)
            .send()
            .await
            .expect("admin answers");
        assert_eq!(response.status(), 200, "upstream answers with HTTP 200");
        response.json().await.expect("JSON")
    }
}

fn add_request(group: GroupId, name: &str) -> Value {
    json!({
        "jobGroup": group.0, "name": name, "author": "openapi", "alarmEmail": "",
        "scheduleType": "CRON", "scheduleConf": "0/20 * * * * ?", "misfireStrategy": "DO_NOTHING",
        "executorRouteStrategy": "FIRST", "executorHandler": "demoJobHandler", "executorParam": "",
        "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0, "executorFailRetryCount": 0,
        "glueType": "BEAN", "glueSource": "", "glueRemark": ""
    })
}

fn ok(reply: &Value) {
    assert_eq!((reply["code"].as_i64(), reply["msg"].as_str()), (Some(200), Some("Success")), "{reply}");
}

fn failed_with(reply: &Value, needle: &str) {
    assert_eq!(reply["code"], 500, "{reply}");
    assert!(reply["msg"].as_str().unwrap_or_default().contains(needle), "expected {needle:?}: {reply}");
}

#[tokio::test]
async fn a_3_5_script_manages_its_groups_jobs_from_add_to_remove() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let (own, other) = (env.group("script-app").await, env.group("other-app").await);
    let api = JobApi { env: &env, token: set_token(&root, own, None).await, app: "script-app".to_owned() };

    let added = api.call("addJob", add_request(own, "openapi test job")).await;
    ok(&added);
    let id: i32 = added["data"].as_str().expect("the new id as a string").parse()?;
    assert_eq!(added["content"], added["data"], "also under content, as upstream's document shows");
    let (_, job) = root.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(
        (job["jobDesc"].as_str(), job["scheduleConf"].as_str()),
        (Some("openapi test job"), Some("0/20 * * * * ?"))
    );

    let mut update = add_request(own, "openapi test job update");
    update["id"] = json!(id);
    update["scheduleConf"] = json!("0/10 * * * * ?");
    ok(&api.call("updateJob", update).await);
    let (_, job) = root.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(
        (job["jobDesc"].as_str(), job["scheduleConf"].as_str()),
        (Some("openapi test job update"), Some("0/10 * * * * ?"))
    );

    ok(&api.call("startJob", json!({"id": id})).await);
    assert_eq!(root.get(&format!("/api/v1/jobs/{id}")).await.1["triggerStatus"], 1);
    ok(&api.call("stopJob", json!({"id": id})).await);
    assert_eq!(root.get(&format!("/api/v1/jobs/{id}")).await.1["triggerStatus"], 0);

    // A manual trigger: its log row carries the parameter (the executor address is unreachable,
    // so the trigger itself fails, which is the executor's business, not the API's).
    ok(&api.call("triggerJob", json!({"id": id, "executorParam": "from-a-script", "addressList": ""})).await);
    let store = env.store();
    let row = eventually("the triggered run's log", || async {
        let filter = LogFilter { job_id: Some(JobId(id)), ..LogFilter::default() };
        let page = store.page_logs(&filter, Page { offset: 0, limit: 5 }).await.expect("logs");
        page.rows.into_iter().find(|r| r.trigger_code != 0)
    })
    .await;
    assert_eq!(row.executor_param.as_deref(), Some("from-a-script"));

    // Checks and messages are the management API's; the group is the caller's limit.
    let mut missing_author = add_request(own, "no author");
    missing_author["author"] = json!("");
    failed_with(&api.call("addJob", missing_author).await, "author: required");
    failed_with(
        &api.call("addJob", add_request(other, "elsewhere")).await,
        "no permission on executor group",
    );
    let foreign = env.store().add_job(&jobwheel_tests::fixtures::bean_job(other, "echo", "echo")).await?;
    for method in ["startJob", "stopJob", "removeJob", "triggerJob"] {
        failed_with(&api.call(method, json!({"id": foreign.0})).await, "no permission on executor group");
    }
    let mut foreign_update = add_request(own, "hijack");
    foreign_update["id"] = json!(foreign.0);
    failed_with(&api.call("updateJob", foreign_update).await, "no permission on executor group");
    assert!(env.store().load_job(foreign).await?.is_some(), "the other group's job is untouched");

    ok(&api.call("removeJob", json!({"id": id})).await);
    assert_eq!(root.get(&format!("/api/v1/jobs/{id}")).await.0, 404);
    ok(&api.call("removeJob", json!({"id": id})).await);

    // Every change is in the audit log under the caller's AppName.
    let (_, audit) = root.get("/api/v1/audit?username=openapi:script-app&limit=50").await;
    let mut actions: Vec<&str> =
        audit["items"].as_array().expect("items").iter().filter_map(|e| e["action"].as_str()).collect();
    actions.sort_unstable();
    assert_eq!(
        actions,
        ["job.create", "job.delete", "job.delete", "job.start", "job.stop", "job.trigger", "job.update"],
        "{audit}"
    );
    env.admin.stop().await
}

#[tokio::test]
async fn callers_without_their_groups_token_are_refused_with_upstreams_messages() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let group = env.group("guarded-app").await;
    let token = set_token(&root, group, None).await;
    let body = add_request(group, "never").to_string();
    let cases: [(Option<&str>, Option<&str>, &str); 5] = [
        (Some(&token), Some("someone-else"), "invalid request, accessToken or appname invalid."),
        (Some("wrong"), Some("guarded-app"), "invalid request, accessToken or appname invalid."),
        (None, Some("guarded-app"), "invalid request, accessToken or appname is empty."),
        (Some(&token), None, "The access token is wrong."),
        (Some(TOKEN), None, "not the global token"),
    ];
    for (token, app, needle) in cases {
        let mut request = env.admin.http.post(env.admin.url("/api/addJob")).body(body.clone());
        if let Some(token) = token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        if let Some(app) = app {
            request = request.header(APPNAME_HEADER, app);
        }
        let reply: Value = request.send().await?.json().await?;
        failed_with(&reply, needle);
    }
    let (_, jobs) = root.get(&format!("/api/v1/jobs?jobGroup={}", group.0)).await;
    assert_eq!(jobs["total"], 0, "nothing was created: {jobs}");
    env.admin.stop().await
}

#[tokio::test]
async fn beyond_a_groups_rate_limit_its_requests_are_answered_502() -> anyhow::Result<()> {
    let env = Env::start_configured(|config| config.openapi_rate_limit = 2).await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let group = env.group("busy-app").await;
    let api = JobApi { env: &env, token: set_token(&root, group, None).await, app: "busy-app".to_owned() };
    let other = env.group("quiet-app").await;
    let quiet = JobApi { env: &env, token: set_token(&root, other, None).await, app: "quiet-app".to_owned() };
    // 12 at once: 2 pass at once, about 2 more within the 1 s a request may wait, the rest not.
    // Another group's 2 calls at the same moment have a bucket of their own (review L4).
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..14 {
        let caller = if n < 12 { &api } else { &quiet };
        let request = env
            .admin
            .http
            .post(env.admin.url("/api/stopJob"))
            .header(ACCESS_TOKEN_HEADER, &caller.token)
            .header(APPNAME_HEADER, &caller.app)
            .json(&json!({"id": 424_242}));
        calls.spawn(async move {
            (n, request.send().await.expect("admin answers").json::<Value>().await.expect("JSON"))
        });
    }
    let mut replies = calls.join_all().await;
    replies.sort_by_key(|(n, _)| *n);
    let quiet_replies: Vec<Value> = replies.split_off(12).into_iter().map(|(_, r)| r).collect();
    assert!(
        quiet_replies.iter().all(|r| r["code"] != 502),
        "the other group is not limited: {quiet_replies:?}"
    );
    let replies: Vec<Value> = replies.into_iter().map(|(_, r)| r).collect();
    let limited = replies.iter().filter(|r| r["code"] == 502).count();
    assert!(limited >= 4, "{replies:?}");
    for reply in replies.iter().filter(|r| r["code"] == 502) {
        assert_eq!(reply["msg"], "Too many requests, please try again later.", "{reply}");
    }
    let passed = replies.iter().filter(|r| r["code"] != 502).count();
    assert!(passed >= 2, "the burst passes: {replies:?}");
    env.admin.stop().await
}
