//! Registry heartbeat and callbacks: admin order, context paths, token, spool and retry across
//! admin outages and executor restarts.

use std::time::Duration;

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{FakeAdmin, TOKEN, TestExecutor, test_config, trigger, wait_until, wait_until_async};

use crate::support::{SETTLE, rig};

fn quick() -> Handlers {
    let mut handlers = Handlers::new();
    handlers.register("quick", |ctx: JobContext| async move {
        ctx.log("done");
        Ok(())
    });
    handlers
}

/// Spool files (upstream's name; the journal's first-trip files are not counted).
fn spool_files(log_path: &std::path::Path) -> usize {
    std::fs::read_dir(log_path.join("callbacklogs"))
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("xxl-job-callback-") && name.ends_with(".log")
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test]
async fn registers_at_start_and_deregisters_on_graceful_stop() {
    let rig = rig(quick(), |c| c.app_name = "billing".into()).await;
    rig.admin.wait_for(SETTLE, "registry", |r| !r.registry.is_empty()).await;
    let registered = rig.admin.recorded().registry[0].clone();
    assert_eq!(registered.registry_group, "EXECUTOR");
    assert_eq!(registered.registry_key, "billing");
    assert_eq!(registered.registry_value, format!("http://{}/", rig.executor.addr));
    assert!(rig.admin.recorded().registry_remove.is_empty());
    rig.executor.stop().await.unwrap();
    let recorded = rig.admin.recorded();
    assert_eq!(recorded.registry_remove, [registered]);
    assert_eq!(recorded.rejected_tokens, 0, "the executor sends the token to the admin");
}

#[tokio::test]
async fn heartbeat_repeats_and_skips_a_dead_admin_and_uses_gen_a_context_path() {
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    // First admin refuses connections; the second is reached through `/xxl-job-admin`.
    config.admin_addresses = vec!["http://127.0.0.1:9".into(), format!("{}/xxl-job-admin", admin.base_url())];
    config.timings.registry_interval = Duration::from_millis(100);
    let executor = TestExecutor::start(config, quick()).await;
    admin.wait_for(SETTLE, "three beats", |r| r.registry.len() >= 3).await;
    executor.run(trigger(1, 5, "BEAN", "quick", "")).await;
    assert_eq!(admin.callback_for(5, SETTLE).await.handle_code, 200);
}

#[tokio::test]
async fn callbacks_are_spooled_during_an_admin_outage_and_delivered_after() {
    let mut rig = rig(quick(), |_| {}).await;
    rig.admin.wait_for(SETTLE, "registry", |r| !r.registry.is_empty()).await;
    rig.admin.stop().await;
    for log_id in 1..=3 {
        rig.executor.run(trigger(1, log_id, "BEAN", "quick", "")).await;
    }
    wait_until(SETTLE, "results spooled to disk", || spool_files(rig.dir.path()) >= 1).await;
    assert!(rig.admin.recorded().callbacks.is_empty());
    rig.admin.restart().await;
    rig.admin.wait_for(SETTLE, "spooled callbacks delivered", |r| r.callbacks.len() >= 3).await;
    wait_until(SETTLE, "spool emptied", || spool_files(rig.dir.path()) == 0).await;
    let mut ids: Vec<i64> = rig.admin.recorded().callbacks.iter().map(|c| c.log_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids, [1, 2, 3]);
    // The job log records both the failed attempt and the later delivery.
    let first = rig.admin.recorded().callbacks.iter().find(|c| c.log_id == 1).cloned().unwrap();
    let executor = &rig.executor;
    let text = wait_until_async(SETTLE, "callback finish noted in the job log", || async move {
        let text = executor.log_text(1, first.log_date_tim).await;
        text.contains("callback finish").then_some(text)
    })
    .await;
    assert!(text.contains("callback fail"), "{text}");
}

#[tokio::test]
async fn failing_admin_answers_are_treated_like_an_outage() {
    let rig = rig(quick(), |_| {}).await;
    rig.admin.set_failing(true);
    rig.executor.run(trigger(1, 9, "BEAN", "quick", "")).await;
    wait_until(SETTLE, "result spooled", || spool_files(rig.dir.path()) >= 1).await;
    rig.admin.set_failing(false);
    assert_eq!(rig.admin.callback_for(9, SETTLE).await.handle_code, 200);
}

