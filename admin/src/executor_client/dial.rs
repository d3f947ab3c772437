//! The dial-out executors connected to this admin (`jobwheel_protocol::dial`): one link per
//! `dial://…` address, over which [`super::HttpExecutorClient`] sends the calls it would POST to
//! a listening executor. The socket itself is pumped by the edge (`http/executor_api/dial.rs`);
//! this side knows only messages, so the engine's client has no WebSocket type in it.
//!
//! A call to an address with no link here fails at once with a remoting error — what a refused
//! connection gives — so FAILOVER moves on and the trigger's log says why. Every admin holds its
//! own link to each dial-out executor (the executor dials every admin it is given).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use jobwheel_protocol::dial::{DialAnswer, DialCall, decode, encode};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::reply::{Exchanged, address_key, remoting_error};

/// Messages waiting to be written to one executor's socket; a full queue fails the call (the
/// socket is not keeping up), it never grows without bound.
const OUTGOING_QUEUE: usize = 1024;

/// The links of this admin's dial-out executors.
#[derive(Debug, Default)]
pub struct DialHub {
    links: Mutex<HashMap<String, Arc<DialLink>>>,
    /// Ids of calls (unique per admin process) and links.
    next_id: AtomicU64,
    /// Cancelled when the admin stops: every link closes.
    closing: CancellationToken,
}

/// One connected dial-out executor.
#[derive(Debug)]
pub struct DialLink {
    serial: u64,
    /// SHA-256 of the process's dial key: who may replace this link.
    key_digest: [u8; 32],
    outgoing: mpsc::Sender<Vec<u8>>,
    pending: Mutex<HashMap<u64, Waiting>>,
    closed: CancellationToken,
}

/// A call waiting for its answer: the answer's header and body.
type Waiting = oneshot::Sender<(DialAnswer, Vec<u8>)>;

/// Where a call goes and with which credentials: what the HTTP call would put in its URL and
/// headers.
pub(super) struct Callee<'a> {
    pub(super) address: &'a str,
    /// The address's endpoint, for messages.
    pub(super) url: &'a str,
    pub(super) method: &'a str,
    pub(super) token: Option<&'a str>,
    pub(super) app_name: Option<&'a str>,
}

/// Why a link was not attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an executor is already connected as {0}")]
pub struct AlreadyConnected(pub String);

impl DialHub {
    /// Attaches the executor at `address` presenting `key` (its process's random dial key):
    /// its link and the messages to write to its socket. While another live link holds the
    /// address it is refused — a second connection claiming the address cannot take the first
    /// one's calls — unless it presents the same key: the same process dialling again after a
    /// break this admin has not noticed yet, whose stale link is closed and replaced.
    pub fn attach(
        &self,
        address: &str,
        key: &str,
    ) -> Result<(Arc<DialLink>, mpsc::Receiver<Vec<u8>>), AlreadyConnected> {
        use sha2::Digest as _;
        use subtle::ConstantTimeEq as _;
        let address = address_key(address);
        let key_digest: [u8; 32] = sha2::Sha256::digest(key.as_bytes()).into();
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = links.get(address).filter(|link| !link.closed.is_cancelled()) {
            if key.is_empty() || !bool::from(held.key_digest.ct_eq(&key_digest)) {
                return Err(AlreadyConnected(address.to_owned()));
            }
            held.closed.cancel();
            held.pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
        }
        let (outgoing, receiver) = mpsc::channel(OUTGOING_QUEUE);
        let link = Arc::new(DialLink {
            serial: self.next_id.fetch_add(1, Ordering::Relaxed),
            key_digest,
            outgoing,
            pending: Mutex::default(),
            closed: self.closing.child_token(),
        });
        links.insert(address.to_owned(), Arc::clone(&link));
        Ok((link, receiver))
    }

    /// Detaches `link` (if it still holds `address`) and fails the calls waiting on it.
    pub fn detach(&self, address: &str, link: &DialLink) {
        link.closed.cancel();
        let address = address_key(address);
        let mut links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        if links.get(address).is_some_and(|held| held.serial == link.serial) {
            links.remove(address);
        }
        drop(links);
        // Dropping the senders wakes every waiting call with "closed".
        link.pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    /// Whether this admin holds a live link to the dial-out executor at `address`. A registry
    /// entry outlives its socket (a SIGKILLed pod stays listed until the dead timeout) and a pod
    /// registered through another admin may not have dialled this one yet: routing skips such
    /// addresses rather than sending a trigger that can only fail (`engine/resolve.rs`).
    pub fn is_connected(&self, address: &str) -> bool {
        let links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
        links.get(address_key(address)).is_some_and(|link| !link.closed.is_cancelled())
    }

    /// Closes every link (the admin is stopping).
    pub fn close_all(&self) {
        self.closing.cancel();
    }

    /// One call to `callee`: its reply's body (at most `limit` bytes) before `deadline`, or
    /// upstream's remoting message.
    pub(super) async fn exchange(
        &self,
        callee: &Callee<'_>,
        body: Option<Vec<u8>>,
        limit: usize,
        deadline: tokio::time::Instant,
    ) -> Result<Exchanged, String> {
        let (address, url) = (address_key(callee.address), callee.url);
        let link = {
            let links = self.links.lock().unwrap_or_else(PoisonError::into_inner);
            links.get(address).filter(|link| !link.closed.is_cancelled()).cloned()
        };
        let Some(link) = link else {
            return Err(remoting_error("the dial-out executor is not connected to this admin", url));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let call = DialCall {
            id,
            method: callee.method.to_owned(),
            token: callee.token.map(str::to_owned),
            app_name: callee.app_name.map(str::to_owned),
        };
        let (answered, answer) = oneshot::channel();
        link.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, answered);
        let forget = || link.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        if link.outgoing.try_send(encode(&call, body.as_deref().unwrap_or_default())).is_err() {
            forget();
            return Err(remoting_error("the dial-out connection is closed or not keeping up", url));
        }
        let (answer, bytes) = match tokio::time::timeout_at(deadline, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => return Err(remoting_error("the dial-out connection closed", url)),
            Err(_) => {
                forget();
                return Err(remoting_error("Read timed out", url));
            }
        };
        if answer.status != 200 {
            return Err(format!(
                "xxl-job remoting fail, StatusCode({}) invalid. for url : {url}",
                answer.status
            ));
        }
        if bytes.len() > limit {
            return Err(format!(
                "xxl-job remoting (url={url}) response larger than {limit} bytes, not read."
            ));
        }
        Ok(Exchanged { bytes, offers_batches: answer.run_batch })
    }
}

impl DialLink {
    /// Hands an answer that arrived on the socket to its call; `Err` when the message is not
    /// an answer (the edge closes such a socket). An answer nobody waits for any more (timed
    /// out) is dropped.
    pub fn answer(&self, message: &[u8]) -> Result<(), String> {
        let (answer, body): (DialAnswer, &[u8]) = decode(message).map_err(|e| e.to_string())?;
        let waiting = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&answer.id);
        if let Some(waiting) = waiting {
            let _ = waiting.send((answer, body.to_vec()));
        }
        Ok(())
    }

    /// Resolves when the link is closed (detached, or the admin stopping).
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }
}
