//! `GLUE_WASM`: runs a job's WebAssembly module in the sandboxed runtime of `jobwheel-wasm`.
//!
//! The trigger names the module by SHA-256 digest and says where the admin serves it. The
//! runtime fetches it only on a cache miss (memory, then the on-disk cache of compiled
//! artifacts), checks the digest, and compiles it once; a new upload is a new digest, so the
//! next trigger runs the new version with no restart while runs in flight keep theirs.
//!
//! Modules come through the executor's one admin client (`admin_client.rs`), which sends the
//! access token only to configured admins.

use anyhow::{Context as _, bail};
use jobwheel_protocol::{WasmGrant, WasmModuleRef};
use jobwheel_wasm::{
    Flight, FlightRecord, FlightReport, GuestLines, LoadSource, LogSink, NetGrant, NetLimits, NetPolicy,
    Outcome, RunInput, Runtime, summarize,
};
use std::sync::Arc;
use std::time::Duration;

use crate::admin_client::AdminClient;
use crate::handler::{HandlerFuture, JobContext, JobHandler};
use crate::metrics::ExecutorMetrics;

/// Everything GLUE_WASM handlers share: the runtime (engine + caches) and the admin client
/// that downloads modules.
pub(crate) struct WasmGlue {
    pub(super) runtime: Runtime,
    admins: AdminClient,
    max_module_bytes: u64,
    metrics: Arc<ExecutorMetrics>,
    /// One replay at a time (`replay.rs`).
    pub(super) replays: tokio::sync::Semaphore,
}

impl WasmGlue {
    pub(crate) fn new(
        runtime: Runtime,
        admins: AdminClient,
        max_module_bytes: u64,
        metrics: Arc<ExecutorMetrics>,
    ) -> Self {
        Self { runtime, admins, max_module_bytes, metrics, replays: tokio::sync::Semaphore::new(1) }
    }

    pub(super) async fn fetch(&self, reference: &WasmModuleRef) -> anyhow::Result<Vec<u8>> {
        self.admins.download_module(reference, self.max_module_bytes).await
    }

    /// Fetches and compiles `reference` in the background (a jobwheel admin's `/wasmPrepare`
    /// after an upload), so the first trigger of a new version finds it compiled — or joins
    /// the compile in flight — instead of paying for it. The same path as a trigger's load:
    /// only configured admins are fetched from, the digest is checked, the result cached.
    pub(crate) fn prepare(self: &Arc<Self>, reference: WasmModuleRef) {
        let glue = Arc::clone(self);
        tokio::spawn(async move {
            match glue.runtime.module(&reference.digest, || glue.fetch(&reference)).await {
                Ok(load) => {
                    glue.metrics.module_load(load.source);
                    tracing::info!(digest = %reference.digest, source = ?load.source, "wasm module prepared")
                }
                Err(error) => {
                    tracing::warn!(digest = %reference.digest, %error, "cannot prepare wasm module")
                }
            }
        });
    }
}

/// The handler of one job thread running one module version.
pub(crate) struct WasmHandler {
    glue: Arc<WasmGlue>,
    module: WasmModuleRef,
}

impl WasmHandler {
    pub(crate) fn new(glue: Arc<WasmGlue>, module: WasmModuleRef) -> Self {
        Self { glue, module }
    }
}

impl JobHandler for WasmHandler {
    fn execute(&self, ctx: JobContext) -> HandlerFuture {
        let glue = Arc::clone(&self.glue);
        let module = self.module.clone();
        Box::pin(async move { run_module(glue, module, ctx).await })
    }
}

