//! A manual trigger's `addressList`, from the attacker's side (security review H1): a user of
//! one group names an address of their own, or another group's executor, and the admin must
//! send nothing there — no `/run`, no access token, no secret, no GLUE source. The executor
//! client follows no redirect and keeps only a bounded excerpt of a reply that is not xxl-job's.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use jobwheel_admin::store::{Group, GroupId, JobId, LogFilter, LogRow, Page, Store};
use serde_json::json;
use tokio::sync::oneshot;

use super::Env;
use super::jobs::form;
use crate::http::eventually;
use crate::http::gen_c::set_token;

/// What a listener is asked to do with every request.
#[derive(Clone)]
enum Answer {
    /// `302 Location: <url>`.
    Redirect(String),
    /// `200` with this body (not an xxl-job envelope).
    Body(String),
}

/// A loopback HTTP server that records every request it gets (method, path, token header).
struct Listener {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
    _stop: oneshot::Sender<()>,
}

impl Listener {
    async fn start(answer: Answer) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = (Arc::clone(&seen), answer);
        let app = Router::new().fallback(record).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}/", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(async { drop(stopped.await) }).await;
        });
        Self { base, seen, _stop: stop }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("lock").clone()
    }
}

async fn record(
    State((seen, answer)): State<(Arc<Mutex<Vec<String>>>, Answer)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let token = headers.get(ACCESS_TOKEN_HEADER).and_then(|v| v.to_str().ok()).unwrap_or("-").to_owned();
    seen.lock().expect("lock").push(format!("{method} {uri} token={token}"));
    match answer {
        Answer::Redirect(to) => (StatusCode::FOUND, [("location", to)]).into_response(),
        Answer::Body(body) => (StatusCode::OK, [("content-type", "text/html")], body).into_response(),
    }
}

/// A group whose executors are exactly `addresses` (manual registration), through the store.
async fn group_at(env: &Env, app_name: &str, addresses: &str) -> GroupId {
    env.store()
        .add_group(&Group {
            app_name: app_name.to_owned(),
            title: app_name.to_owned(),
            address_type: 1,
            address_list: Some(addresses.to_owned()),
            update_time: None,
        })
        .await
        .expect("group")
}

/// The first log row of `job` whose trigger has an outcome.
async fn triggered(store: &dyn Store, job: i64) -> LogRow {
    eventually("the trigger's outcome", || async {
        let filter = LogFilter { job_id: Some(JobId(i32::try_from(job).ok()?)), ..LogFilter::default() };
        let rows = store.page_logs(&filter, Page { offset: 0, limit: 10 }).await.ok()?.rows;
        rows.into_iter().find(|r| r.trigger_code != 0)
    })
    .await
}

#[tokio::test]
async fn a_trigger_naming_an_address_outside_the_jobs_group_is_refused_and_sends_nothing()
-> anyhow::Result<()> {
    let env = Env::start().await?;
    let attacker = Listener::start(Answer::Body("{\"code\":200}".to_owned())).await;
    let other_executor = Listener::start(Answer::Body("{\"code\":200}".to_owned())).await;
    let own = env.group("app-own").await;
    group_at(&env, "app-other", &other_executor.base).await;
    env.admin_user("root").await;
    env.normal_user("alice", &[own]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);
    let (status, job) = alice.post("/api/v1/jobs", form(own.0)).await;
    assert_eq!(status, 201, "{job}");
    let id = job["id"].as_i64().expect("id");
    let trigger = format!("/api/v1/jobs/{id}/trigger");

    // Every role, every foreign address: refused with a message that says why.
    for (who, client) in [("alice", &alice), ("root", &root)] {
        for address in
            [attacker.base.clone(), other_executor.base.clone(), format!("127.0.0.1:9,{}", attacker.base)]
        {
            let (status, reply) = client.post(&trigger, json!({"addressList": address})).await;
            assert_eq!(status, 400, "{who} → {address}: {reply}");
            let message = reply["msg"].as_str().unwrap_or_default().to_owned();
            assert!(
                message.contains("addressList") || message.contains("http://"),
                "{who} → {address}: {reply}"
            );
        }
    }
    let mixed = format!("http://127.0.0.1:9/,{}", attacker.base);
    assert_eq!(
        alice.post(&trigger, json!({"addressList": mixed})).await.0,
        400,
        "one stranger spoils the list"
    );

    // xxl-job 3.5's OpenAPI with the group's own token: refused the same way.
    let token = set_token(&root, own, None).await;
    let reply: serde_json::Value = env
        .admin
        .http
        .post(env.admin.url("/api/triggerJob"))
        .header(ACCESS_TOKEN_HEADER, &token)
        .header(APPNAME_HEADER, "app-own")
        .json(&json!({"id": id, "executorParam": "", "addressList": attacker.base}))
        .send()
        .await?
        .json()
        .await?;
    assert_ne!(reply["code"], 200, "{reply}");

    // The group's own executor (with or without the trailing slash) is still allowed, and its
    // outcome is stored: by then anything sent anywhere would have arrived.
    let (status, reply) = alice.post(&trigger, json!({"addressList": "http://127.0.0.1:9"})).await;
    assert_eq!(status, 200, "{reply}");
    let log = triggered(env.store(), id).await;
    assert_eq!(log.executor_address.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(attacker.seen(), Vec::<String>::new(), "the attacker's listener heard nothing");
    assert_eq!(other_executor.seen(), Vec::<String>::new(), "the other group's executor heard nothing");
    env.admin.stop().await
}

#[tokio::test]
async fn the_executor_client_follows_no_redirect_and_keeps_only_an_excerpt_of_a_foreign_reply()
-> anyhow::Result<()> {
    let env = Env::start().await?;
    let inner = Listener::start(Answer::Body("SECRET-TEXT from an internal page".to_owned())).await;
    let redirector = Listener::start(Answer::Redirect(format!("{}latest/user-data", inner.base))).await;
    let page = format!("<html>{}</html>", "internal ".repeat(100_000));
    let chatty = Listener::start(Answer::Body(page)).await;
    env.admin_user("root").await;
    let root = env.login("root").await;

    let redirected = group_at(&env, "app-redirect", &redirector.base).await;
    let (_, job) = root.post("/api/v1/jobs", form(redirected.0)).await;
    let id = job["id"].as_i64().expect("id");
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/trigger"), json!({})).await.0, 200);
    let log = triggered(env.store(), id).await;
    assert_eq!(log.trigger_code, 500, "a redirect is a failed trigger");
    let message = log.trigger_msg.unwrap_or_default();
    assert!(!message.contains("SECRET-TEXT"), "{message}");
    assert_eq!(redirector.seen().len(), 1, "one POST /run to the group's own address");
    assert_eq!(inner.seen(), Vec::<String>::new(), "the redirect target got no request and no token");

    let noisy = group_at(&env, "app-chatty", &chatty.base).await;
    let (_, job) = root.post("/api/v1/jobs", form(noisy.0)).await;
    let id = job["id"].as_i64().expect("id");
    assert_eq!(root.post(&format!("/api/v1/jobs/{id}/trigger"), json!({})).await.0, 200);
    let log = triggered(env.store(), id).await;
    let message = log.trigger_msg.unwrap_or_default();
    assert!(message.len() < 4_000, "a 900 kB page is not copied into triggerMsg ({} bytes)", message.len());
    assert!(message.contains("response larger than") || message.contains("bytes)"), "{message}");
    env.admin.stop().await
}
