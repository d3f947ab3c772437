//! Graceful shutdown applies every callback the admin acknowledged but had not applied yet:
//! executors never resend an acknowledged batch.

use std::sync::Arc;

use async_trait::async_trait;
use jobwheel_admin::http::AdminCore;
use jobwheel_admin::protocol::HandleCallbackParam;
use tokio::sync::watch;

use crate::http::{Admin, RecordingCore, TOKEN, sqlite_url, success, test_config};

/// Records callbacks only once its gate opens, so batches pile up in the queue meanwhile.
struct GatedCore {
    open: watch::Receiver<bool>,
    inner: RecordingCore,
}

#[async_trait]
impl AdminCore for GatedCore {
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) {
        let mut open = self.open.clone();
        let _ = open.wait_for(|open| *open).await;
        self.inner.on_callbacks(items).await;
    }

    async fn refresh_group(&self, app_name: &str) {
        self.inner.refresh_group(app_name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_applies_queued_callbacks() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (gate, open) = watch::channel(false);
    let core = Arc::new(GatedCore { open, inner: RecordingCore::default() });
    let admin = Admin::start(test_config(&sqlite_url(dir.path())), core.clone()).await?;
    for log_id in 1..=20 {
        let body = format!(r#"[{{"logId":{log_id},"handleCode":200}}]"#);
        assert_eq!(
            admin.post("/api/callback", &body, Some(TOKEN)).await.1,
            success(),
            "acknowledged at once"
        );
    }
    assert!(core.inner.recorded().callback_batches.is_empty(), "nothing applied while the gate is closed");

    let stopping = tokio::spawn(admin.stop());
    gate.send(true)?;
    stopping.await??;
    let applied = core.inner.recorded().callback_batches.len();
    assert_eq!(applied, 20, "every acknowledged batch is applied before run() returns");
    Ok(())
}
