//! Shipping job log lines to the admins (`--job-logs both|admin`; docs/executor.md, "Logs kept
//! by the admin"): every write of a run's log becomes a piece in a buffer, and one task sends
//! the buffer every [`FLUSH_EVERY`] (sooner once it holds [`FLUSH_BYTES`]) as one gzip batch
//! to the first admin that stores it.
//!
//! Memory stays bounded: past [`MAX_BUFFER_BYTES`] the writer itself moves the buffer to the
//! spool. Nothing is lost while no admin answers: a batch that could not be stored is written
//! to `{log-path}/logship/` and sent again, oldest first, until an admin stores it; new
//! batches queue behind the spool meanwhile. A batch an admin refuses as malformed (400, 413)
//! would be refused by every admin, so it is dropped with a warning instead of blocking the
//! spool forever.
//!
//! Each piece carries a stamp drawn from one strictly increasing clock of the process, so the
//! admin orders a log's pieces and stores a resent batch once.
//!
//! A run's result waits for its lines: the callback task flushes the buffer ([`LogShipper::flush`])
//! after writing the end lines and before sending the results, so once an admin has a result it
//! has (or the spool holds) every line the run wrote before it — a SIGKILL right after loses none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobwheel_protocol::log_ship::{LogBatch, LogPiece, encode};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::admin_client::{AdminClient, ShipFailure};

/// How often the buffer goes out while runs write.
const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// A buffer this large goes out at once.
const FLUSH_BYTES: usize = 256 * 1024;
/// A buffer this large moves to the spool from the writer: the admins are slower than the runs.
const MAX_BUFFER_BYTES: usize = 8 * 1024 * 1024;
/// Longest wait before the spool is tried again while no admin answers.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The pieces written since the last shipment; a log's writes merge into one piece.
#[derive(Default)]
struct Buffer {
    pieces: Vec<LogPiece>,
    by_log: HashMap<i64, usize>,
    bytes: usize,
}

impl Buffer {
    fn take(&mut self) -> Vec<LogPiece> {
        self.by_log.clear();
        self.bytes = 0;
        std::mem::take(&mut self.pieces)
    }
}

/// The buffer and spool of one executor process.
pub(crate) struct LogShipper {
    buffer: Mutex<Buffer>,
    wake: Notify,
    spool: PathBuf,
    last_stamp: AtomicI64,
    client: AdminClient,
    /// One delivery at a time, so the spool is sent in order.
    sending: tokio::sync::Mutex<()>,
}

impl LogShipper {
    /// A shipper sending to `client`'s admins, spooling to `spool` (created if missing).
    pub(crate) fn new(spool: PathBuf, client: AdminClient) -> std::io::Result<Arc<Self>> {
        std::fs::create_dir_all(&spool)?;
        Ok(Arc::new(Self {
            buffer: Mutex::new(Buffer::default()),
            wake: Notify::new(),
            spool,
            last_stamp: AtomicI64::new(0),
            client,
            sending: tokio::sync::Mutex::new(()),
        }))
    }

    /// Sends what was written so far now, after the spool (or spools it when no admin
    /// answers); false if no admin answered.
    pub(crate) async fn flush(&self) -> bool {
        let _one = self.sending.lock().await;
        let pieces = self.buffer.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.deliver(pieces).await
    }

    /// Appends `text` (whole lines) to log `log_id`'s next shipment; `last` closes the log.
    pub(crate) fn push(&self, log_id: i64, log_date_time: i64, text: &str, last: bool) {
        let mut buffer = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        match buffer.by_log.get(&log_id).copied() {
            Some(index) => {
                let piece = &mut buffer.pieces[index];
                piece.text.push_str(text);
                piece.last |= last;
            }
            None => {
                let piece =
                    LogPiece { log_id, log_date_time, stamp: self.next_stamp(), text: text.to_owned(), last };
                let index = buffer.pieces.len();
                buffer.pieces.push(piece);
                buffer.by_log.insert(log_id, index);
            }
        }
        buffer.bytes += text.len() + 64;
        if buffer.bytes >= MAX_BUFFER_BYTES {
            let pieces = buffer.take();
            drop(buffer);
            self.spill(&LogBatch { pieces });
        } else if buffer.bytes >= FLUSH_BYTES {
            self.wake.notify_one();
        }
    }

    /// Microseconds since the epoch, strictly above every stamp drawn before in this process.
    fn next_stamp(&self) -> i64 {
        let now = chrono::Utc::now().timestamp_micros();
        let previous = self.last_stamp.fetch_max(now, Ordering::AcqRel);
        if previous < now {
            now
        } else {
            // Two draws in one microsecond (or a clock step back): one above the last.
            self.last_stamp.fetch_add(1, Ordering::AcqRel) + 1
        }
    }

