//! A real `jobwheel-executor` against the admin with the store-only core: it registers, its
//! group becomes routable, its callback updates the log row, and it deregisters on shutdown.

use std::sync::Arc;

use chrono::Utc;
use jobwheel_admin::http::AdminCore;

use crate::http::store_only_core::StoreOnlyCore;
use jobwheel_admin::protocol::ACCESS_TOKEN_HEADER;
use jobwheel_admin::store::{GroupId, Job, LogId, LogTriggerUpdate, NewLog};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use serde_json::json;
use tokio::sync::oneshot;

use crate::http::{Admin, TOKEN, eventually, sqlite_url, test_config};

const APP: &str = "e2e-executor";

/// A stopped BEAN job of `group` running the `echo` handler.
pub(crate) fn job(group: GroupId) -> Job {
    jobwheel_tests::fixtures::bean_job(group, "echo", "echo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_executor_registers_and_reports_through_the_store_only_core() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let admin = Admin::start_with(test_config(&sqlite_url(dir.path())), |store| {
        Arc::new(StoreOnlyCore::new(store)) as Arc<dyn AdminCore>
    })
    .await?;
    let store = Arc::clone(&admin.store);
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    let job_id = store.add_job(&job(group)).await?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let executor_url = format!("http://{}/", listener.local_addr()?);
    let mut config = ExecutorConfig::new(APP, dir.path().join("executor-logs"), Some(TOKEN.to_owned()));
    config.admin_addresses = vec![admin.base.clone()];
    let mut handlers = Handlers::new();
    handlers.register("echo", |ctx: JobContext| async move {
        ctx.log(format!("echo {}", ctx.param()));
        Ok(())
    });
    let (stop_executor, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(config, handlers, listener, async move {
        let _ = stopped.await;
    }));

    // Registration: the row, and the group's address list without waiting for a registry pass.
    let address_list =
        || async { store.load_group(group).await.expect("group").expect("exists").group.address_list };
    eventually("the executor's address in its group", || async {
        (address_list().await.as_deref() == Some(executor_url.as_str())).then_some(())
    })
    .await;

    // A trigger as the scheduler will send it: log row first, then /run.
    let trigger_time = Utc::now();
    let log_id = store.insert_log(&NewLog { job_group: group, job_id, trigger_time }).await?;
    store
        .update_log_trigger(&LogTriggerUpdate {
            log_id,
            trigger_time,
            trigger_code: 200,
            trigger_msg: Some("test trigger".to_owned()),
            executor_address: Some(executor_url.clone()),
            executor_handler: Some("echo".to_owned()),
            executor_param: Some("hi".to_owned()),
            executor_sharding_param: None,
            executor_fail_retry_count: 0,
        })
        .await?;
    let trigger = json!({
        "jobId": job_id.0, "executorHandler": "echo", "executorParams": "hi",
        "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0,
        "logId": log_id.0, "logDateTime": trigger_time.timestamp_millis(),
        "glueType": "BEAN", "glueSource": "", "glueUpdatetime": 0,
        "broadcastIndex": 0, "broadcastTotal": 1
    });
    let reply: serde_json::Value = admin
        .http
        .post(format!("{executor_url}run"))
        .header(ACCESS_TOKEN_HEADER, TOKEN)
        .json(&trigger)
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(reply["code"], 200, "{reply}");

    let handled = eventually("the callback in the log row", || async {
        let row = store.load_log(LogId(log_id.0)).await.expect("log").expect("exists");
        (row.handle_code != 0).then_some(row)
    })
    .await;
    assert_eq!(handled.handle_code, 200, "{handled:?}");
    assert!(handled.handle_time.is_some());

    // Graceful executor shutdown deregisters it, and the group empties at once.
    let _ = stop_executor.send(());
    executor.await??;
    let rows = store.alive_registry(Utc::now() - chrono::Duration::seconds(90)).await?;
    assert!(rows.iter().all(|r| r.registry_key != APP), "{rows:?}");
    assert_eq!(address_list().await, None);
    admin.stop().await
}
