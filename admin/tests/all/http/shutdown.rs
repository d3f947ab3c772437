//! Callbacks are answered only once applied, and graceful shutdown applies and answers every
//! callback request already received: an executor forgets a batch when it hears 200.
//!
//! A request only counts as received once its result reached the core: one still connecting
//! when the admin stops is refused, and its executor sends it again. (Batches received and
//! still queued behind busy workers are covered by the queue's own unit test.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use jobwheel_admin::engine::EngineError;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::protocol::{ACCESS_TOKEN_HEADER, HandleCallbackParam};
use serde_json::Value;
use tokio::sync::watch;

use crate::http::{Admin, RecordingCore, TOKEN, sqlite_url, success, test_config};

/// Records callbacks only once its gate opens, so requests wait meanwhile.
struct GatedCore {
    open: watch::Receiver<bool>,
    /// Results that reached the closed gate.
    waiting: AtomicUsize,
    inner: RecordingCore,
}

#[async_trait]
impl AdminCore for GatedCore {
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
        self.waiting.fetch_add(items.len(), Ordering::SeqCst);
        let mut open = self.open.clone();
        let _ = open.wait_for(|open| *open).await;
        self.inner.on_callbacks(items).await
    }

    async fn refresh_group(&self, app_name: &str) {
        self.inner.refresh_group(app_name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_are_answered_once_applied_and_shutdown_answers_every_received_one() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (gate, open) = watch::channel(false);
    let core = Arc::new(GatedCore { open, waiting: AtomicUsize::new(0), inner: RecordingCore::default() });
    let admin = Admin::start(test_config(&sqlite_url(dir.path())), core.clone()).await?;
    // One at a time, each waited for at the gate, so every one is received before the stop;
    // fewer than the queue's workers, so none waits in the channel meanwhile.
    let mut requests = Vec::new();
    for log_id in 1..=3 {
        let request = admin
            .http
            .post(format!("{}/api/callback", admin.base))
            .header(ACCESS_TOKEN_HEADER, TOKEN)
            .header("content-type", "application/json")
            .body(format!(r#"[{{"logId":{log_id},"handleCode":200}}]"#));
        requests.push(tokio::spawn(async move { request.send().await?.json::<Value>().await }));
        let arrived = usize::try_from(log_id)?;
        jobwheel_tests::wait_until(std::time::Duration::from_secs(10), "the result at the gate", || {
            core.waiting.load(Ordering::SeqCst) == arrived
        })
        .await;
    }
    assert!(requests.iter().all(|r| !r.is_finished()), "no request is answered before it is applied");
    assert!(core.inner.recorded().callback_batches.is_empty());

    let stopping = tokio::spawn(admin.stop());
    gate.send(true)?;
    for request in requests {
        assert_eq!(request.await??, success(), "every received request is applied and answered");
    }
    stopping.await??;
    let mut applied: Vec<i64> =
        core.inner.recorded().callback_batches.concat().iter().map(|c| c.log_id).collect();
    applied.sort_unstable();
    assert_eq!(applied, vec![1, 2, 3]);
    Ok(())
}
