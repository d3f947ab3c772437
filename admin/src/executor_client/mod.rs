//! The admin's client for the executor API (`/run`, `/kill`, `/log`, `/beat`, `/idleBeat`),
//! docs/upstream.md §2: JSON over HTTP with the `XXL-JOB-ACCESS-TOKEN` header, a per-call
//! timeout, and every failure folded into a `code 500` reply with upstream's message.
//!
//! The executors of a group with its own access token are called the way xxl-job 3.5 calls
//! them (Gen C): the group's token and `XXL-JOB-APPNAME` on every request, `/trigger` instead of
//! `/run` ([`ExecutorApi::for_group`]). A jobwheel executor that offers `/runBatch` on its `/run`
//! replies gets its triggers in batches (`batch.rs`).
//!
//! The engine talks to executors only through [`ExecutorApi`], so its tests can script replies
//! with a fake; [`HttpExecutorClient`] is the real implementation and also the router's
//! [`Probe`] for FAILOVER/BUSYOVER.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jobwheel_protocol::envelope::FAIL_CODE;
use jobwheel_protocol::envelope::{AckEnvelope, Envelope};
use jobwheel_protocol::executor_api::{
    ExecutorStatus, IdleBeatParam, KillParam, LogParam, LogResult, OutstandingQuery, OutstandingRuns,
    TriggerParam, WasmModuleRef,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::credentials::GroupCredential;
use crate::routing::{Probe, ProbeResult};
use batch::Batches;
use lanes::{CALLS_PER_ADDRESS, Lanes};

pub use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER, RUN_BATCH_HEADER};

mod batch;
mod lanes;

/// Upstream's default `xxl.job.timeout`: 3 s for connect and read.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// The `code`/`msg` of an executor's reply. Transport and decoding failures are replies too
/// (`code 500` with upstream's message), as in upstream's `XxlJobRemotingUtil`.
pub type ExecutorReply = ProbeResult;

/// A `/log` reply: the envelope's code and message, and the page if one came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogReply {
    /// `code` (500 for transport failures).
    pub code: i32,
    /// `msg`.
    pub msg: Option<String>,
    /// The page, from `content` (Gen A) or `data` (Gen B).
    pub result: Option<LogResult>,
}

/// What the engine asks of executors. `Probe` (`/beat`, `/idleBeat`) is a supertrait so the
/// same object routes FAILOVER and BUSYOVER.
#[async_trait]
pub trait ExecutorApi: Probe + Send + Sync {
    /// `POST {address}/run`.
    async fn run(&self, address: &str, param: &TriggerParam) -> ExecutorReply;
    /// `POST {address}/kill` with `{"jobId": job_id}`.
    async fn kill(&self, address: &str, job_id: i32) -> ExecutorReply;
    /// `POST {address}/log`.
    async fn log(&self, address: &str, param: &LogParam) -> LogReply;
    /// `POST {address}/wasmPrepare` (jobwheel executors only): compile `module` now. Clients
    /// that cannot say so answer a failure, which callers ignore.
    async fn prepare_wasm(&self, address: &str, module: &WasmModuleRef) -> ExecutorReply {
        let _ = (address, module);
        ExecutorReply { code: FAIL_CODE, msg: Some("not supported by this client".to_owned()) }
    }
    /// `POST {address}/status` (jobwheel executors only): running jobs, queued triggers and run
    /// slots; `Err` with the reason when the executor cannot say.
    async fn status(&self, address: &str) -> Result<ExecutorStatus, String> {
        let _ = address;
        Err("not supported by this client".to_owned())
    }
    /// `POST {address}/outstanding` (jobwheel executors only): those of `log_ids` the process
    /// at `address` still owes a result for; `Err` with the reason when it cannot say.
    async fn outstanding(&self, address: &str, log_ids: &[i64]) -> Result<OutstandingRuns, String> {
        let _ = (address, log_ids);
        Err("not supported by this client".to_owned())
    }
    /// The client for the executors of a group with its own access token, or `None` when this
    /// client serves them as it is (test doubles).
    fn for_group(&self, credential: &Arc<GroupCredential>) -> Option<Arc<dyn ExecutorApi>> {
        let _ = credential;
        None
    }
}

