//! Batched triggers (`/runBatch`, a jobwheel extension; docs/executor.md, "Batched
//! triggers"): the triggers for one jobwheel executor go out several to a request instead of
//! one `/run` each.
//!
//! An address is batched once its `/run` reply offered it ([`RUN_BATCH_HEADER`]); a plain reply
//! without the header (an upstream executor now on that address) forgets it again. A trigger
//! for a batched address joins the address's queue; at most [`SENDERS`] sender tasks per
//! address each take what is queued (up to [`MAX_TRIGGERS`] triggers, [`MAX_BYTES`]) and send
//! it as one request. There is no timer: a lone trigger leaves at once, and the triggers that
//! arrive while requests are out leave together in the next one.
//!
//! Each trigger gets its own element of the reply, exactly what `/run` would have answered. A
//! transport failure, a non-200 or a reply of the wrong shape answers every trigger of the
//! batch with the message a failed `/run` gets, as the executor may have taken them; a reply
//! that is one envelope instead of a list (an executor that does not know the path, or refused
//! the request as a whole) took none of them, so they are sent again one `/run` each and the
//! address is no longer batched.
//!
//! [`RUN_BATCH_HEADER`]: super::RUN_BATCH_HEADER

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use jobwheel_protocol::envelope::AckEnvelope;
use jobwheel_protocol::executor_api::TriggerParam;
use tokio::sync::oneshot;

use super::reply::{ACK_LIMIT, address_key, content_invalid, endpoint, fail, remoting_error};
use super::{ExecutorReply, HttpExecutorClient};

/// Requests at once per address: while one is out, the next batch fills.
const SENDERS: usize = 2;
/// Triggers per request.
const MAX_TRIGGERS: usize = 500;
/// Bytes of triggers per request (a request always carries at least one): well below the
/// executor's 5 MiB body limit, whatever GLUE sources the triggers carry.
const MAX_BYTES: usize = 1024 * 1024;
/// Addresses remembered; beyond it, idle ones are forgotten (and learn again from `/run`).
const MAX_ADDRESSES: usize = 4096;

/// The batched addresses, keyed without a trailing `/`.
#[derive(Debug, Default)]
pub(super) struct Batches(Mutex<HashMap<String, Arc<Batcher>>>);

impl Batches {
    /// The queue of `address`, if it takes `/runBatch`.
    pub(super) fn batcher(&self, address: &str) -> Option<Arc<Batcher>> {
        self.lock().get(address_key(address)).cloned()
    }

