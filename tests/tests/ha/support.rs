//! Jobs and an in-process executor shared by the HA and durability tests.

use jobwheel_admin::store::{Group, GroupId, JobId, Store};
use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{TestExecutor, test_config};

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
    job.schedule_type = "CRON".to_owned();
    job.schedule_conf = Some("* * * * * ?".to_owned());
    job.trigger_status = 1;
    job.trigger_next_time = first_fire_ms;
    Ok(store.add_job(&job).await?)
}
