//! xxl-job 3.5 (Gen C) executors beside 2.x/3.x ones on one admin. Three groups: one without
//! its own token (a jobwheel executor with the global token), one whose executor is a Gen C
//! executor written from upstream's document §6.2 (it accepts only `/trigger` with its token and
//! AppName, and calls back with `{"callbackList": …}`), and one whose jobwheel executor holds
//! the group's token. Every job runs and its result is stored.

use std::sync::Arc;

use jobwheel_admin::store::{GroupId, JobId, LogFilter, LogRow, Page, Store};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::json;
use tokio::sync::oneshot;

use super::gen_c_executor::{GenCExecutor, Seen};
use super::mgmt::{Client, Env};
use crate::http::executor::job;
use crate::http::{TOKEN, eventually};

/// Sets group `group`'s own token through the API (generated when `value` is `None`).
pub(crate) async fn set_token(root: &Client, group: GroupId, value: Option<&str>) -> String {
    let body = value.map_or_else(|| json!({}), |v| json!({ "accessToken": v }));
    let (status, reply) = root.put(&format!("/api/v1/groups/{}/access-token", group.0), body).await;
    assert_eq!(status, 200, "{reply}");
    reply["accessToken"].as_str().expect("the token, shown once").to_owned()
}

/// A jobwheel executor of `app` with `token`, whose `echo` handler logs its parameter.
async fn jobwheel_executor(
    admin: &str,
    app: &str,
    token: &str,
    dir: &std::path::Path,
) -> anyhow::Result<(oneshot::Sender<()>, tokio::task::JoinHandle<anyhow::Result<()>>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut config = ExecutorConfig::new(app, dir.join(app), Some(token.to_owned()));
    config.admin_addresses = vec![admin.to_owned()];
    let mut handlers = Handlers::new();
    handlers.register("echo", |ctx: JobContext| async move {
        ctx.log(format!("echo {}", ctx.param()));
        Ok(())
    });
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    Ok((stop, task))
}

async fn finished(store: &dyn Store, job: JobId) -> Option<LogRow> {
    let filter = LogFilter { job_id: Some(job), ..LogFilter::default() };
    let page = store.page_logs(&filter, Page { offset: 0, limit: 10 }).await.expect("logs");
    page.rows.into_iter().find(|r| r.handle_code != 0 && r.trigger_code != 0)
}

async fn routable(store: &dyn Store, group: GroupId) {
    eventually("the group's executor in its address list", || async {
        let row = store.load_group(group).await.expect("group").expect("exists");
        row.group.address_list.filter(|l| !l.is_empty()).map(|_| ())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gen_c_and_classic_executors_share_one_admin() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let root = env.login("root").await;
    let store = Arc::clone(&env.admin.store);
    let dir = tempfile::tempdir()?;
    let classic = jobwheel_tests::fixtures::auto_group(&*store, "classic-app").await?;
    let gen_c_group = jobwheel_tests::fixtures::auto_group(&*store, "genc-app").await?;
    let tokened = jobwheel_tests::fixtures::auto_group(&*store, "tokened-app").await?;
    let gen_c_token = set_token(&root, gen_c_group, None).await;
    let tokened_token = set_token(&root, tokened, Some("tokened-group-secret")).await;

    // The Gen C executor serves on a free port and registers the way 3.5 does.
    let (gen_c, registered) = GenCExecutor::start(&env.admin.base, "genc-app", &gen_c_token).await;
    assert_eq!(registered["code"], 200, "{registered}");

    let (stop_classic, classic_task) =
        jobwheel_executor(&env.admin.base, "classic-app", TOKEN, dir.path()).await?;
    let (stop_tokened, tokened_task) =
        jobwheel_executor(&env.admin.base, "tokened-app", &tokened_token, dir.path()).await?;
    for group in [classic, gen_c_group, tokened] {
        routable(&*store, group).await;
    }

    let mut jobs = Vec::new();
    for group in [classic, gen_c_group, tokened] {
        let id = store.add_job(&job(group)).await?;
        let (status, reply) =
            root.post(&format!("/api/v1/jobs/{}/trigger", id.0), json!({"executorParam": "p"})).await;
        assert_eq!(status, 200, "{reply}");
        jobs.push(id);
    }
    for id in &jobs {
        let row = eventually("the run's result", || finished(&*store, *id)).await;
        assert_eq!((row.trigger_code, row.handle_code), (200, 200), "{row:?}");
    }
    let gen_c_row = finished(&*store, jobs[1]).await.expect("Gen C run");
    assert_eq!(
        gen_c_row.handle_msg.as_deref(),
        Some("gen-c ran p"),
        "the Gen C callback (callbackList) was stored"
    );

    let seen = gen_c.seen();
    let triggers: Vec<&Seen> = seen.iter().filter(|s| s.path == "/trigger").collect();
    assert_eq!(triggers.len(), 1, "one trigger, sent to Gen C's /trigger: {seen:?}");
    assert!(
        seen.iter()
            .all(|s| s.token.as_deref() == Some(gen_c_token.as_str())
                && s.appname.as_deref() == Some("genc-app")),
        "every call to the Gen C executor carried its group's token and AppName: {seen:?}"
    );
    assert!(!seen.iter().any(|s| s.path == "/run"), "no Gen A/B /run to a Gen C executor: {seen:?}");

    let _ = (stop_classic.send(()), stop_tokened.send(()));
    classic_task.await??;
    tokened_task.await??;
    drop(gen_c);
    env.admin.stop().await
}
