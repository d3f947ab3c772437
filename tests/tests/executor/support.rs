//! Handlers and starters shared by the executor tests.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_executor::{ExecutorConfig, Handlers, JobContext};
use jobwheel_tests::{FakeAdmin, TOKEN, TestExecutor, test_config};
use tempfile::TempDir;
use tokio::sync::Semaphore;

/// Generous bound for "the callback arrives" waits on a loaded 2-core CI machine.
pub(crate) const SETTLE: Duration = Duration::from_secs(30);

/// A fake admin, an executor reporting to it, and the executor's log directory.
pub(crate) struct Rig {
    pub(crate) admin: FakeAdmin,
    pub(crate) executor: TestExecutor,
    pub(crate) dir: TempDir,
}

/// Starts a rig; `configure` adjusts the test config before start.
pub(crate) async fn rig(handlers: Handlers, configure: impl FnOnce(&mut ExecutorConfig)) -> Rig {
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.admin_addresses = vec![admin.base_url()];
    configure(&mut config);
    let executor = TestExecutor::start(config, handlers).await;
    Rig { admin, executor, dir }
}

/// A handler that holds each run until the test releases a permit (or the run is stopped),
/// recording the order in which runs started.
#[derive(Clone)]
pub(crate) struct Gate {
    pub(crate) permits: Arc<Semaphore>,
    pub(crate) started: Arc<std::sync::Mutex<Vec<i64>>>,
}

impl Gate {
    pub(crate) fn new() -> Self {
        Self { permits: Arc::new(Semaphore::new(0)), started: Arc::default() }
    }

    pub(crate) fn register(&self, handlers: &mut Handlers, name: &str) {
        let gate = self.clone();
        handlers.register(name, move |ctx: JobContext| {
            let gate = gate.clone();
            async move {
                gate.started.lock().expect("started").push(ctx.log_id());
                ctx.log(format!("gate waiting, param={}", ctx.param()));
                tokio::select! {
                    permit = gate.permits.acquire() => permit?.forget(),
                    () = ctx.stopped() => anyhow::bail!("stopped while waiting"),
                }
                Ok(())
            }
        });
    }

    pub(crate) fn started(&self) -> Vec<i64> {
        self.started.lock().expect("started").clone()
    }

    pub(crate) fn release(&self, n: usize) {
        self.permits.add_permits(n);
    }
}

/// Waits until `/idleBeat` says the job has no running or queued trigger.
pub(crate) async fn wait_idle(executor: &TestExecutor, job_id: i32) {
    jobwheel_tests::wait_until_async(SETTLE, &format!("job {job_id} idle"), || async move {
        let reply = executor.post("/idleBeat", serde_json::json!({"jobId": job_id})).await;
        (reply["code"] == 200).then_some(())
    })
    .await;
}

/// Waits until the job log of the trigger `body` (a `/run` body already sent) contains `needle`.
pub(crate) async fn wait_log_contains(executor: &TestExecutor, body: &serde_json::Value, needle: &str) {
    let log_id = body["logId"].as_i64().expect("logId");
    let at = body["logDateTime"].as_i64().expect("logDateTime");
    jobwheel_tests::wait_until_async(SETTLE, &format!("log {log_id} to contain {needle:?}"), || async move {
        executor.log_text(log_id, at).await.contains(needle).then_some(())
    })
    .await;
}
