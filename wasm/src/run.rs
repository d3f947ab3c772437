//! One sandboxed run: a fresh store (WASI preview1 for a module, WASI 0.2 for a component; no
//! dirs, no host env, no sockets, no inherited stdio, `wasi:http` only through the policy),
//! limits and fuel, raced against cancellation and the optional timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::abi;
use crate::component::{self, COMPONENT_INSTANCES, COMPONENT_TABLES, ComponentState};
use crate::config::{Metering, RuntimeConfig};
use crate::journal::{Flight, Recorder};
use crate::limiter::RunLimiter;
use crate::loader::{LoadedModule, Prepared};
use crate::net::NetGrant;
use crate::net::hooks::PolicyHooks;
use crate::outcome::{self, FailureKind, Outcome, RunFacts, RunReport, RunStats};
use crate::output::{CaptureSummary, LogSink, OutputCapture, OutputLimits, Stream};
use crate::pool::{MODULE_TABLES, NoSlot};
use crate::runtime::Runtime;

/// What one run of a job receives (see `docs/guest-abi.md` for how the guest sees it).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunInput {
    /// The job's id.
    pub job_id: i32,
    /// The log (run) id of this trigger.
    pub log_id: i64,
    /// The job parameter; must not contain NUL bytes (WASI strings are NUL-terminated).
    pub param: String,
    /// 0-based shard index of this executor.
    pub shard_index: i32,
    /// Number of shards (1 when not sharding).
    pub shard_total: i32,
    /// Wall-clock limit for the run; `None` means only cancellation and fuel stop it.
    pub timeout: Option<Duration>,
    /// Extra environment variables (the job's variables and secrets), set after the ABI's own
    /// so they cannot shadow them.
    pub env: Vec<(String, String)>,
    /// Values masked as `****` wherever guest output contains them (secret values).
    pub masked: Vec<String>,
    /// The job's outbound HTTP grant; `None` refuses every request. Modules cannot make
    /// requests at all (preview1 has no `wasi:http`).
    pub network: Option<NetGrant>,
    /// The job's fuel budget; `None` = the runtime's. Capped by the runtime's budget.
    pub fuel: Option<u64>,
    /// The job's memory limit in bytes; `None` = the runtime's. Capped by the runtime's limit.
    pub max_memory_bytes: Option<usize>,
    /// The workflow instance's context (JSON text) when the run is a workflow node: the guest
    /// reads it from `JOBWHEEL_WORKFLOW_CONTEXT`.
    pub workflow_context: Option<String>,
    /// The map item this run is for (JSON text), when it is one; the guest reads it from
    /// `JOBWHEEL_WORKFLOW_ITEM`.
    pub workflow_item: Option<String>,
    /// The fire's key (docs/engine.md, "The per-fire key"): `JOBWHEEL_FIRE_KEY`.
    pub fire_key: String,
    /// When the fire was scheduled for, epoch ms: `JOBWHEEL_SCHEDULED_TIME`.
    pub scheduled_time: i64,
    /// Whether the run is journaled or replayed (`journal.rs`, docs/replay.md).
    pub flight: Flight,
}

/// Per-store data of a module run: the WASI context and the resource limiter.
pub(crate) struct RunState {
    pub(crate) wasi: WasiP1Ctx,
    limiter: RunLimiter,
}

/// How the race between the guest, the timeout and cancellation ended.
enum Ended {
    Finished(wasmtime::Result<()>),
    InstantiateFailed(wasmtime::Error),
    TimedOut(Duration),
    Cancelled,
}

/// What the store knows once the run is over.
struct StoreEnd {
    fuel_left: Option<u64>,
    limiter: RunLimiter,
}

