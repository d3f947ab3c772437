//! Jobs, in-process executors and manual triggers shared by the HA and durability tests.

use std::sync::Arc;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::store::{Group, GroupId, JobId, Store};
use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::outcomes::log_totals;
use jobwheel_tests::{TestExecutor, test_config, wait_until_async};
use tokio::sync::Semaphore;

/// The BEAN handler of every job here: succeeds at once.
pub(crate) const HANDLER: &str = "haNoop";

/// An executor in this process reporting to `admins` (callbacks retried every 200 ms).
pub(crate) async fn executor(log_dir: &std::path::Path, admins: &[String]) -> TestExecutor {
    let mut config = test_config(log_dir);
    config.admin_addresses = admins.to_vec();
    let mut handlers = Handlers::new();
    handlers.register(HANDLER, |_ctx: JobContext| async move { Ok(()) });
    TestExecutor::start(config, handlers).await
}

/// A group whose only (manual) address is `address`.
pub(crate) async fn group(store: &dyn Store, address: &str) -> anyhow::Result<GroupId> {
    Ok(store
        .add_group(&Group {
            app_name: "ha-app".to_owned(),
            title: "ha".to_owned(),
            address_type: 1,
            address_list: Some(address.to_owned()),
            update_time: None,
        })
        .await?)
}

/// A running CRON job firing every second from `first_fire_ms` (a whole second).
pub(crate) async fn every_second(
    store: &dyn Store,
    group: GroupId,
    n: usize,
    first_fire_ms: i64,
) -> anyhow::Result<JobId> {
    let mut job = jobwheel_tests::fixtures::bean_job(group, &format!("every second {n}"), HANDLER);
    job.schedule_type = "CRON".into();
    job.schedule_conf = Some("* * * * * ?".to_owned());
    job.trigger_status = 1;
    job.trigger_next_time = first_fire_ms;
    Ok(store.add_job(&job).await?)
}

/// An executor reporting to `admin` whose runs each wait for a permit of `gate`, so the test
/// decides when they finish.
pub(crate) async fn gated_executor(
    log_dir: &std::path::Path,
    admin: &str,
    gate: &Arc<Semaphore>,
) -> TestExecutor {
    let mut config = test_config(log_dir);
    config.admin_addresses = vec![admin.to_owned()];
    let mut handlers = Handlers::new();
    let gate = Arc::clone(gate);
    handlers.register(HANDLER, move |ctx: JobContext| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await?.forget();
            ctx.log("done after the gate opened");
            Ok(())
        }
    });
    TestExecutor::start(config, handlers).await
}

/// `count` stopped jobs of `group` (created stopped, so no pre-read ever finds them due and
/// records a missed fire): only manual triggers run them.
pub(crate) async fn stopped_jobs(
    store: &dyn Store,
    group: GroupId,
    count: usize,
) -> anyhow::Result<Vec<JobId>> {
    let mut jobs = Vec::new();
    for n in 0..count {
        let job = jobwheel_tests::fixtures::bean_job(group, &format!("manual {n}"), HANDLER);
        jobs.push(store.add_job(&job).await?);
    }
    Ok(jobs)
}

/// Triggers `runs` runs round-robin over `jobs` through the management API of the admin at
/// `base`, and waits until the database at `url` shows every one dispatched.
pub(crate) async fn trigger_and_dispatch(
    base: &str,
    token: &str,
    jobs: &[JobId],
    runs: usize,
    url: &str,
) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    for n in 0..runs {
        let trigger = format!("{base}/api/v1/jobs/{}/trigger", jobs[n % jobs.len()].0);
        let response = http.post(trigger).bearer_auth(token).json(&serde_json::json!({})).send().await?;
        ensure!(response.status().is_success(), "trigger {n}: {}", response.status());
    }
    let expected = i64::try_from(runs)?;
    wait_until_async(Duration::from_secs(60), "every run dispatched", || async {
        let (logs, triggered, _) = log_totals(url).await.ok()?;
        (logs == expected && triggered == expected).then_some(())
    })
    .await;
    Ok(())
}