async fn run_module(glue: Arc<WasmGlue>, reference: WasmModuleRef, ctx: JobContext) -> anyhow::Result<()> {
    // The load runs as its own task: a stop during a slow first compile returns at once, and
    // the compile still finishes and lands in the cache for the next trigger.
    let loading = tokio::spawn({
        let (glue, reference) = (Arc::clone(&glue), reference.clone());
        async move { glue.runtime.module(&reference.digest, || glue.fetch(&reference)).await }
    });
    let load = tokio::select! {
        load = loading => load
            .context("module load task failed")?
            .with_context(|| format!("cannot load wasm module {}", reference.digest))?,
        () = ctx.stopped() => bail!("stopped while loading wasm module {}", reference.digest),
    };
    glue.metrics.module_load(load.source);
    let how = match load.source {
        LoadSource::Memory => "compiled module cached in memory",
        LoadSource::Disk => "compiled module loaded from the disk cache",
        LoadSource::Compiled => "module fetched from the admin and compiled",
    };
    ctx.log(format!("----------- wasm module sha256:{} ({how}) -----------", reference.digest));

    let mut input = RunInput {
        job_id: ctx.job_id(),
        log_id: ctx.log_id(),
        param: ctx.param().to_owned(),
        shard_index: ctx.shard_index(),
        shard_total: ctx.shard_total(),
        // The job thread enforces `executorTimeout` and cancels the run through the stop token.
        timeout: None,
        workflow_context: ctx.workflow_context().map(ToString::to_string),
        workflow_item: ctx.workflow_item().map(ToString::to_string),
        fire_key: ctx.fire_key().to_owned(),
        scheduled_time: ctx.scheduled_time(),
        ..RunInput::default()
    };
    if let Some(grant) = ctx.wasm_grant() {
        if let Err(message) = apply_grant(&mut input, grant) {
            ctx.handle_fail(message);
            return Ok(());
        }
        if input.network.is_some() && !load.module.is_component() {
            ctx.log("the job's network policy does not apply: a preview1 module has no wasi:http; build the job as a WASI 0.2 component (e.g. --target wasm32-wasip2) to make requests");
        }
    }
    let cap = ctx.wasm_grant().and_then(|grant| grant.flight.as_ref()).map(|flight| {
        // A digest key that is not hex still keys the digests (as its text): recording goes on.
        let key = hex::decode(&flight.digest_key).unwrap_or_else(|_| flight.digest_key.as_bytes().to_vec());
        input.flight = Flight::Record { secret_key: key, max_body_bytes: flight.max_bytes };
        usize::try_from(flight.max_bytes).unwrap_or(usize::MAX)
    });
    let sink_ctx = ctx.clone();
    let sink: Arc<dyn LogSink> = Arc::new(move |line: &str| sink_ctx.log_raw(line));
    let lines = GuestLines::new(sink, 0);
    // The runtime ends every run's log with a `[jobwheel] fuel used …, peak memory …` line.
    let report = glue.runtime.run(&load.module, input, lines.clone(), ctx.stop_token()).await;
    glue.metrics.wasm_run(&report.stats);
    if let (Some(cap), Some(FlightReport::Recorded(journal))) = (cap, &report.flight) {
        let mut journal = (**journal).clone();
        if matches!(report.outcome, Outcome::Cancelled | Outcome::TimedOut { .. })
            && journal.not_replayable.is_none()
        {
            journal.not_replayable = Some(
                "the run was stopped before it ended (a timeout or a kill): where it stopped depends on wall time"
                    .to_owned(),
            );
        }
        let record =
            FlightRecord { module: reference.digest.clone(), summary: summarize(&report, &lines), journal };
        ctx.set_flight(record.to_json_capped(cap));
    }
    if let Some(output) = report.workflow_output.as_deref().map(str::trim).filter(|o| !o.is_empty()) {
        // JSON when it parses, else the text; over the limit the worker refuses it.
        let value =
            serde_json::from_str(output).unwrap_or_else(|_| serde_json::Value::String(output.to_owned()));
        ctx.set_output(&value);
    }
    match report.outcome {
        Outcome::Succeeded { message } => {
            if let Some(message) = message {
                ctx.handle_success(message);
            }
            Ok(())
        }
        Outcome::Failed { message, .. } => {
            ctx.handle_fail(message);
            Ok(())
        }
        Outcome::TimedOut { limit } => {
            ctx.handle_timeout(format!("wasm run exceeded {limit:?}"));
            Ok(())
        }
        Outcome::Cancelled => bail!("wasm run stopped"),
    }
}

/// Puts the trigger's grants into the run's input: variables and secrets as environment
/// variables (secret values masked in the log), per-job limits, the network policy. The runtime
/// caps every limit by the executor's ceilings.
fn apply_grant(input: &mut RunInput, grant: &WasmGrant) -> Result<(), String> {
    input.env = grant.vars.iter().chain(&grant.secrets).map(|(k, v)| (k.clone(), v.clone())).collect();
    input.masked = grant.secrets.values().cloned().collect();
    input.fuel = grant.fuel;
    input.max_memory_bytes = grant.memory_bytes.map(|bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
    if !grant.http_allow.is_empty() {
        let policy = NetPolicy::parse(&grant.http_allow).map_err(|error| format!("the job's {error}"))?;
        let defaults = NetLimits::default();
        let limits = NetLimits {
            max_requests: grant.http_max_requests.unwrap_or(defaults.max_requests),
            max_response_bytes: grant.http_max_response_bytes.unwrap_or(defaults.max_response_bytes),
            request_timeout: grant.http_timeout_ms.map_or(defaults.request_timeout, Duration::from_millis),
        };
        input.network = Some(NetGrant { policy: Arc::new(policy), limits });
    }
    Ok(())
}