    /// Writes `batch` to the spool, to be sent when an admin answers.
    fn spill(&self, batch: &LogBatch) {
        if batch.pieces.is_empty() {
            return;
        }
        let name = format!("{:020}.gz", self.next_stamp());
        let temp = self.spool.join(format!(".{name}.tmp"));
        let written = std::fs::write(&temp, encode(batch))
            .and_then(|()| std::fs::rename(&temp, self.spool.join(&name)));
        if let Err(error) = written {
            tracing::error!(%error, spool = %self.spool.display(), "cannot spool job log lines; they are lost");
        }
    }

    /// Batches waiting in the spool, oldest first.
    fn spooled(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.spool) else { return Vec::new() };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "gz") && !is_temp(p))
            .collect();
        files.sort();
        files
    }

    /// Sends the buffer now and then, and the spool while it has batches, until `stop`; then
    /// sends (or spools) what is left once.
    pub(crate) async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut retry = FLUSH_EVERY;
        loop {
            let stopping = tokio::select! {
                () = tokio::time::sleep(FLUSH_EVERY) => false,
                () = self.wake.notified() => false,
                () = stop.cancelled() => true,
            };
            let delivered = self.flush().await;
            if stopping {
                return;
            }
            if !delivered {
                // No admin answers: wait longer each time before trying again.
                tokio::select! {
                    () = tokio::time::sleep(retry) => {}
                    () = stop.cancelled() => {}
                }
                retry = (retry * 2).min(MAX_RETRY);
            } else {
                retry = FLUSH_EVERY;
            }
        }
    }

    /// Sends the spool, oldest first, then `pieces`; what cannot be sent is spooled. False if
    /// an admin could not be reached.
    async fn deliver(&self, pieces: Vec<LogPiece>) -> bool {
        let client = &self.client;
        for file in self.spooled() {
            let Ok(body) = tokio::fs::read(&file).await else { continue };
            match client.ship_logs(body).await {
                Ok(()) => {}
                Err(ShipFailure::Refused(reason)) => {
                    tracing::warn!(file = %file.display(), %reason, "an admin refused spooled job log lines; dropped");
                }
                Err(ShipFailure::Unreachable(reason)) => {
                    tracing::debug!(%reason, "job log lines stay spooled");
                    self.spill(&LogBatch { pieces });
                    return false;
                }
            }
            let _ = tokio::fs::remove_file(&file).await;
        }
        if pieces.is_empty() {
            return true;
        }
        let batch = LogBatch { pieces };
        match client.ship_logs(encode(&batch)).await {
            Ok(()) => true,
            Err(ShipFailure::Refused(reason)) => {
                tracing::warn!(%reason, "an admin refused job log lines; dropped");
                true
            }
            Err(ShipFailure::Unreachable(reason)) => {
                tracing::warn!(%reason, "no admin stored job log lines; spooled until one does");
                self.spill(&batch);
                false
            }
        }
    }
}

fn is_temp(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipper(dir: &Path) -> Arc<LogShipper> {
        let client = AdminClient::new(&[], None, "test".into(), Duration::from_secs(1)).expect("client");
        LogShipper::new(dir.join("logship"), client).expect("shipper")
    }

    #[test]
    fn writes_of_one_log_merge_and_stamps_rise() {
        let dir = tempfile::tempdir().expect("temp dir");
        let shipper = shipper(dir.path());
        shipper.push(1, 10, "a\n", false);
        shipper.push(2, 10, "x\n", false);
        shipper.push(1, 10, "b\n", true);
        let pieces = shipper.buffer.lock().expect("lock").take();
        assert_eq!(pieces.len(), 2);
        assert_eq!((pieces[0].text.as_str(), pieces[0].last), ("a\nb\n", true));
        assert!(pieces[0].stamp < pieces[1].stamp);
        let stamps: Vec<i64> = (0..1000).map(|_| shipper.next_stamp()).collect();
        assert!(stamps.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
    }

    #[test]
    fn a_full_buffer_moves_to_the_spool() {
        let dir = tempfile::tempdir().expect("temp dir");
        let shipper = shipper(dir.path());
        let line = format!("{}\n", "y".repeat(1023));
        for _ in 0..(MAX_BUFFER_BYTES / 1024 + 1) {
            shipper.push(3, 10, &line, false);
        }
        let spooled = shipper.spooled();
        assert_eq!(spooled.len(), 1);
        let batch =
            jobwheel_protocol::log_ship::decode(&std::fs::read(&spooled[0]).expect("read")).expect("batch");
        assert!(batch.pieces[0].text.len() >= MAX_BUFFER_BYTES * 9 / 10, "the whole buffer");
    }
}
