//! Result callbacks to the admin: batched, spooled to disk when no admin accepts them, and
//! retried until one does (upstream `TriggerCallbackThread`).
//!
//! Durability: a batch that fails is written to `{log-path}/callbacklogs/` (JSON, fsynced, temp
//! file + rename) before the sender moves on, and the retry task deletes a spool file only after
//! an admin accepted its contents. So a result survives admin outages and executor restarts; the
//! admin ignores duplicates (`handle_code > 0` guard), which makes at-least-once delivery safe.
//! Results still in the in-memory queue when the process is SIGKILLed are lost, exactly the
//! milliseconds between a run ending and its batch being sent; graceful shutdown drains them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jobwheel_protocol::HandleCallbackParam;
use jobwheel_protocol::admin_api::paths;
use md5::{Digest, Md5};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admin_client::AdminClient;
use crate::joblog::{LogDir, append_line};

/// Largest batch sent in one POST (upstream 3.4.1+ sends at most 50; larger batches keep the
/// admin's per-request overhead low at high trigger rates, and admins accept any size).
const MAX_BATCH: usize = 1000;

const SPOOL_PREFIX: &str = "xxl-job-callback-";
const SPOOL_SUFFIX: &str = ".log";

/// Producer handle: job threads push finished runs here.
#[derive(Debug, Clone)]
pub(crate) struct Callbacks {
    tx: mpsc::UnboundedSender<HandleCallbackParam>,
}

impl Callbacks {
    pub(crate) fn push(&self, param: HandleCallbackParam) {
        if self.tx.send(param).is_err() {
            tracing::error!("callback queue closed; result dropped (executor is shutting down)");
        }
    }
}

#[derive(Debug, Clone)]
struct Delivery {
    client: AdminClient,
    logs: LogDir,
}

/// Starts the sender and the spool-retry task. Both stop when `stop` is cancelled; the sender
/// first drains and delivers (or spools) everything already queued.
pub(crate) fn spawn(
    tracker: &TaskTracker,
    client: AdminClient,
    logs: LogDir,
    retry_interval: Duration,
    stop: CancellationToken,
) -> Callbacks {
    let (tx, rx) = mpsc::unbounded_channel();
    let delivery = Delivery { client, logs };
    tracker.spawn(send_loop(delivery.clone(), rx, stop.clone()));
    tracker.spawn(retry_loop(delivery, retry_interval, stop));
    Callbacks { tx }
}

async fn send_loop(
    delivery: Delivery,
    mut rx: mpsc::UnboundedReceiver<HandleCallbackParam>,
    stop: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            biased;
            param = rx.recv() => match param {
                Some(p) => p,
                None => break,
            },
            () = stop.cancelled() => break,
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        delivery.deliver_or_spool(batch).await;
    }
    rx.close();
    let mut rest = Vec::new();
    while let Ok(p) = rx.try_recv() {
        rest.push(p);
    }
    if !rest.is_empty() {
        delivery.deliver_or_spool(rest).await;
    }
}

async fn retry_loop(delivery: Delivery, interval: Duration, stop: CancellationToken) {
    loop {
        if delivery.client.is_configured() {
            delivery.retry_spool().await;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}

impl Delivery {
    async fn deliver_or_spool(&self, batch: Vec<HandleCallbackParam>) {
        if !self.client.is_configured() {
            tracing::debug!(count = batch.len(), "no admin configured; callbacks not sent");
            return;
        }
        match self.client.post(paths::CALLBACK, &batch).await {
            Ok(()) => {
                self.note_in_logs(batch, "<br>----------- xxl-job job callback finish.".to_owned()).await
            }
            Err(e) => {
                tracing::warn!(count = batch.len(), error = %e, "callback failed; spooling to disk");
                let note = format!("<br>----------- xxl-job job callback fail, callbackResult:{e}");
                let dir = self.logs.callback_spool_dir();
                let spooled = batch.clone();
                let result = tokio::task::spawn_blocking(move || write_spool(&dir, &spooled)).await;
                match result {
                    Ok(Ok(path)) => tracing::info!(file = %path.display(), "callbacks spooled"),
                    Ok(Err(e)) => tracing::error!(error = %e, "cannot spool callbacks; results lost"),
                    Err(e) => tracing::error!(error = %e, "spool task failed; results lost"),
                }
                self.note_in_logs(batch, note).await;
            }
        }
    }

    /// Re-sends every spool file; deletes each only once an admin accepted it.
    async fn retry_spool(&self) {
        let dir = self.logs.callback_spool_dir();
        let files = tokio::task::spawn_blocking(move || list_spool(&dir)).await.unwrap_or_default();
        for file in files {
            let batch = match read_spool(&file).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!(file = %file.display(), error = %e, "unreadable callback spool file; renamed to .corrupt");
                    let _ = tokio::fs::rename(&file, file.with_extension("corrupt")).await;
                    continue;
                }
            };
            if batch.is_empty() {
                let _ = tokio::fs::remove_file(&file).await;
                continue;
            }
            match self.client.post(paths::CALLBACK, &batch).await {
                Ok(()) => {
                    if let Err(e) = tokio::fs::remove_file(&file).await {
                        tracing::warn!(file = %file.display(), error = %e, "cannot remove delivered spool file");
                    }
                    tracing::info!(count = batch.len(), "spooled callbacks delivered");
                    self.note_in_logs(batch, "<br>----------- xxl-job job callback finish.".to_owned()).await;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "admin still unavailable; spool kept");
                    return;
                }
            }
        }
    }

    /// Appends `note` to the job log of every item in `batch`, off the async threads.
    async fn note_in_logs(&self, batch: Vec<HandleCallbackParam>, note: String) {
        let logs = self.logs.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for item in &batch {
                append_line(&logs.file_for(item.log_date_tim, item.log_id), &note);
            }
        })
        .await;
    }
}

/// Writes `batch` durably as `{dir}/xxl-job-callback-{md5 of json}.log`.
fn write_spool(dir: &Path, batch: &[HandleCallbackParam]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(batch).map_err(std::io::Error::other)?;
    let digest = hex::encode(Md5::digest(&json));
    let path = dir.join(format!("{SPOOL_PREFIX}{digest}{SPOOL_SUFFIX}"));
    let tmp = dir.join(format!(".{SPOOL_PREFIX}{digest}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(&json)?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    // Make the rename itself durable.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

fn list_spool(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SPOOL_PREFIX) && n.ends_with(SPOOL_SUFFIX))
        })
        .collect();
    files.sort();
    files
}

async fn read_spool(path: &Path) -> anyhow::Result<Vec<HandleCallbackParam>> {
    let bytes = tokio::fs::read(path).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&bytes)?)
}