impl Runtime {
    /// Runs `module` once in a fresh sandbox and reports how it ended.
    ///
    /// Never fails: traps, non-zero exits, OOM, fuel exhaustion, timeout and cancellation are
    /// all [`Outcome`]s. Guest stdout/stderr lines go to `log` (bounded by
    /// `max_output_bytes`), followed by one `[jobwheel]` line with the run's stats.
    /// Cancelling `cancel` stops the guest at its next fuel yield or epoch tick.
    pub async fn run(
        &self,
        module: &LoadedModule,
        input: RunInput,
        log: Arc<dyn LogSink>,
        cancel: CancellationToken,
    ) -> RunReport {
        let started = Instant::now();
        let config = &self.inner.config;
        let capture = OutputCapture::new(
            log,
            OutputLimits {
                max_output_bytes: config.max_output_bytes,
                max_line_bytes: config.max_line_bytes,
                max_result_message_bytes: config.max_result_message_bytes,
            },
            input.masked.clone(),
        );
        if let Some(message) = bad_input(&input) {
            let summary = capture.finish();
            let outcome = outcome::failed(FailureKind::BadInput, message, &summary);
            let stats = RunStats { wall_time: started.elapsed(), ..RunStats::default() };
            return RunReport { outcome, stats, workflow_output: None, flight: None };
        }

        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(capture.stream(Stream::Stdout))
            .stderr(capture.stream(Stream::Stderr))
            .args(&[abi::ARGV0, input.param.as_str()])
            .env(abi::ENV_PARAM, &input.param)
            .env(abi::ENV_JOB_ID, input.job_id.to_string())
            .env(abi::ENV_LOG_ID, input.log_id.to_string())
            .env(abi::ENV_SHARD_INDEX, input.shard_index.to_string())
            .env(abi::ENV_SHARD_TOTAL, input.shard_total.to_string())
            .env(abi::ENV_FIRE_KEY, &input.fire_key)
            .env(abi::ENV_SCHEDULED_TIME, input.scheduled_time.to_string());
        if let Some(item) = &input.workflow_item {
            wasi.env(abi::ENV_WORKFLOW_ITEM, item);
        }
        if let Some(context) = &input.workflow_context {
            wasi.env(abi::ENV_WORKFLOW_CONTEXT, context);
        }
        for (key, value) in &input.env {
            if !abi::is_reserved_env(key) {
                wasi.env(key, value);
            }
        }
        let recorder = Recorder::start(&input, &mut wasi);
        let max_memory_bytes =
            input.max_memory_bytes.map_or(config.max_memory_bytes, |m| m.min(config.max_memory_bytes));
        let fuel_budget = match config.metering {
            Metering::Fuel { budget, .. } => Some(input.fuel.map_or(budget, |fuel| fuel.min(budget))),
            Metering::Off => None,
        };

        // The timeout counts from here, so a wait for a pool slot is part of it.
        let deadline = input.timeout.map(|limit| (tokio::time::Instant::now() + limit, limit));
        let waiting = |slots| {
            capture.note(&format!("waiting for a free Wasm slot: all {slots} are in use by other runs"));
        };
        let slot = self.inner.slots.acquire(deadline.map(|(at, _)| at), &cancel, waiting).await;
        let (ended, end) = match (slot, &module.prepared) {
            (Err(no_slot), _) => {
                let ended = match (no_slot, deadline) {
                    (NoSlot::TimedOut, Some((_, limit))) => Ended::TimedOut(limit),
                    _ => Ended::Cancelled,
                };
                let limiter = RunLimiter::new(max_memory_bytes, config.max_table_elements, 1, MODULE_TABLES);
                (ended, StoreEnd { fuel_left: None, limiter })
            }
            // `_slot` is dropped at the end of its arm, after the store: the instance's pool
            // memory is back before another run may take the slot.
            (Ok(_slot), Prepared::Module(pre)) => {
                let limiter = RunLimiter::new(max_memory_bytes, config.max_table_elements, 1, MODULE_TABLES);
                let mut store = Store::new(&self.inner.engine, RunState { wasi: wasi.build_p1(), limiter });
                store.limiter(|state| &mut state.limiter);
                configure(&mut store, config, fuel_budget);
                let work = async {
                    let instance = match pre.instantiate_async(&mut store).await {
                        Ok(instance) => instance,
                        Err(error) => return Ended::InstantiateFailed(error),
                    };
                    let entry = match instance.get_typed_func::<(), ()>(&mut store, abi::ENTRY_EXPORT) {
                        Ok(entry) => entry,
                        Err(error) => return Ended::Finished(Err(error)),
                    };
                    Ended::Finished(entry.call_async(&mut store, ()).await)
                };
                let ended = race(work, deadline, &cancel).await;
                let fuel_left = store.get_fuel().ok();
                (ended, StoreEnd { fuel_left, limiter: store.into_data().limiter })
            }
            (Ok(_slot), Prepared::Component(pre)) => {
                let limiter = RunLimiter::new(
                    max_memory_bytes,
                    config.max_table_elements,
                    COMPONENT_INSTANCES,
                    COMPONENT_TABLES,
                );
                // A replay reaches no network: every request is refused.
                let grant = input.network.as_ref().filter(|_| !recorder.is_replay()).map(
                    |NetGrant { policy, limits }| (Arc::clone(policy), limits.capped_by(config.http_limits)),
                );
                let hooks = PolicyHooks::new(
                    grant,
                    Arc::clone(&config.http_allow),
                    capture.clone(),
                    recorder.clone(),
                );
                let state = ComponentState::new(wasi.build(), hooks, limiter);
                let mut store = Store::new(&self.inner.engine, state);
                store.limiter(|state| &mut state.limiter);
                configure(&mut store, config, fuel_budget);
                let work = async {
                    match component::call(pre, &mut store).await {
                        Ok(()) => Ended::Finished(Ok(())),
                        Err(component::Failure::Instantiate(error)) => Ended::InstantiateFailed(error),
                        Err(component::Failure::Run(error)) => Ended::Finished(Err(error)),
                    }
                };
                let ended = race(work, deadline, &cancel).await;
                let fuel_left = store.get_fuel().ok();
                (ended, StoreEnd { fuel_left, limiter: store.into_data().limiter })
            }
        };

        let summary = capture.finish();
        let limiter = &end.limiter;
        let facts = RunFacts {
            fuel_budget,
            max_wasm_stack: config.max_wasm_stack,
            max_memory_bytes: limiter.max_memory_bytes(),
            denied_memory_bytes: limiter.denied_memory_bytes(),
            max_table_elements: limiter.max_table_elements(),
            denied_table_elements: limiter.denied_table_elements(),
        };
        if let Some(wanted) = facts.denied_table_elements {
            // The guest only sees `table.grow` return -1; say why in the job log.
            capture.note(&format!(
                "table growth refused: the guest asked for {wanted} table elements, over the limit of {}",
                facts.max_table_elements
            ));
        }
        let outcome = match ended {
            Ended::Finished(result) => outcome::classify(result, &facts, &summary),
            Ended::InstantiateFailed(error) => classify_instantiate(error, &facts, &summary),
            Ended::TimedOut(limit) => Outcome::TimedOut { limit },
            Ended::Cancelled => Outcome::Cancelled,
        };
        let fuel_used =
            fuel_budget.map_or(0, |budget| budget.saturating_sub(end.fuel_left.unwrap_or(budget)));
        let stats = RunStats {
            fuel_used,
            peak_memory_bytes: limiter.peak_memory_bytes(),
            wall_time: started.elapsed(),
            output_bytes: summary.output_bytes,
            output_truncated: summary.truncated,
            http_allowed: summary.http_allowed,
            http_denied: summary.http_denied,
        };
        capture.final_note(&stats.to_string());
        RunReport { outcome, stats, workflow_output: summary.workflow_output, flight: recorder.report() }
    }
}

