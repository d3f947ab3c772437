//! The bounded queue between `/api/callback` and [`AdminCore::on_callbacks`].
//!
//! Upstream answers a callback at once and applies it later on a pool, so a crash or a
//! database error in between loses results the executor has already forgotten. Here a request
//! is answered only once its batch is stored: the handler queues the batch with a reply
//! channel and waits. A fixed set of workers takes batches from a bounded channel, merges what
//! is waiting (group commit: one store call for concurrent requests) and tells every waiting
//! request the outcome. When the channel is full a request waits for room, which slows
//! executors down instead of dropping anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use jobwheel_protocol::HandleCallbackParam;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::http::AdminCore;

/// Batches waiting for a worker before requests wait for room.
const CAPACITY: usize = 1024;
/// Batches applied at once.
const WORKERS: usize = 4;
/// Most results one merged store call takes.
const MERGE_ITEMS: usize = 4096;

type Batch = Vec<HandleCallbackParam>;
/// What a request is told: stored, or why not.
pub(crate) type Stored = Result<(), String>;

/// A batch and the request waiting for it.
struct Waiting {
    batch: Batch,
    reply: oneshot::Sender<Stored>,
}

/// The sending side, shared by the request handlers.
#[derive(Clone)]
pub(crate) struct CallbackQueue {
    sender: mpsc::Sender<Waiting>,
    core: Arc<dyn AdminCore>,
    /// Batches received but not yet stored (for the shutdown report).
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

    /// Stores a batch and returns once it is stored (or could not be), waiting while the queue
    /// is full. After [`close`](Self::close) the batch is stored by the caller instead.
    pub(crate) async fn store(&self, batch: Batch) -> Stored {
        self.pending.fetch_add(1, Ordering::SeqCst);
        let (reply, outcome) = oneshot::channel();
        let waiting = Waiting { batch, reply };
        let waiting = if self.closed.is_cancelled() {
            waiting
        } else {
            match self.sender.send(waiting).await {
                // A worker always answers; a dropped sender would mean a worker panicked.
                Ok(()) => {
                    return outcome.await.unwrap_or_else(|_| Err("the callback worker stopped".to_owned()));
                }
                Err(mpsc::error::SendError(waiting)) => waiting,
            }
        };
        let stored = self.core.on_callbacks(waiting.batch).await.map_err(|e| e.to_string());
        self.pending.fetch_sub(1, Ordering::SeqCst);
        stored
    }

    /// Lets the workers finish: they store every queued batch and then stop.
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }

    /// Batches received and not yet stored.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::SeqCst)
    }

    async fn work(self, receiver: Arc<Mutex<mpsc::Receiver<Waiting>>>) {
        loop {
            // One worker waits on the channel at a time and takes everything waiting (up to
            // MERGE_ITEMS results); the lock is released before storing, so the others take
            // the next batches meanwhile.
            let merged = {
                let mut receiver = receiver.lock().await;
                let first = tokio::select! {
                    biased;
                    first = receiver.recv() => first,
                    () = self.closed.cancelled() => receiver.try_recv().ok(),
                };
                let Some(first) = first else { break };
                let mut merged = vec![first];
                let mut items = merged[0].batch.len();
                while items < MERGE_ITEMS {
                    let Ok(next) = receiver.try_recv() else { break };
                    items += next.batch.len();
                    merged.push(next);
                }
                merged
            };
            let count = merged.len();
            let (batches, replies): (Vec<Batch>, Vec<_>) =
                merged.into_iter().map(|waiting| (waiting.batch, waiting.reply)).unzip();
            let all = batches.into_iter().flatten().collect();
            let stored = self.core.on_callbacks(all).await.map_err(|e| e.to_string());
            for reply in replies {
                // The request may have gone (the executor timed out); it will resend, and the
                // repeat guard ignores what is stored already.
                let _ = reply.send(stored.clone());
            }
            self.pending.fetch_sub(count, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The queue's own promises, observed through [`CallbackQueue::pending`], which a test over
    //! HTTP cannot see: a batch waiting in the channel is stored before `close` lets a worker
    //! stop. (The HTTP tests cover answering only after storing, through a live admin.)

    use std::sync::Mutex as StdMutex;
    use std::time::Duration;

    use async_trait::async_trait;
    use tokio::sync::watch;

    use super::*;
    use crate::engine::EngineError;

    /// Stores batches only once the gate opens; records what it stored.
    struct Gated {
        open: watch::Receiver<bool>,
        stored: StdMutex<Vec<i64>>,
    }

    #[async_trait]
    impl AdminCore for Gated {
        async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
            let _ = self.open.clone().wait_for(|open| *open).await;
            self.stored.lock().expect("not poisoned").extend(items.iter().map(|item| item.log_id));
            Ok(())
        }

        async fn refresh_group(&self, _app_name: &str) {}
    }

    fn result(log_id: i64) -> HandleCallbackParam {
        serde_json::from_str(&format!(r#"{{"logId":{log_id},"handleCode":200}}"#)).expect("valid")
    }

    #[tokio::test]
    async fn closing_stores_every_queued_batch_before_the_workers_stop() {
        let (gate, open) = watch::channel(false);
        let core = Arc::new(Gated { open, stored: StdMutex::new(Vec::new()) });
        let tasks = TaskTracker::new();
        let queue = CallbackQueue::spawn(core.clone(), &tasks);
        // More batches than workers, so some wait in the channel when the queue closes.
        let requests: Vec<_> = (1..=3 * WORKERS as i64)
            .map(|log_id| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.store(vec![result(log_id)]).await })
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while queue.pending() < requests.len() {
            assert!(tokio::time::Instant::now() < deadline, "only {} batches arrived", queue.pending());
            tokio::task::yield_now().await;
        }
        assert!(requests.iter().all(|r| !r.is_finished()), "nothing is answered before it is stored");

        queue.close();
        tasks.close();
        gate.send(true).expect("the core holds the receiver");
        for request in requests {
            assert_eq!(request.await.expect("no panic"), Ok(()));
        }
        tokio::time::timeout(Duration::from_secs(10), tasks.wait()).await.expect("the workers stop");
        assert_eq!(queue.pending(), 0);
        let mut stored = core.stored.lock().expect("not poisoned").clone();
        stored.sort_unstable();
        assert_eq!(stored, (1..=3 * WORKERS as i64).collect::<Vec<_>>());
    }
}
