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
use jobwheel_protocol::envelope::{AckEnvelope, Envelope, FAIL_CODE};
use jobwheel_protocol::executor_api::{
    ExecutorStatus, IdleBeatParam, KillParam, LogParam, LogResult, OutstandingQuery, OutstandingRuns,
    TriggerParam, WasmModuleRef,
};
use jobwheel_protocol::flight::{ReplayReply, ReplayRequest};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::credentials::GroupCredential;
use crate::routing::{Probe, ProbeResult};
use batch::Batches;
use lanes::{CALLS_PER_ADDRESS, Lanes};
use reply::{
    ACK_LIMIT, Exchanged, LOG_LIMIT, OUTSTANDING_LIMIT, STATUS_LIMIT, address_key, decode, fail, read_capped,
    remoting_error,
};

pub use dial::{AlreadyConnected, DialHub, DialLink};
pub use reply::{endpoint, not_reached};

pub use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER, RUN_BATCH_HEADER};

mod batch;
mod dial;
mod lanes;
mod reply;

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
    /// Replays a recorded Wasm run on the executor at `address` (`/replay`, jobwheel executors),
    /// waiting up to `within` for it to load the module and run.
    async fn replay(
        &self,
        address: &str,
        request: &ReplayRequest,
        within: Duration,
    ) -> Result<ReplayReply, String> {
        let _ = (address, request, within);
        Err("not supported by this client".to_owned())
    }
    /// The client for the executors of a group with its own access token, or `None` when this
    /// client serves them as it is (test doubles).
    fn for_group(&self, credential: &Arc<GroupCredential>) -> Option<Arc<dyn ExecutorApi>> {
        let _ = credential;
        None
    }
    /// Whether a call to `address` can only fail from this admin: a dial-out executor with no
    /// live link here. Routing leaves such addresses out while another remains.
    fn unreachable_here(&self, address: &str) -> bool {
        let _ = address;
        false
    }
}

/// The payload of a jobwheel extension's reply; `Err` with the executor's message when it
/// refused, or with `missing` when it answered success without one (an upstream executor).
fn payload<T>(envelope: Envelope<T>, missing: &str) -> Result<T, String> {
    match (envelope.code, envelope.msg.clone(), envelope.into_payload()) {
        (200, _, Some(payload)) => Ok(payload),
        (200, _, None) => Err(missing.to_owned()),
        (_, msg, _) => Err(msg.unwrap_or_else(|| "the executor refused".to_owned())),
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
    /// The dial-out executors connected to this admin (`dial://` addresses).
    dial: Arc<DialHub>,
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
        Ok(Self {
            http,
            access_token,
            group: None,
            lanes: Arc::default(),
            batches: Arc::default(),
            dial: Arc::default(),
            timeout,
        })
    }

    /// The client calling dial-out executors through `hub`'s links (the edge attaches them).
    #[must_use]
    pub fn with_dial(mut self, hub: Arc<DialHub>) -> Self {
        self.dial = hub;
        self
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
            Err(e) => return Envelope::fail(remoting_error(e, &url)),
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
        self.exchange_by(address, url, body, limit, tokio::time::Instant::now() + self.timeout).await
    }

    /// [`Self::exchange`] that may take until `deadline` (a replay runs a job).
    async fn exchange_by(
        &self,
        address: &str,
        url: &str,
        body: Option<Vec<u8>>,
        limit: usize,
        deadline: tokio::time::Instant,
    ) -> Result<Exchanged, String> {
        let lane = self.lanes.for_address(address_key(address));
        let Ok(Ok(_permit)) = tokio::time::timeout_at(deadline, lane.acquire_owned()).await else {
            let why =
                format!("timed out waiting for one of the {CALLS_PER_ADDRESS} connections to the executor");
            return Err(remoting_error(why, url));
        };
        let token = match (&self.group, &self.access_token) {
            (Some(group), _) => Some(group.token()),
            (None, token) => token.as_deref(),
        };
        let app_name = self.group.as_ref().map(|group| group.app_name.as_str());
        if jobwheel_protocol::dial::is_dial(address) {
            let method = url.rsplit('/').next().unwrap_or_default();
            let callee = dial::Callee { address, url, method, token, app_name };
            return self.dial.exchange(&callee, body, limit, deadline).await;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let mut request =
            self.http.post(url).timeout(left).header("Content-Type", "application/json;charset=UTF-8");
        if let Some(token) = token {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        if let Some(app_name) = app_name {
            request = request.header(APPNAME_HEADER, app_name);
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let response = request.send().await.map_err(|e| remoting_error(e, url))?;
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
            Err(e) => Err(remoting_error(e, url)),
        }
    }

    /// A plain `/run` (or Gen C's `/trigger`): its reply, and whether the executor said it
    /// takes `/runBatch` too.
    async fn run_single(&self, address: &str, param: &TriggerParam) -> (ExecutorReply, bool) {
        match serde_json::to_vec(param) {
            Ok(body) => self.run_body(address, body).await,
            Err(e) => (fail(remoting_error(e, &endpoint(address, "run"))), false),
        }
    }

    /// [`Self::run_single`] of a trigger already serialized.
    async fn run_body(&self, address: &str, body: Vec<u8>) -> (ExecutorReply, bool) {
        let method = if self.group.is_some() { "trigger" } else { "run" };
        let url = endpoint(address, method);
        match self.exchange(address, &url, Some(body), ACK_LIMIT).await {
            Ok(reply) => {
                let envelope: AckEnvelope = decode(&reply.bytes, &url);
                (envelope.into(), reply.offers_batches)
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
        envelope.into()
    }
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
        if self.group.is_some() {
            return self.run_single(address, param).await.0;
        }
        if let Some(batcher) = self.batches.batcher(address) {
            return batcher.send(self, address, param).await;
        }
        let (reply, offers_batches) = self.run_single(address, param).await;
        self.batches.learn(address, offers_batches);
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
        payload(envelope, "the executor does not report its status (not a jobwheel executor?)")
    }

    async fn outstanding(&self, address: &str, log_ids: &[i64]) -> Result<OutstandingRuns, String> {
        let query = OutstandingQuery { log_ids: log_ids.to_vec() };
        let envelope: Envelope<OutstandingRuns> =
            self.call(address, "outstanding", Some(&query), OUTSTANDING_LIMIT).await;
        payload(envelope, "the executor does not report outstanding runs")
    }

    async fn replay(
        &self,
        address: &str,
        request: &ReplayRequest,
        within: Duration,
    ) -> Result<ReplayReply, String> {
        let url = endpoint(address, "replay");
        let body = serde_json::to_vec(request).map_err(|e| remoting_error(e, &url))?;
        let deadline = tokio::time::Instant::now() + within;
        let reply = self.exchange_by(address, &url, Some(body), LOG_LIMIT, deadline).await?;
        let envelope: Envelope<ReplayReply> = decode(&reply.bytes, &url);
        payload(envelope, "the executor does not replay runs (not a jobwheel executor?)")
    }

    fn unreachable_here(&self, address: &str) -> bool {
        jobwheel_protocol::dial::is_dial(address) && !self.dial.is_connected(address)
    }

    fn for_group(&self, credential: &Arc<GroupCredential>) -> Option<Arc<dyn ExecutorApi>> {
        // The same connection pool; only the credentials differ.
        Some(Arc::new(Self {
            http: self.http.clone(),
            access_token: None,
            group: Some(Arc::clone(credential)),
            lanes: Arc::clone(&self.lanes),
            batches: Arc::clone(&self.batches),
            dial: Arc::clone(&self.dial),
            timeout: self.timeout,
        }))
    }
}