/// Results spooled during an outage go out as soon as the admin takes a fresh batch, not at the
/// next retry tick (30 s by default), and many spool files go out merged in few POSTs: the
/// lost-job monitor must not close their runs while they drain one file at a time.
#[tokio::test]
async fn spooled_callbacks_go_out_merged_when_the_admin_takes_a_fresh_batch() {
    let rig = rig(quick(), |c| c.timings.callback_retry_interval = Duration::from_secs(3600)).await;
    rig.admin.set_failing(true);
    // One run at a time: each failed batch is a spool file of its own.
    for log_id in 1..=20_i64 {
        rig.executor.run(trigger(1, log_id, "BEAN", "quick", "")).await;
        let files = usize::try_from(log_id).expect("small");
        wait_until(SETTLE, "result spooled", || spool_files(rig.dir.path()) >= files).await;
    }
    rig.admin.set_failing(false);
    rig.executor.run(trigger(1, 100, "BEAN", "quick", "")).await;
    assert_eq!(rig.admin.callback_for(100, SETTLE).await.handle_code, 200);
    rig.admin
        .wait_for(SETTLE, "the spooled results followed the fresh one", |r| {
            (1..=20).all(|id| r.callbacks.iter().any(|c| c.log_id == id && c.handle_code == 200))
        })
        .await;
    wait_until(SETTLE, "spool emptied", || spool_files(rig.dir.path()) == 0).await;
    let posts = rig.admin.recorded().callback_batches;
    assert!(posts <= 3, "20 spool files in one POST (plus the fresh batch): {posts} POSTs");
}

#[tokio::test]
async fn spooled_callbacks_survive_an_executor_restart() {
    let mut admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.admin_addresses = vec![admin.base_url()];
    admin.stop().await;

    let first = TestExecutor::start(config.clone(), quick()).await;
    for log_id in 1..=5 {
        first.run(trigger(2, log_id, "BEAN", "quick", "")).await;
    }
    wait_until(SETTLE, "results spooled", || {
        std::fs::read_dir(dir.path().join("callbacklogs")).map(|d| d.count()).unwrap_or(0) >= 1
    })
    .await;
    first.stop().await.unwrap();

    admin.restart().await;
    let second = TestExecutor::start(config, quick()).await;
    admin
        .wait_for(SETTLE, "all five results", |r| {
            (1..=5).all(|id| r.callbacks.iter().any(|c| c.log_id == id && c.handle_code == 200))
        })
        .await;
    second.stop().await.unwrap();
}

#[tokio::test]
async fn shutdown_lets_running_jobs_finish_within_the_grace_period_and_kills_the_rest() {
    let mut handlers = quick();
    handlers.register("short", |ctx: JobContext| async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        ctx.log("finished during shutdown");
        Ok(())
    });
    handlers.register("endless", |ctx: JobContext| async move {
        ctx.stopped().await;
        anyhow::bail!("stopped")
    });
    let rig = rig(handlers, |c| c.shutdown_grace = Duration::from_secs(1)).await;
    rig.executor.run(trigger(1, 1, "BEAN", "short", "")).await;
    rig.executor.run(trigger(2, 2, "BEAN", "endless", "")).await;
    rig.executor.run(trigger(2, 3, "BEAN", "endless", "")).await;
    rig.executor.stop().await.unwrap();
    // `stop` returns only after every result was delivered (or spooled).
    let recorded = rig.admin.recorded();
    let result = |id: i64| recorded.callbacks.iter().find(|c| c.log_id == id).cloned().expect("callback");
    assert_eq!(result(1).handle_code, 200, "a job shorter than the grace period completes");
    assert_eq!(
        (result(2).handle_code, result(2).handle_msg.as_str()),
        (500, "web container destroy and kill the job. [job running, killed]")
    );
    assert_eq!(
        (result(3).handle_code, result(3).handle_msg.as_str()),
        (500, "web container destroy and kill the job. [job not executed, in the job queue, killed.]")
    );
    assert_eq!(recorded.registry_remove.len(), 1);
}
