//! One sandboxed run: a fresh store with WASI preview1 (no dirs, no host env, no sockets, no
//! inherited stdio), limits and fuel, raced against cancellation and the optional timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p1::WasiP1Ctx;

use crate::abi;
use crate::config::Metering;
use crate::limiter::RunLimiter;
use crate::loader::LoadedModule;
use crate::outcome::{self, FailureKind, Outcome, RunFacts, RunReport, RunStats};
use crate::output::{CaptureSummary, LogSink, OutputCapture, OutputLimits, Stream};
use crate::runtime::Runtime;

/// What one run of a job receives (see `docs/guest-abi.md` for how the guest sees it).
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// Per-store data: the WASI context and the resource limiter.
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
        );
        if input.param.contains('\0') {
            let summary = capture.finish();
            let message =
                "the job parameter contains a NUL byte, which WASI cannot pass to a guest".to_owned();
            let outcome = outcome::failed(FailureKind::BadInput, message, &summary);
            let stats = RunStats { wall_time: started.elapsed(), ..RunStats::default() };
            return RunReport { outcome, stats };
        }

        let wasi = WasiCtxBuilder::new()
            .stdout(capture.stream(Stream::Stdout))
            .stderr(capture.stream(Stream::Stderr))
            .args(&[abi::ARGV0, input.param.as_str()])
            .env(abi::ENV_PARAM, &input.param)
            .env(abi::ENV_JOB_ID, input.job_id.to_string())
            .env(abi::ENV_LOG_ID, input.log_id.to_string())
            .env(abi::ENV_SHARD_INDEX, input.shard_index.to_string())
            .env(abi::ENV_SHARD_TOTAL, input.shard_total.to_string())
            .build_p1();
        let limiter = RunLimiter::new(config.max_memory_bytes, config.max_table_elements);
        let mut store = Store::new(&self.inner.engine, RunState { wasi, limiter });
        store.limiter(|state| &mut state.limiter);
        let fuel_budget = match config.metering {
            Metering::Fuel { budget, yield_interval } => {
                // Both only fail when fuel is disabled in the engine, which `Metering::Fuel`
                // rules out; a failure here would surface as an immediate out-of-fuel trap.
                let set = store
                    .set_fuel(budget)
                    .and_then(|()| store.fuel_async_yield_interval(Some(yield_interval)));
                if let Err(error) = set {
                    tracing::error!(error = format!("{error:#}"), "cannot configure fuel for a run");
                }
                Some(budget)
            }
            Metering::Off => None,
        };
        if config.epoch_tick.is_some() {
            // Yield (not trap) at every tick: the epoch is a fairness and cancellation
            // backstop, the deadline itself is enforced by the timeout below.
            store.set_epoch_deadline(1);
            store.epoch_deadline_async_yield_and_update(1);
        }

        let ended = {
            let store = &mut store;
            let work = async move {
                let instance = match module.pre.instantiate_async(&mut *store).await {
                    Ok(instance) => instance,
                    Err(error) => return Ended::InstantiateFailed(error),
                };
                let entry = match instance.get_typed_func::<(), ()>(&mut *store, abi::ENTRY_EXPORT) {
                    Ok(entry) => entry,
                    Err(error) => return Ended::Finished(Err(error)),
                };
                Ended::Finished(entry.call_async(&mut *store, ()).await)
            };
            let deadline = async {
                match input.timeout {
                    Some(limit) => {
                        tokio::time::sleep(limit).await;
                        limit
                    }
                    None => std::future::pending().await,
                }
            };
            // `biased`: check cancellation first on every wake-up, so a guest that yields
            // constantly cannot starve it. Dropping `work` is wasmtime's supported abort.
            tokio::select! {
                biased;
                () = cancel.cancelled() => Ended::Cancelled,
                limit = deadline => Ended::TimedOut(limit),
                ended = work => ended,
            }
        };

        let summary = capture.finish();
        let limiter = &store.data().limiter;
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
            fuel_budget.map_or(0, |budget| budget.saturating_sub(store.get_fuel().unwrap_or(budget)));
        let stats = RunStats {
            fuel_used,
            peak_memory_bytes: limiter.peak_memory_bytes(),
            wall_time: started.elapsed(),
            output_bytes: summary.output_bytes,
            output_truncated: summary.truncated,
        };
        capture.note(&stats.to_string());
        RunReport { outcome, stats }
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