    /// Records what `address`'s latest `/run` reply said about `/runBatch`.
    pub(super) fn learn(&self, address: &str, offered: bool) {
        let key = address_key(address);
        let mut batchers = self.lock();
        if !offered {
            batchers.remove(key);
        } else if !batchers.contains_key(key) {
            if batchers.len() >= MAX_ADDRESSES {
                batchers.retain(|_, batcher| !batcher.idle());
            }
            batchers.insert(key.to_owned(), Arc::default());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Batcher>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A trigger waiting in a queue: its body and where its reply goes.
#[derive(Debug)]
struct Waiting {
    body: Vec<u8>,
    reply: oneshot::Sender<ExecutorReply>,
}

/// One address's queue and its sender count.
#[derive(Debug, Default)]
pub(super) struct Batcher(Mutex<Queue>);

#[derive(Debug, Default)]
struct Queue {
    waiting: Vec<Waiting>,
    /// Sender tasks alive; each leaves only when it finds the queue empty, under the lock, so a
    /// trigger queued while [`SENDERS`] are alive is always taken by one of them.
    senders: usize,
}

impl Batcher {
    /// Queues `param` for `address` and waits for its reply.
    pub(super) async fn send(
        self: Arc<Self>,
        client: &HttpExecutorClient,
        address: &str,
        param: &TriggerParam,
    ) -> ExecutorReply {
        let url = endpoint(address, "runBatch");
        let body = match serde_json::to_vec(param) {
            Ok(body) => body,
            Err(e) => return fail(remoting_error(e, &url)),
        };
        let (reply, answer) = oneshot::channel();
        let start_sender = {
            let mut queue = self.lock();
            queue.waiting.push(Waiting { body, reply });
            let start = queue.senders < SENDERS;
            if start {
                queue.senders += 1;
            }
            start
        };
        if start_sender {
            let (batcher, client, address) = (Arc::clone(&self), client.clone(), address.to_owned());
            tokio::spawn(async move { batcher.drain(&client, &address).await });
        }
        answer.await.unwrap_or_else(|_| fail(remoting_error("the batch was dropped", &url)))
    }

    /// A sender task: sends what is queued until the queue is empty.
    async fn drain(&self, client: &HttpExecutorClient, address: &str) {
        // Should a send panic (none is known to), the guard still gives up this sender's place,
        // so the queue is not left counting a sender that is gone.
        let mut leaving = Leaving { batcher: self, armed: true };
        while let Some(batch) = self.take() {
            deliver(client, address, batch).await;
        }
        // `take` gave up the place when it found the queue empty.
        leaving.armed = false;
    }

    /// The next batch, or `None` (and one sender fewer) when nothing waits.
    fn take(&self) -> Option<Vec<Waiting>> {
        let mut queue = self.lock();
        if queue.waiting.is_empty() {
            queue.senders -= 1;
            return None;
        }
        let (mut count, mut bytes) = (0, 0);
        for waiting in &queue.waiting {
            if count == MAX_TRIGGERS || (count > 0 && bytes + waiting.body.len() > MAX_BYTES) {
                break;
            }
            count += 1;
            bytes += waiting.body.len() + 1;
        }
        Some(queue.waiting.drain(..count).collect())
    }

    fn idle(&self) -> bool {
        let queue = self.lock();
        queue.waiting.is_empty() && queue.senders == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Gives up a sender's place if its task ends without finding the queue empty (a panic).
struct Leaving<'a> {
    batcher: &'a Batcher,
    armed: bool,
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut queue = self.batcher.lock();
        queue.senders -= 1;
        if queue.senders == 0 {
            // No sender is left to take them: dropping their reply channels answers each
            // trigger that its batch was dropped, rather than leaving it to its timeout.
            queue.waiting.clear();
        }
    }
}

/// Sends `batch` as one `/runBatch` and hands each trigger its reply.
async fn deliver(client: &HttpExecutorClient, address: &str, batch: Vec<Waiting>) {
    let url = endpoint(address, "runBatch");
    let mut body = Vec::with_capacity(batch.iter().map(|w| w.body.len() + 1).sum::<usize>() + 1);
    body.push(b'[');
    for (i, waiting) in batch.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&waiting.body);
    }
    body.push(b']');
    // Each element is a small envelope; allow an ack's worth per trigger.
    let limit = ACK_LIMIT.saturating_mul(batch.len());
    let replies = match client.exchange(address, &url, Some(body), limit).await {
        Err(msg) => Err(msg),
        Ok(reply) => match serde_json::from_slice::<Vec<AckEnvelope>>(&reply.bytes) {
            Ok(replies) if replies.len() == batch.len() => Ok(replies),
            Ok(replies) => Err(format!(
                "xxl-job remoting (url={url}) answered {} replies for {} triggers.",
                replies.len(),
                batch.len()
            )),
            Err(_) if serde_json::from_slice::<AckEnvelope>(&reply.bytes).is_ok() => {
                // One envelope: nothing in the batch was taken. Forget the address and send
                // each trigger as a plain `/run`, which learns the address again if it offers.
                client.batches.learn(address, false);
                for waiting in batch {
                    let (reply, _) = client.run_body(address, waiting.body).await;
                    let _ = waiting.reply.send(reply);
                }
                return;
            }
            Err(_) => Err(content_invalid(&url, &reply.bytes)),
        },
    };
    match replies {
        Ok(replies) => {
            for (waiting, envelope) in batch.into_iter().zip(replies) {
                let _ = waiting.reply.send(envelope.into());
            }
        }
        Err(msg) => {
            for waiting in batch {
                let _ = waiting.reply.send(fail(msg.clone()));
            }
        }
    }
}
