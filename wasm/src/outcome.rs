//! What a run produced: an [`Outcome`] (guest failures are data, not errors) plus [`RunStats`],
//! and the classification of wasmtime's call result into an outcome.

use std::fmt;
use std::time::Duration;

use wasmtime::Trap;
use wasmtime_wasi::I32Exit;

use crate::output::CaptureSummary;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `_start` returned or the guest called `proc_exit(0)`. `message` is the guest's result
    /// message, if it printed one (see `docs/guest-abi.md`).
    Succeeded {
        /// Optional result message from the guest.
        message: Option<String>,
    },
    /// The guest failed; `message` explains why in words fit for a job log.
    Failed {
        /// Machine-readable class of failure.
        kind: FailureKind,
        /// Human-readable explanation, including the guest's own message when it gave one.
        message: String,
    },
    /// The per-run timeout from [`crate::RunInput::timeout`] elapsed and the run was stopped.
    TimedOut {
        /// The timeout that elapsed.
        limit: Duration,
    },
    /// The cancellation token fired and the run was stopped.
    Cancelled,
}

/// Closed set of failure classes, for callers that treat some differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The guest exited with this non-zero code.
    Exit(i32),
    /// A wasm trap (`unreachable`, out-of-bounds access, division by zero, Rust panic/abort...).
    Trap,
    /// The guest hit the per-run memory limit.
    OutOfMemory,
    /// The wasm stack limit was exceeded (usually unbounded recursion).
    StackOverflow,
    /// The fuel budget ran out.
    OutOfFuel,
    /// Instantiation failed (e.g. the module's own memory or table exceeds the limits).
    Instantiate,
    /// The run input cannot be delivered to a guest (e.g. a NUL byte in the parameter).
    BadInput,
    /// Another error raised while the guest was running, such as a WASI host error.
    Host,
}

/// Resource use of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunStats {
    /// Fuel consumed (≈ wasm instructions); 0 when metering is off.
    pub fuel_used: u64,
    /// Largest linear-memory size reached, in bytes.
    pub peak_memory_bytes: usize,
    /// Time from the start of `run` to its end, including instantiation.
    pub wall_time: Duration,
    /// Guest stdout + stderr bytes, including any that were dropped after truncation.
    pub output_bytes: u64,
    /// Whether guest output exceeded the budget and was cut.
    pub output_truncated: bool,
    /// Outbound HTTP requests the network policy allowed (sent, whatever their answer).
    pub http_allowed: u32,
    /// Outbound HTTP requests the network policy refused.
    pub http_denied: u32,
}

/// Result of [`crate::Runtime::run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// How the run ended.
    pub outcome: Outcome,
    /// What it consumed.
    pub stats: RunStats,
    /// The workflow output the guest printed (`::jobwheel-output::` lines, concatenated), if
    /// any; longer than [`crate::abi::MAX_OUTPUT_BYTES`] means the guest printed more than the
    /// limit (the rest was dropped).
    pub workflow_output: Option<String>,
    /// The run's journal when it was recorded, what a replay could not answer when replayed.
    pub flight: Option<crate::journal::FlightReport>,
}

impl fmt::Display for RunStats {
    /// The job-log summary line, e.g. `fuel used 1234, peak memory 1.06 MiB, wall time 0.31 ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = self.peak_memory_bytes as f64 / (1024.0 * 1024.0);
        let ms = self.wall_time.as_secs_f64() * 1000.0;
        write!(f, "fuel used {}, peak memory {mib:.2} MiB, wall time {ms:.2} ms", self.fuel_used)?;
        if self.output_truncated {
            write!(f, ", output truncated ({} bytes written)", self.output_bytes)?;
        }
        Ok(())
    }
}

/// Facts about the run that turn a raw wasmtime error into a readable failure.
pub(crate) struct RunFacts {
    pub(crate) fuel_budget: Option<u64>,
    pub(crate) max_wasm_stack: usize,
    pub(crate) max_memory_bytes: usize,
    pub(crate) denied_memory_bytes: Option<usize>,
    pub(crate) max_table_elements: usize,
    pub(crate) denied_table_elements: Option<usize>,
}

/// Maps the result of instantiating and calling `_start` to an [`Outcome`].
pub(crate) fn classify(result: wasmtime::Result<()>, facts: &RunFacts, output: &CaptureSummary) -> Outcome {
    let error = match result {
        Ok(()) => return Outcome::Succeeded { message: output.result_message.clone() },
        Err(error) => error,
    };
    // wasmtime reports `proc_exit(n)` as an error for every n, including 0.
    if let Some(exit) = error.downcast_ref::<I32Exit>() {
        return match exit.0 {
            0 => Outcome::Succeeded { message: output.result_message.clone() },
            code => failed(FailureKind::Exit(code), format!("exited with code {code}"), output),
        };
    }
    let Some(trap) = error.downcast_ref::<Trap>() else {
        tracing::debug!(error = format!("{error:?}"), "wasm run failed with a host error");
        // The top of the chain is usually wasmtime's backtrace context; the root cause is the
        // sentence a job author needs (the full error is in the debug log above).
        return failed(FailureKind::Host, format!("host error: {}", error.root_cause()), output);
    };
    tracing::debug!(error = format!("{error:?}"), "wasm run trapped");
    if let Some(wanted) = facts.denied_memory_bytes {
        // A refused `memory.grow` followed by a trap is the guest aborting on OOM.
        let limit = facts.max_memory_bytes;
        let text = format!(
            "out of memory: the guest tried to grow memory to {wanted} bytes, over the limit of {limit} bytes ({trap})"
        );
        return failed(FailureKind::OutOfMemory, text, output);
    }
    match trap {
        Trap::OutOfFuel => {
            let budget = facts.fuel_budget.unwrap_or(0);
            failed(FailureKind::OutOfFuel, format!("fuel budget of {budget} exhausted"), output)
        }
        Trap::StackOverflow => {
            let limit = facts.max_wasm_stack;
            failed(FailureKind::StackOverflow, format!("wasm stack overflow (limit {limit} bytes)"), output)
        }
        other => failed(FailureKind::Trap, format!("wasm trap: {other}"), output),
    }
}

/// Builds a failure, appending what the guest said: its result message, else its last
/// stderr line (any WASI language's error output lands there).
pub(crate) fn failed(kind: FailureKind, what: String, output: &CaptureSummary) -> Outcome {
    let said = output.result_message.as_deref().or(output.last_stderr_line.as_deref());
    let message = match said {
        Some(said) => format!("{what}: {said}"),
        None => what,
    };
    Outcome::Failed { kind, message }
}
