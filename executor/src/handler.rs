//! The handler API: what a BEAN job implements and the context every run receives.
//!
//! This is the Rust equivalent of upstream's `IJobHandler` + `XxlJobHelper`: a handler gets a
//! [`JobContext`] carrying the trigger's parameter, shard and ids, writes to the run's job log
//! through it, and ends with `Ok(())` (success unless it called `handle_fail`/`handle_timeout`) or
//! `Err(e)` (failure with `e` as message). Script and Wasm GLUE are handlers too.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use jobwheel_protocol::{HandleCode, WasmGrant};
use tokio_util::sync::CancellationToken;

use crate::joblog::JobLog;

/// What a handler's `execute` returns: `Err` fails the run with the error's message.
pub type JobResult = anyhow::Result<()>;

/// A boxed, sendable handler future.
pub type HandlerFuture = Pin<Box<dyn Future<Output = JobResult> + Send + 'static>>;

/// A job implementation. Implemented for every `Fn(JobContext) -> impl Future<Output = JobResult>`.
pub trait JobHandler: Send + Sync + 'static {
    /// Runs one trigger. Long-running handlers should watch [`JobContext::stopped`]; a handler
    /// that ignores it is dropped (cancelled at its next `.await`) after a short grace period.
    fn execute(&self, ctx: JobContext) -> HandlerFuture;

    /// Called once when a job thread starts using this handler (upstream `init`).
    fn init(&self) {}

    /// Called once when that job thread ends (upstream `destroy`).
    fn destroy(&self) {}
}

