//! Dial-out executors against a live admin: a real `jobwheel-executor` (the library, in
//! process) in `--dial-out` mode runs, logs and is killed through its WebSocket, beside a
//! listening executor of the same group; and the door itself from the attacker's side — a wrong
//! token, another group's token or AppName, an address of another group, a second socket on a
//! held address, a dial address registered under another AppName — each refused, with nothing
//! attached that could take a trigger.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_admin::protocol::dial::{DIAL_ADDRESS_HEADER, DIAL_KEY_HEADER, DIAL_PATH};
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER};
use jobwheel_admin::store::{GroupId, JobId, LogFilter, LogRow, Page, Store};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::json;
use tokio::sync::oneshot;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;

use super::gen_c::set_token;
use super::mgmt::Env;
use crate::http::{TOKEN, eventually};

const APP: &str = "dial-app";

/// An executor of [`APP`] with `echo` (logs its parameter) and `hold` (runs until killed).
async fn executor(
    admin: &str,
    dir: &std::path::Path,
    dial_out: bool,
) -> anyhow::Result<(oneshot::Sender<()>, tokio::task::JoinHandle<anyhow::Result<()>>, String)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let name = if dial_out { "dial" } else { "listening" };
    let mut config = ExecutorConfig::new(APP, dir.join(name), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin.to_owned()];
    config.dial_out = dial_out;
    config.timings.registry_interval = Duration::from_secs(1);
    let mut handlers = Handlers::new();
    handlers.register("echo", |ctx: JobContext| async move {
        ctx.log(format!("echo {}", ctx.param()));
        Ok(())
    });
    handlers.register("hold", |ctx: JobContext| async move {
        ctx.log("holding until killed");
        ctx.stopped().await;
        Ok(())
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    Ok((stop, task, base))
}

pub(super) async fn logs(store: &dyn Store, job: JobId) -> Vec<LogRow> {
    let filter = LogFilter { job_id: Some(job), ..LogFilter::default() };
    store.page_logs(&filter, Page { offset: 0, limit: 50 }).await.expect("logs").rows
}

/// The group's registered addresses once both executors are in it: (dial, listening).
async fn both_registered(store: &dyn Store, group: GroupId) -> (String, String) {
    eventually("both executors in the group's address list", || async {
        let row = store.load_group(group).await.expect("group").expect("exists");
        let list = row.group.address_list.unwrap_or_default();
        let dial = list.split(',').find(|a| a.starts_with("dial://dial-app/"))?.to_owned();
        let listening = list.split(',').find(|a| a.starts_with("http://"))?.to_owned();
        Some((dial, listening))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dial_out_executor_runs_logs_and_is_killed_through_its_socket() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let dir = tempfile::tempdir()?;
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    let (stop_dial, dial_task, dial_base) = executor(&env.admin.base, dir.path(), true).await?;
    let (stop_listening, listening_task, _) = executor(&env.admin.base, dir.path(), false).await?;
    let (dial, listening) = both_registered(&*store, group).await;

    // The dial-out executor's port serves probes only: no executor API to send /run to.
    let http = reqwest::Client::new();
    let run = http
        .post(format!("{dial_base}/run"))
        .header(ACCESS_TOKEN_HEADER, TOKEN)
        .json(&json!({"jobId": 1, "executorHandler": "echo", "logId": 1, "glueType": "BEAN"}))
        .send()
        .await?;
    assert_eq!(run.status(), 404, "the dial-out executor's port took /run");
    assert_eq!(http.get(format!("{dial_base}/healthz")).send().await?.status(), 200);

    // A run addressed to it goes down its socket; its log is read back the same way.
    let echo = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "echo", "echo")).await?;
    let body = json!({"executorParam": "over the socket", "addressList": dial});
    let (status, reply) = root.post(&format!("/api/v1/jobs/{}/trigger", echo.0), body).await;
    assert_eq!(status, 200, "{reply}");
    let row = eventually("the dial-out run's result", || async {
        logs(&*store, echo).await.into_iter().find(|r| r.handle_code != 0)
    })
    .await;
    assert_eq!((row.trigger_code, row.handle_code), (200, 200), "{row:?}");
    assert_eq!(row.executor_address.as_deref(), Some(dial.as_str()));
    let (status, content) = root.get(&format!("/api/v1/logs/{}/content?fromLine=1", row.id.0)).await;
    assert_eq!(status, 200, "{content}");
    assert!(content["logContent"].as_str().unwrap_or_default().contains("echo over the socket"), "{content}");

    // Kill reaches a run on it.
    let hold = store.add_job(&jobwheel_tests::fixtures::bean_job(group, "hold", "hold")).await?;
    let body = json!({"executorParam": "", "addressList": dial});
    let (status, reply) = root.post(&format!("/api/v1/jobs/{}/trigger", hold.0), body).await;
    assert_eq!(status, 200, "{reply}");
    let running = eventually("the held run accepted", || async {
        logs(&*store, hold).await.into_iter().find(|r| r.trigger_code == 200)
    })
    .await;
    eventually("the held run logging", || async {
        let (_, content) = root.get(&format!("/api/v1/logs/{}/content?fromLine=1", running.id.0)).await;
        content["logContent"].as_str().filter(|c| c.contains("holding until killed")).map(|_| ())
    })
    .await;
    let (status, reply) = root.post(&format!("/api/v1/logs/{}/kill", running.id.0), json!({})).await;
    assert_eq!(status, 200, "{reply}");
    let killed = eventually("the killed run's result", || async {
        logs(&*store, hold).await.into_iter().find(|r| r.handle_code != 0)
    })
    .await;
    assert_eq!(killed.handle_code, 500, "{killed:?}");

    // Gone while still registered (as a process killed after its beat): a FAILOVER trigger
    // naming it first runs on the listening executor — the route leaves out a dial-out address
    // with no socket here, so it is not even tried.
    let _ = stop_dial.send(());
    dial_task.await??;
    let registry = json!({"registryGroup": "EXECUTOR", "registryKey": APP, "registryValue": dial});
    let (status, reply) = env.admin.post("/api/registry", &registry.to_string(), Some(TOKEN)).await;
    assert_eq!((status, &reply["code"]), (200, &json!(200)), "{reply}");
    let failover = jobwheel_tests::fixtures::bean_job(group, "echo", "echo");
    let failover = store
        .add_job(&jobwheel_admin::store::Job { executor_route_strategy: Some("FAILOVER".into()), ..failover })
        .await?;
    let body = json!({"executorParam": "after", "addressList": format!("{dial},{listening}")});
    let (status, reply) = root.post(&format!("/api/v1/jobs/{}/trigger", failover.0), body).await;
    assert_eq!(status, 200, "{reply}");
    let row = eventually("the failed-over run", || async {
        logs(&*store, failover).await.into_iter().find(|r| r.handle_code != 0)
    })
    .await;
    assert_eq!(
        (row.handle_code, row.executor_address.as_deref()),
        (200, Some(listening.as_str())),
        "{row:?}"
    );
    assert!(!row.trigger_msg.as_deref().unwrap_or_default().contains(&dial), "{row:?}");

    let _ = stop_listening.send(());
    listening_task.await??;
    env.admin.stop().await
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// The HTTP status the admin answers a dial with these headers (101 when it upgrades; the
/// socket is then kept in `held`, open, as an attacker would keep it).
async fn dial_status(admin: &str, headers: &[(&str, &str)], held: &mut Vec<Socket>) -> u16 {
    let url = format!("{}{DIAL_PATH}", admin.replacen("http://", "ws://", 1));
    let mut request = url.into_client_request().expect("request");
    for (name, value) in headers {
        let name = axum::http::HeaderName::from_bytes(name.as_bytes()).expect("header name");
        request.headers_mut().insert(name, value.parse().expect("header value"));
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, response)) => {
            held.push(socket);
            response.status().as_u16()
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(e) => panic!("dial failed: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dial_door_refuses_whoever_may_not_take_a_groups_triggers() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let _open = jobwheel_tests::fixtures::auto_group(&*store, "open-app").await?;
    let guarded = jobwheel_tests::fixtures::auto_group(&*store, "guarded-app").await?;
    let other = jobwheel_tests::fixtures::auto_group(&*store, "other-app").await?;
    let guarded_token = set_token(&root, guarded, Some("guarded-group-secret")).await;
    let other_token = set_token(&root, other, Some("other-group-secret")).await;
    let base = env.admin.base.clone();
    let mut held = Vec::new();
    let with = |token: &'static str, app: &'static str, address: &'static str| {
        vec![(ACCESS_TOKEN_HEADER, token), (APPNAME_HEADER, app), (DIAL_ADDRESS_HEADER, address)]
    };
    let guarded_token: &'static str = Box::leak(guarded_token.into_boxed_str());
    let other_token: &'static str = Box::leak(other_token.into_boxed_str());

    // Wrong or missing token.
    assert_eq!(
        dial_status(&base, &with("wrong-token-123", "open-app", "dial://open-app/a1"), &mut held).await,
        401
    );
    assert_eq!(
        dial_status(
            &base,
            &[(APPNAME_HEADER, "open-app"), (DIAL_ADDRESS_HEADER, "dial://open-app/a1")],
            &mut held
        )
        .await,
        401
    );
    // Another group's token, under the guarded AppName or its own with the guarded address.
    assert_eq!(
        dial_status(&base, &with(other_token, "guarded-app", "dial://guarded-app/a1"), &mut held).await,
        401
    );
    assert_eq!(
        dial_status(&base, &with(other_token, "other-app", "dial://guarded-app/a1"), &mut held).await,
        400
    );
    // The global token for a group that has its own.
    assert_eq!(
        dial_status(&base, &with(TOKEN, "guarded-app", "dial://guarded-app/a1"), &mut held).await,
        400
    );
    // No address, or one that is not a dial address.
    assert_eq!(
        dial_status(&base, &[(ACCESS_TOKEN_HEADER, TOKEN), (APPNAME_HEADER, "open-app")], &mut held).await,
        400
    );
    assert_eq!(dial_status(&base, &with(TOKEN, "open-app", "http://127.0.0.1:9/"), &mut held).await, 400);

    // The rightful holder connects with its process's key; a second socket claiming its
    // address is refused without that key or with another, and replaces the first with it
    // (the same process dialling again after a break the admin has not noticed).
    let holder = |key: &'static str| {
        let mut headers = with(guarded_token, "guarded-app", "dial://guarded-app/a1");
        if !key.is_empty() {
            headers.push((DIAL_KEY_HEADER, key));
        }
        headers
    };
    assert_eq!(dial_status(&base, &holder("process-key-1"), &mut held).await, 101);
    assert_eq!(dial_status(&base, &holder(""), &mut held).await, 409);
    assert_eq!(dial_status(&base, &holder("another-key-2"), &mut held).await, 409);
    assert_eq!(dial_status(&base, &holder("process-key-1"), &mut held).await, 101);
    assert_eq!(dial_status(&base, &with(TOKEN, "open-app", "dial://open-app/a1"), &mut held).await, 101);

    // A dial address registered under another AppName is refused.
    let registry = json!({"registryGroup": "EXECUTOR", "registryKey": "other-app", "registryValue": "dial://guarded-app/a1"});
    let reply = reqwest::Client::new()
        .post(format!("{base}/api/registry"))
        .header(ACCESS_TOKEN_HEADER, other_token)
        .header(APPNAME_HEADER, "other-app")
        .json(&registry)
        .send()
        .await?
        .json::<serde_json::Value>()
        .await?;
    assert_eq!(reply["code"], 500, "{reply}");
    let row = store.load_group(other).await?.expect("group");
    assert!(!row.group.address_list.unwrap_or_default().contains("dial://"), "nothing registered");
    drop(held);
    env.admin.stop().await
}
