//! Runtime configuration: engine-wide settings plus the per-run limits every store gets.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::net::{NetLimits, NetPolicy};

/// How guest CPU is metered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metering {
    /// Fuel metering (about one unit per wasm instruction). The run traps with an
    /// out-of-fuel failure after `budget` units and yields to the async runtime every
    /// `yield_interval` units, which is what lets cancellation stop a tight loop promptly.
    Fuel {
        /// Fuel each run starts with.
        budget: u64,
        /// Fuel consumed between two yields to the tokio scheduler.
        yield_interval: u64,
    },
    /// No fuel metering. Only for benchmarks measuring metering overhead: without fuel,
    /// cancellation is observed only at epoch ticks (if enabled), and never without them.
    Off,
}

/// How runs get their linear memory, tables, instances and fiber stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Mapped and unmapped for every run (wasmtime's default allocator).
    OnDemand,
    /// wasmtime's pooling allocator: `slots` runs at a time reuse address space reserved once
    /// at start (a slot keeps a module's copy-on-write memory image mapped between runs, so
    /// instantiating a large pre-initialized heap is cheaper). A run that finds every slot in
    /// use waits for one, within its timeout and cancellation.
    Pooling {
        /// Runs that may hold a slot at once (at least 1).
        slots: u32,
    },
}

/// Settings for a [`crate::Runtime`]. Build with [`RuntimeConfig::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory for precompiled modules that survive restarts; `None` disables the disk cache.
    /// It must be private to the executor: its files are loaded as native code.
    pub cache_dir: Option<PathBuf>,
    /// How many compiled modules the memory cache keeps (least recently used are evicted).
    pub memory_cache_capacity: usize,
    /// CPU metering and its budget.
    pub metering: Metering,
    /// Epoch tick driving a wall-clock yield backstop (for time spent outside fuel-metered wasm
    /// code, such as long host calls; wasmtime 48 charges bulk memory ops per byte, so those are
    /// metered); `None` disables epoch interruption.
    pub epoch_tick: Option<Duration>,
    /// Largest linear memory a run may grow to, in bytes.
    pub max_memory_bytes: usize,
    /// Largest table a run may grow to, in elements.
    pub max_table_elements: usize,
    /// wasm stack limit in bytes (deep recursion past it is a stack-overflow failure).
    pub max_wasm_stack: usize,
    /// Guest stdout + stderr bytes forwarded to the log sink per run; the rest is dropped
    /// with a note.
    pub max_output_bytes: usize,
    /// Longest single log line; longer lines are split.
    pub max_line_bytes: usize,
    /// Longest result message kept from result-marker lines.
    pub max_result_message_bytes: usize,
    /// Executor-wide allow-list for components' outbound HTTP: a request must match it *and*
    /// the job's policy. Empty (the default) refuses every request.
    pub http_allow: Arc<NetPolicy>,
    /// Ceilings of the per-run HTTP budgets; a job's own limits are lowered to these.
    pub http_limits: NetLimits,
    /// Instance allocation strategy.
    pub allocation: Allocation,
}

impl RuntimeConfig {
    /// Defaults sized for ordinary batch jobs: 64 MiB memory, 512 KiB wasm stack, 10¹² fuel
    /// (tens of minutes of CPU; the executor timeout is the usual wall-clock limit), a yield
    /// every 100 000 fuel, a 10 ms epoch backstop, 1 MiB of output per run.
    pub fn new(cache_dir: Option<PathBuf>) -> RuntimeConfig {
        RuntimeConfig {
            cache_dir,
            memory_cache_capacity: 64,
            metering: Metering::Fuel { budget: 1_000_000_000_000, yield_interval: 100_000 },
            epoch_tick: Some(Duration::from_millis(10)),
            max_memory_bytes: 64 << 20,
            max_table_elements: 100_000,
            max_wasm_stack: 512 << 10,
            max_output_bytes: 1 << 20,
            max_line_bytes: 8 << 10,
            max_result_message_bytes: 4 << 10,
            http_allow: Arc::new(NetPolicy::default()),
            http_limits: NetLimits::default(),
            allocation: Allocation::OnDemand,
        }
    }
}
