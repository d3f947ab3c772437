//! The admin as `jobwheel-admin` runs it — HTTP edge plus scheduling engine: with a real
//! executor, a CRON job fires on schedule, runs on the executor, and its result lands in the
//! log; a callback is answered only once its result is stored.

use std::sync::Arc;

use anyhow::Context as _;
use chrono::Utc;
use jobwheel_admin::store::{JobId, LogFilter, LogRow, NewLog, Page};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use tokio::sync::oneshot;

use crate::http::executor::job;
use crate::http::{Admin, TOKEN, eventually, sqlite_url, success, test_config};

const APP: &str = "engine-e2e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_job_fires_on_a_real_executor_and_its_result_is_recorded() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let admin = Admin::start_engine(test_config(&sqlite_url(dir.path()))).await?;
    let store = Arc::clone(&admin.store);
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    let mut every_second = job(group);
    every_second.schedule_type = "CRON".into();
    every_second.schedule_conf = Some("* * * * * ?".to_owned());
    every_second.executor_param = Some("scheduled".to_owned());
    let job_id = store.add_job(&every_second).await?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut executor_config =
        ExecutorConfig::new(APP, dir.path().join("executor-logs"), Some(TOKEN.to_owned()));
    executor_config.admin_addresses = vec![admin.base.clone()];
    let mut handlers = Handlers::new();
    handlers.register("echo", |ctx: JobContext| async move {
        ctx.log(format!("echo {}", ctx.param()));
        Ok(())
    });
    let (stop_executor, stopped) = oneshot::channel::<()>();
    let executor = tokio::spawn(jobwheel_executor::run(executor_config, handlers, listener, async move {
        let _ = stopped.await;
    }));
    eventually("the executor in its group", || async {
        let group = store.load_group(group).await.expect("group").expect("exists").group;
        group.address_list.is_some().then_some(())
    })
    .await;

    // Start the job as the UI would: first fire 1 s from now.
    store.start_job(job_id, Utc::now().timestamp_millis() + 1000, Utc::now()).await?;
    let done = eventually("two scheduled runs recorded as successful", || async {
        let rows = successes(&*store, job_id).await;
        (rows.len() >= 2).then_some(rows)
    })
    .await;
    for row in &done {
        assert_eq!((row.trigger_code, row.handle_code), (200, 200), "{row:?}");
        assert_eq!(row.executor_param.as_deref(), Some("scheduled"));
        let msg = row.trigger_msg.as_deref().unwrap_or_default();
        assert!(msg.contains("Cron触发"), "a scheduled (CRON) trigger: {msg}");
    }

    let _ = stop_executor.send(());
    executor.await??;
    admin.stop().await
}

async fn successes(store: &dyn jobwheel_admin::store::Store, job_id: JobId) -> Vec<LogRow> {
    let filter = LogFilter { job_id: Some(job_id), ..LogFilter::default() };
    let page = store.page_logs(&filter, Page { offset: 0, limit: 100 }).await.expect("logs");
    // A fast handler's callback can land before the trigger path writes `trigger_code` (the log
    // row is inserted first, the trigger result recorded after `/run` answers), so a run counts
    // once both halves are in.
    page.rows.into_iter().filter(|r| r.handle_code == 200 && r.trigger_code != 0).collect()
}

/// The executor forgets a batch when it hears 200, so the admin answers only once the results
/// are committed, and a database error is answered with code 500 and the reason (the executor
/// then keeps the batch and resends it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_is_answered_once_stored_and_a_database_error_is_answered_with_500() -> anyhow::Result<()>
{
    let dir = tempfile::tempdir()?;
    let url = sqlite_url(dir.path());
    let admin = Admin::start_engine(test_config(&url)).await?;
    let store = Arc::clone(&admin.store);
    let group = jobwheel_tests::fixtures::auto_group(&*store, APP).await?;
    let job_id = store.add_job(&job(group)).await?;
    let log_id = store.insert_log(&NewLog { job_group: group, job_id, trigger_time: Utc::now() }).await?;
    let body = format!(r#"[{{"logId":{},"handleCode":200,"handleMsg":"done"}}]"#, log_id.0);

    // A second connection takes the log table away, as a broken database would.
    let db = sqlx::SqlitePool::connect(&url).await?;
    sqlx::query("ALTER TABLE xxl_job_log RENAME TO xxl_job_log_away").execute(&db).await?;
    let (status, reply) = admin.post("/api/callback", &body, Some(TOKEN)).await;
    assert_eq!(status, 200);
    assert_eq!(reply["code"], 500, "{reply}");
    let msg = reply["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("could not be stored") && msg.contains("send them again"), "{msg}");
    sqlx::query("ALTER TABLE xxl_job_log_away RENAME TO xxl_job_log").execute(&db).await?;
    assert_eq!(store.load_log(log_id).await?.context("log")?.handle_code, 0, "nothing stored");

    // The resend is stored before it is answered: the row is complete the moment 200 arrives.
    assert_eq!(admin.post("/api/callback", &body, Some(TOKEN)).await.1, success());
    let row = store.load_log(log_id).await?.context("log")?;
    assert_eq!((row.handle_code, row.handle_msg.as_deref()), (200, Some("done")));
    db.close().await;
    admin.stop().await
}