/// Input a guest cannot be given, in words for the job log.
fn bad_input(input: &RunInput) -> Option<String> {
    if input.workflow_item.as_deref().is_some_and(|c| c.contains('\0')) {
        return Some("the workflow item contains a NUL byte, which WASI cannot pass to a guest".to_owned());
    }
    if input.workflow_context.as_deref().is_some_and(|c| c.contains('\0')) {
        return Some(
            "the workflow context contains a NUL byte, which WASI cannot pass to a guest".to_owned(),
        );
    }
    if input.param.contains('\0') {
        return Some("the job parameter contains a NUL byte, which WASI cannot pass to a guest".to_owned());
    }
    input
        .env
        .iter()
        .find(|(key, value)| key.is_empty() || key.contains(['=', '\0']) || value.contains('\0'))
        .map(|(key, _)| {
            format!("the variable `{key}` cannot be passed to a guest (empty name, `=` or a NUL byte)")
        })
}

/// Fuel and epochs, the same for both kinds of store.
fn configure<T>(store: &mut Store<T>, config: &RuntimeConfig, fuel_budget: Option<u64>) {
    if let (Metering::Fuel { yield_interval, .. }, Some(budget)) = (config.metering, fuel_budget) {
        // Both only fail when fuel is disabled in the engine, which `Metering::Fuel` rules
        // out; a failure here would surface as an immediate out-of-fuel trap.
        let set = store.set_fuel(budget).and_then(|()| store.fuel_async_yield_interval(Some(yield_interval)));
        if let Err(error) = set {
            tracing::error!(error = format!("{error:#}"), "cannot configure fuel for a run");
        }
    }
    if config.epoch_tick.is_some() {
        // Yield (not trap) at every tick: the epoch is a fairness and cancellation backstop,
        // the deadline itself is enforced by the timeout in `race`.
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
    }
}

/// Runs `work` until it ends, the deadline passes or `cancel` fires.
async fn race(
    work: impl Future<Output = Ended>,
    deadline: Option<(tokio::time::Instant, Duration)>,
    cancel: &CancellationToken,
) -> Ended {
    let deadline = async {
        match deadline {
            Some((at, limit)) => {
                tokio::time::sleep_until(at).await;
                limit
            }
            None => std::future::pending().await,
        }
    };
    // `biased`: check cancellation first on every wake-up, so a guest that yields constantly
    // cannot starve it. Dropping `work` is wasmtime's supported abort.
    tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Cancelled,
        limit = deadline => Ended::TimedOut(limit),
        ended = work => ended,
    }
}

/// Instantiation fails either in the guest (a trap in a start function) or before it runs
/// (the module's initial memory or tables exceed the limits).
fn classify_instantiate(error: wasmtime::Error, facts: &RunFacts, summary: &CaptureSummary) -> Outcome {
    if error.downcast_ref::<wasmtime::Trap>().is_some()
        || error.downcast_ref::<wasmtime_wasi::I32Exit>().is_some()
    {
        return outcome::classify(Err(error), facts, summary);
    }
    let (kind, message) = match (facts.denied_memory_bytes, facts.denied_table_elements) {
        (Some(wanted), _) => (
            FailureKind::OutOfMemory,
            format!(
                "out of memory: the module needs {wanted} bytes of memory at start, over the limit of {} bytes",
                facts.max_memory_bytes
            ),
        ),
        (None, Some(wanted)) => (
            FailureKind::Instantiate,
            format!(
                "table limit: the module needs {wanted} table elements at start, over the limit of {}",
                facts.max_table_elements
            ),
        ),
        (None, None) => (FailureKind::Instantiate, format!("instantiation failed: {error:#}")),
    };
    outcome::failed(kind, message, summary)
}