impl<F, Fut> JobHandler for F
where
    F: Fn(JobContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = JobResult> + Send + 'static,
{
    fn execute(&self, ctx: JobContext) -> HandlerFuture {
        Box::pin(self(ctx))
    }
}

/// Named BEAN handlers, as registered by the program embedding the executor.
#[derive(Clone, Default)]
pub struct Handlers {
    by_name: HashMap<String, Arc<dyn JobHandler>>,
}

impl Handlers {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `handler` under `name` (the job's `executorHandler`), replacing any previous one.
    pub fn register(&mut self, name: impl Into<String>, handler: impl JobHandler) -> &mut Self {
        self.by_name.insert(name.into(), Arc::new(handler));
        self
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn JobHandler>> {
        self.by_name.get(name).cloned()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<_> = self.names().collect();
        names.sort_unstable();
        f.debug_struct("Handlers").field("names", &names).finish()
    }
}

/// The trigger's identity as seen by a handler.
#[derive(Debug, Clone)]
pub(crate) struct RunInfo {
    pub(crate) job_id: i32,
    pub(crate) log_id: i64,
    pub(crate) log_date_time: i64,
    pub(crate) param: String,
    pub(crate) shard_index: i32,
    pub(crate) shard_total: i32,
    /// The Wasm job's grants (policy, variables, secrets, limits), if the trigger had any.
    pub(crate) wasm_grant: Option<Arc<WasmGrant>>,
    /// The workflow instance's context, when the run is a workflow node.
    pub(crate) workflow_context: Option<Arc<serde_json::Value>>,
    /// The map item, when the run is one item of a workflow map node.
    pub(crate) workflow_item: Option<Arc<serde_json::Value>>,
    /// The fire's key (`TriggerParam::fire_key`; `log:<log id>` from an admin that sends none).
    pub(crate) fire_key: String,
    /// When the fire was scheduled for, epoch ms (the trigger time when not sent).
    pub(crate) scheduled_time: i64,
}

/// Everything a handler may read or report about the run it is executing. Cheap to clone;
/// clones share the log and the result.
#[derive(Clone)]
pub struct JobContext {
    inner: Arc<ContextInner>,
}

struct ContextInner {
    info: RunInfo,
    log: JobLog,
    /// The result set by `handle_*`; `None` means "success, no message" (upstream's default).
    result: Mutex<Option<(HandleCode, Option<String>)>>,
    /// The workflow output set by `set_output`, as JSON text.
    output: Mutex<Option<String>>,
    /// The run's flight record (JSON), when a Wasm run was recorded.
    flight: Mutex<Option<String>>,
    /// Cancelled when the run must stop: timeout, `/kill`, `COVER_EARLY`, or shutdown.
    stop: CancellationToken,
}

impl JobContext {
    pub(crate) fn new(info: RunInfo, log: JobLog, stop: CancellationToken) -> Self {
        Self {
            inner: Arc::new(ContextInner {
                info,
                log,
                result: Mutex::new(None),
                output: Mutex::new(None),
                flight: Mutex::new(None),
                stop,
            }),
        }
    }

    pub fn job_id(&self) -> i32 {
        self.inner.info.job_id
    }

    pub fn log_id(&self) -> i64 {
        self.inner.info.log_id
    }

    /// Epoch milliseconds of the log's trigger time.
    pub fn log_date_time(&self) -> i64 {
        self.inner.info.log_date_time
    }

    /// The fire's key: the same when the same fire is delivered again (the same job, scheduled
    /// second and shard, or the same workflow node run), different for a retry, a manual run
    /// or any other fire of its own (docs/engine.md, "The per-fire key"). A handler with side
    /// effects keys them on it to do them once.
    pub fn fire_key(&self) -> &str {
        &self.inner.info.fire_key
    }

    /// When the fire was scheduled for, epoch ms: the scheduled second of a schedule's fire
    /// even when it runs late or is sent again, the trigger time of any other fire.
    pub fn scheduled_time(&self) -> i64 {
        self.inner.info.scheduled_time
    }

    /// The job parameter (`executorParams`); empty when none was given.
    pub fn param(&self) -> &str {
        &self.inner.info.param
    }

    /// 0-based shard index (0 for non-broadcast jobs).
    pub fn shard_index(&self) -> i32 {
        self.inner.info.shard_index
    }

    /// Shard total (1 for non-broadcast jobs).
    pub fn shard_total(&self) -> i32 {
        self.inner.info.shard_total
    }

    /// The Wasm job's grants carried by the trigger.
    pub(crate) fn wasm_grant(&self) -> Option<&WasmGrant> {
        self.inner.info.wasm_grant.as_deref()
    }

    /// The context of the workflow instance this run is a node of: a JSON object holding the
    /// instance's start input and each finished node's output under the node's name
    /// (docs/workflows.md). `None` when the run is not a workflow node.
    pub fn workflow_context(&self) -> Option<&serde_json::Value> {
        self.inner.info.workflow_context.as_deref()
    }

    /// The item this run is for, when it is one item of a workflow map node (one element of the
    /// array the node maps over); such a run gets no context. `None` otherwise.
    pub fn workflow_item(&self) -> Option<&serde_json::Value> {
        self.inner.info.workflow_item.as_deref()
    }

    /// Sets this run's workflow output: merged into the instance's context under the node's
    /// name when the run succeeds, and so handed to the nodes after it. At most
    /// [`jobwheel_protocol::MAX_WORKFLOW_OUTPUT`] bytes of JSON, or the run fails; ignored when
    /// the run is not a workflow node. A later call replaces an earlier one.
    pub fn set_output(&self, output: &serde_json::Value) {
        *self.inner.output.lock().unwrap_or_else(|e| e.into_inner()) = Some(output.to_string());
    }

    /// The workflow output set so far, as JSON text.
    pub(crate) fn output(&self) -> Option<String> {
        self.inner.output.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Sets the run's flight record (JSON), sent to the admin with the result.
    pub(crate) fn set_flight(&self, record: String) {
        *self.inner.flight.lock().unwrap_or_else(|e| e.into_inner()) = Some(record);
    }

    /// The flight record set, taken.
    pub(crate) fn take_flight(&self) -> Option<String> {
        self.inner.flight.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Appends a timestamped line to this run's job log (upstream `XxlJobHelper.log`).
    pub fn log(&self, message: impl AsRef<str>) {
        self.inner.log.line(message.as_ref());
    }

    /// Appends text to the job log verbatim, without a timestamp (used for script output).
    pub fn log_raw(&self, text: &str) {
        self.inner.log.raw(text);
    }

    pub fn handle_success(&self, message: impl Into<String>) {
        self.set_result(HandleCode::Success, Some(message.into()));
    }

    pub fn handle_fail(&self, message: impl Into<String>) {
        self.set_result(HandleCode::Fail, Some(message.into()));
    }

    pub fn handle_timeout(&self, message: impl Into<String>) {
        self.set_result(HandleCode::Timeout, Some(message.into()));
    }

    /// Resolves when the run has been asked to stop (timeout, kill, cover, shutdown).
    pub async fn stopped(&self) {
        self.inner.stop.cancelled().await;
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stop.is_cancelled()
    }

    /// The run's stop token, for runtimes that take one (the Wasm runtime).
    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.inner.stop.clone()
    }

    pub(crate) fn set_result(&self, code: HandleCode, message: Option<String>) {
        let mut result = self.inner.result.lock().unwrap_or_else(|e| e.into_inner());
        *result = Some((code, message));
    }

    pub(crate) fn result(&self) -> Option<(HandleCode, Option<String>)> {
        self.inner.result.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl fmt::Debug for JobContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext").field("info", &self.inner.info).finish_non_exhaustive()
    }
}
