//! The admin as `jobwheel-admin` runs it — HTTP edge plus scheduling engine — with a real
//! executor: a CRON job fires on schedule, runs on the executor, and its result lands in the log.

use std::sync::Arc;

use chrono::Utc;
use jobwheel_admin::store::{Group, JobId, LogFilter, LogRow, Page};
use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use tokio::sync::oneshot;

use crate::http::executor::job;
use crate::http::{Admin, TOKEN, eventually, sqlite_url, test_config};

const APP: &str = "engine-e2e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_job_fires_on_a_real_executor_and_its_result_is_recorded() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let admin = Admin::start_engine(test_config(&sqlite_url(dir.path()))).await?;
    let store = Arc::clone(&admin.store);
    let group = store
        .add_group(&Group {
            app_name: APP.to_owned(),
            title: APP.to_owned(),
            address_type: 0,
            address_list: None,
            update_time: None,
        })
        .await?;
    let mut every_second = job(group);
    every_second.schedule_type = "CRON".to_owned();
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
