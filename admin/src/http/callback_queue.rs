//! The bounded queue between `/api/callback` and [`AdminCore::on_callbacks`].
//!
//! Upstream answers a callback at once and applies it on a pool (core 2, max 20, queue 3000)
//! that runs the task on the caller's thread when saturated. Here a fixed set of workers takes
//! batches from a bounded channel; when the channel is full the request waits for room, which
//! slows executors down instead of dropping results they will never resend.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jobwheel_protocol::HandleCallbackParam;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use super::core::AdminCore;

/// Batches waiting for a worker before requests wait for room.
const CAPACITY: usize = 1024;
/// Batches applied at once.
const WORKERS: usize = 4;

type Batch = Vec<HandleCallbackParam>;

/// The sending side, shared by the request handlers.
#[derive(Clone)]
pub(crate) struct CallbackQueue {
    sender: mpsc::Sender<Batch>,
    core: Arc<dyn AdminCore>,
    /// Batches accepted but not yet applied (for the shutdown report).
    pending: Arc<AtomicUsize>,
    /// Cancelled by [`CallbackQueue::close`]: workers drain what is queued and stop.
    closed: CancellationToken,
}

impl CallbackQueue {
    /// Starts the workers on `tasks`.
    pub(crate) fn spawn(core: Arc<dyn AdminCore>, tasks: &TaskTracker) -> Self {
        let (sender, receiver) = mpsc::channel(CAPACITY);
        let receiver = Arc::new(Mutex::new(receiver));
        let queue =
            Self { sender, core, pending: Arc::new(AtomicUsize::new(0)), closed: CancellationToken::new() };
        for worker in 0..WORKERS {
            let span = tracing::debug_span!("callback_worker", worker);
            tasks.spawn(queue.clone().work(Arc::clone(&receiver)).instrument(span));
        }
        queue
    }

    /// Queues a batch, waiting while the queue is full. After [`close`](Self::close) the batch
    /// is applied before returning instead, so a late request loses nothing either.
    pub(crate) async fn push(&self, batch: Batch) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let batch = if self.closed.is_cancelled() {
            batch
        } else {
            match self.sender.send(batch).await {
                Ok(()) => return,
                Err(mpsc::error::SendError(batch)) => batch,
            }
        };
        self.core.on_callbacks(batch).await;
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    /// Lets the workers finish: they apply every queued batch and then stop.
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }

    /// Batches accepted and not yet applied.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    async fn work(self, receiver: Arc<Mutex<mpsc::Receiver<Batch>>>) {
        loop {
            // One worker waits on the channel at a time; the lock is released before applying,
            // so the others take the next batches meanwhile.
            let batch = {
                let mut receiver = receiver.lock().await;
                tokio::select! {
                    biased;
                    batch = receiver.recv() => batch,
                    () = self.closed.cancelled() => receiver.try_recv().ok(),
                }
            };
            let Some(batch) = batch else { break };
            self.core.on_callbacks(batch).await;
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