/// Why the HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the executor HTTP client: {0}")]
pub struct ClientBuildError(#[from] reqwest::Error);

/// [`ExecutorApi`] over HTTP with reqwest.
#[derive(Debug, Clone)]
pub struct HttpExecutorClient {
    http: reqwest::Client,
    access_token: Option<String>,
    /// Set for a group with its own token: that token and the AppName go with every call,
    /// and a trigger is `/trigger` (Gen C).
    group: Option<Arc<GroupCredential>>,
    /// Calls in flight per executor address, shared by the group clients.
    lanes: Arc<Lanes>,
    /// The addresses that take `/runBatch`, each with its queue (`batch.rs`).
    batches: Arc<Batches>,
    timeout: Duration,
}

impl HttpExecutorClient {
    /// A client sending `access_token` (when set) with every call; `timeout` bounds connecting
    /// and the whole exchange, like upstream's `xxl.job.timeout`.
    pub fn new(access_token: Option<String>, timeout: Duration) -> Result<Self, ClientBuildError> {
        // One pooled client for all executors: reqwest keeps connections per host, which is
        // what upstream's per-address client cache achieves.
        // No redirects and no proxy from the environment: a trigger carries the access token,
        // secrets and GLUE source, and must reach the executor's own address or nobody; a
        // redirect would also turn the admin into a reader of internal pages (review H1, L2).
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()?;
        Ok(Self { http, access_token, group: None, lanes: Arc::default(), batches: Arc::default(), timeout })
    }

    /// POSTs `body` as JSON to `{address}/{method}` and decodes the envelope, reading at most
    /// `limit` bytes of the reply.
    async fn call<B, T>(&self, address: &str, method: &str, body: Option<&B>, limit: usize) -> Envelope<T>
    where
        B: Serialize + Sync + ?Sized,
        T: DeserializeOwned,
    {
        let url = endpoint(address, method);
        let body = match body.map(serde_json::to_vec).transpose() {
            Ok(body) => body,
            Err(e) => return Envelope::fail(format!("xxl-job remoting error({e}), for url : {url}")),
        };
        match self.exchange(address, &url, body, limit).await {
            Ok(reply) => decode(&reply.bytes, &url),
            Err(msg) => Envelope::fail(msg),
        }
    }

    /// One POST of `body` to `url` (an endpoint of `address`) within the call's timeout: the
    /// reply's body (at most `limit` bytes), or upstream's message for what went wrong.
    async fn exchange(
        &self,
        address: &str,
        url: &str,
        body: Option<Vec<u8>>,
        limit: usize,
    ) -> Result<Exchanged, String> {
        // The call's timeout covers the wait for a lane as well as the exchange.
        let deadline = tokio::time::Instant::now() + self.timeout;
        let lane = self.lanes.for_address(address.trim_end_matches('/'));
        let Ok(Ok(_permit)) = tokio::time::timeout_at(deadline, lane.acquire_owned()).await else {
            return Err(format!(
                "xxl-job remoting error(timed out waiting for one of the {CALLS_PER_ADDRESS} connections to the executor), for url : {url}"
            ));
        };
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut request =
            self.http.post(url).timeout(left).header("Content-Type", "application/json;charset=UTF-8");
        match (&self.group, &self.access_token) {
            (Some(group), _) => {
                request = request
                    .header(ACCESS_TOKEN_HEADER, group.token())
                    .header(APPNAME_HEADER, &group.app_name);
            }
            (None, Some(token)) => request = request.header(ACCESS_TOKEN_HEADER, token),
            (None, None) => {}
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response =
            request.send().await.map_err(|e| format!("xxl-job remoting error({e}), for url : {url}"))?;
        let status = response.status();
        if status != reqwest::StatusCode::OK {
            return Err(format!(
                "xxl-job remoting fail, StatusCode({}) invalid. for url : {url}",
                status.as_u16()
            ));
        }
        let offers_batches = response.headers().get(RUN_BATCH_HEADER).is_some_and(|v| v.as_bytes() == b"1");
        match read_capped(response, limit).await {
            Ok(Some(bytes)) => Ok(Exchanged { bytes, offers_batches }),
            Ok(None) => {
                Err(format!("xxl-job remoting (url={url}) response larger than {limit} bytes, not read."))
            }
            Err(e) => Err(format!("xxl-job remoting error({e}), for url : {url}")),
        }
    }

    /// A plain `/run` (or Gen C's `/trigger`): its reply, and whether the executor said it
    /// takes `/runBatch` too.
    async fn run_single(&self, address: &str, param: &TriggerParam) -> (ExecutorReply, bool) {
        match serde_json::to_vec(param) {
            Ok(body) => self.run_body(address, body).await,
            Err(e) => {
                (fail(format!("xxl-job remoting error({e}), for url : {}", endpoint(address, "run"))), false)
            }
        }
    }

    /// [`Self::run_single`] of a trigger already serialized.
    async fn run_body(&self, address: &str, body: Vec<u8>) -> (ExecutorReply, bool) {
        let method = if self.group.is_some() { "trigger" } else { "run" };
        let url = endpoint(address, method);
        match self.exchange(address, &url, Some(body), ACK_LIMIT).await {
            Ok(reply) => {
                let envelope: AckEnvelope = decode(&reply.bytes, &url);
                (ProbeResult { code: envelope.code, msg: envelope.msg }, reply.offers_batches)
            }
            Err(msg) => (fail(msg), false),
        }
    }

    async fn ack<B: Serialize + Sync + ?Sized>(
        &self,
        address: &str,
        method: &str,
        body: Option<&B>,
    ) -> ExecutorReply {
        let envelope: AckEnvelope = self.call(address, method, body, ACK_LIMIT).await;
        ProbeResult { code: envelope.code, msg: envelope.msg }
    }
}

/// The reply of `/run`, `/kill`, `/beat`, `/idleBeat` and `/wasmPrepare`: a small envelope.
const ACK_LIMIT: usize = 64 * 1024;
/// A `/log` page: executors send at most 1 MiB of content (jobwheel's page size), JSON-escaped.
const LOG_LIMIT: usize = 8 * 1024 * 1024;
/// A `/status` reply: running jobs and queues of one executor.
const STATUS_LIMIT: usize = 1024 * 1024;
/// An `/outstanding` reply: at most the log ids asked (20 digits and a comma each).
const OUTSTANDING_LIMIT: usize = 8 * 1024 * 1024;
/// How much of a reply that is not an envelope goes into the message (and so `triggerMsg`).
const EXCERPT_CHARS: usize = 200;

/// A reply as read: its body, and whether it offered `/runBatch` ([`RUN_BATCH_HEADER`]).
struct Exchanged {
    bytes: Vec<u8>,
    offers_batches: bool,
}

/// The envelope in `bytes`, or upstream's message for a reply that is not one.
fn decode<T: DeserializeOwned>(bytes: &[u8], url: &str) -> Envelope<T> {
    match serde_json::from_slice::<Envelope<T>>(bytes) {
        Ok(envelope) => envelope,
        Err(_) => Envelope::fail(format!(
            "xxl-job remoting (url={url}) response content invalid({}).",
            excerpt(bytes)
        )),
    }
}

/// A failed call's reply.
fn fail(msg: String) -> ExecutorReply {
    ExecutorReply { code: FAIL_CODE, msg: Some(msg) }
}

/// The body, or `None` once it passes `limit` bytes (the rest is never read).
async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// The first [`EXCERPT_CHARS`] characters of a reply, marked when cut.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() { format!("{head}… ({} bytes)", bytes.len()) } else { head }
}

/// `{address}/{method}` with exactly one `/` between them, so registered addresses with or
/// without a trailing slash, and with a path (`http://host/prefix/`), all work.
pub fn endpoint(address: &str, method: &str) -> String {
    format!("{}/{method}", address.trim_end_matches('/'))
}

#[async_trait]
impl Probe for HttpExecutorClient {
    async fn beat(&self, address: &str) -> ProbeResult {
        // Upstream ≥ 3.3 sends no body; executors ignore it either way.
        self.ack::<()>(address, "beat", None).await
    }

    async fn idle_beat(&self, address: &str, job_id: i32) -> ProbeResult {
        self.ack(address, "idleBeat", Some(&IdleBeatParam { job_id })).await
    }
}

#[async_trait]
impl ExecutorApi for HttpExecutorClient {
    async fn run(&self, address: &str, param: &TriggerParam) -> ExecutorReply {
        // Gen C (a group's own token) always goes one `/trigger` at a time.
        if self.group.is_none()
            && let Some(batcher) = self.batches.batcher(address)
        {
            return batcher.send(self, address, param).await;
        }
        let (reply, offers_batches) = self.run_single(address, param).await;
        if self.group.is_none() {
            self.batches.learn(address, offers_batches);
        }
        reply
    }

    async fn kill(&self, address: &str, job_id: i32) -> ExecutorReply {
        self.ack(address, "kill", Some(&KillParam { job_id })).await
    }

    async fn log(&self, address: &str, param: &LogParam) -> LogReply {
        let envelope: Envelope<LogResult> = self.call(address, "log", Some(param), LOG_LIMIT).await;
        let (code, msg) = (envelope.code, envelope.msg.clone());
        LogReply { code, msg, result: envelope.into_payload() }
    }

    async fn prepare_wasm(&self, address: &str, module: &WasmModuleRef) -> ExecutorReply {
        self.ack(address, "wasmPrepare", Some(module)).await
    }

    async fn status(&self, address: &str) -> Result<ExecutorStatus, String> {
        let envelope: Envelope<ExecutorStatus> =
            self.call::<(), _>(address, "status", None, STATUS_LIMIT).await;
        match (envelope.code, envelope.msg.clone(), envelope.into_payload()) {
            (200, _, Some(status)) => Ok(status),
            (200, _, None) => {
                Err("the executor does not report its status (not a jobwheel executor?)".to_owned())
            }
            (_, msg, _) => Err(msg.unwrap_or_else(|| "the executor refused".to_owned())),
        }
    }

    async fn outstanding(&self, address: &str, log_ids: &[i64]) -> Result<OutstandingRuns, String> {
        let query = OutstandingQuery { log_ids: log_ids.to_vec() };
        let envelope: Envelope<OutstandingRuns> =
            self.call(address, "outstanding", Some(&query), OUTSTANDING_LIMIT).await;
        match (envelope.code, envelope.msg.clone(), envelope.into_payload()) {
            (200, _, Some(runs)) => Ok(runs),
            (200, _, None) => Err("the executor does not report outstanding runs".to_owned()),
            (_, msg, _) => Err(msg.unwrap_or_else(|| "the executor refused".to_owned())),
        }
    }

    fn for_group(&self, credential: &Arc<GroupCredential>) -> Option<Arc<dyn ExecutorApi>> {
        // The same connection pool; only the credentials differ.
        Some(Arc::new(Self {
            http: self.http.clone(),
            access_token: None,
            group: Some(Arc::clone(credential)),
            lanes: Arc::clone(&self.lanes),
            batches: Arc::clone(&self.batches),
            timeout: self.timeout,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_CHARS, endpoint, excerpt};

    #[test]
    fn excerpts_are_bounded_and_say_how_much_was_cut() {
        assert_eq!(excerpt(b"<html>"), "<html>");
        let long = "x".repeat(10_000);
        let cut = excerpt(long.as_bytes());
        assert!(cut.starts_with(&"x".repeat(EXCERPT_CHARS)));
        assert!(cut.ends_with("… (10000 bytes)"), "{cut}");
    }

    #[test]
    fn endpoint_normalises_the_trailing_slash_and_keeps_paths() {
        assert_eq!(endpoint("http://10.0.0.5:9999/", "run"), "http://10.0.0.5:9999/run");
        assert_eq!(endpoint("http://10.0.0.5:9999", "run"), "http://10.0.0.5:9999/run");
        assert_eq!(endpoint("http://h/prefix/", "idleBeat"), "http://h/prefix/idleBeat");
        assert_eq!(endpoint("http://h/prefix", "log"), "http://h/prefix/log");
    }
}
