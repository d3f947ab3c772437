//! The executor's Prometheus metrics (`/metrics`, docs/metrics.md).
//!
//! Events are counted where they happen (a run's end in the job thread, a Wasm run's report,
//! a module load); levels — how many triggers wait in each job thread's queue, how many
//! callback batches wait in the spool — are read when the page is scraped. One registry per
//! executor, so executors embedded in one test process count apart.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// The content type of the OpenMetrics text format `/metrics` answers with.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    glue_type: String,
    /// `success`, `fail` or `timeout` (the callback's handle code).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GlueLabels {
    glue_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job_id: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LoadLabels {
    /// `memory` (cache hit), `disk` (precompiled artifact) or `compiled` (fetched and compiled).
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DecisionLabels {
    decision: &'static str,
}

type DurationFamily = Family<GlueLabels, Histogram, fn() -> Histogram>;

/// Levels read at scrape time.
#[derive(Debug, Default)]
pub(crate) struct Levels {
    /// `(job id, triggers waiting)` of every job thread.
    pub(crate) queues: Vec<(i32, usize)>,
    /// Callback batch files waiting in the spool for another attempt.
    pub(crate) spool_batches: usize,
    /// `(running, waiting, cap)` of the run slots under `--max-concurrent-runs`.
    pub(crate) slots: Option<(usize, usize, usize)>,
}

/// The executor's metrics and their registry.
#[derive(Debug)]
pub struct ExecutorMetrics {
    registry: Registry,
    runs: Family<RunLabels, Counter>,
    durations: DurationFamily,
    queue_depth: Family<JobLabels, Gauge>,
    spool_batches: Gauge,
    slots_in_use: Gauge,
    slots_waiting: Gauge,
    fuel: Histogram,
    peak_memory: Histogram,
    module_loads: Family<LoadLabels, Counter>,
    http_requests: Family<DecisionLabels, Counter>,
}

impl Default for ExecutorMetrics {
    fn default() -> Self {
        Self::new()
    }
}

fn duration_histogram() -> Histogram {
    // 1 ms … ~9 h.
    Histogram::new(exponential_buckets(0.001, 4.0, 13))
}

impl ExecutorMetrics {
    /// Every series registered, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("jobwheel_executor");
        let metrics = Self {
            registry: Registry::default(),
            runs: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            queue_depth: Family::default(),
            spool_batches: Gauge::default(),
            slots_in_use: Gauge::default(),
            slots_waiting: Gauge::default(),
            // 1 000 … ~2.7e11 instructions.
            fuel: Histogram::new(exponential_buckets(1000.0, 8.0, 10)),
            // 64 KiB (one page) … 4 GiB.
            peak_memory: Histogram::new(exponential_buckets(65536.0, 4.0, 9)),
            module_loads: Family::default(),
            http_requests: Family::default(),
        };
        let r = &mut registry;
        r.register("runs", "Runs ended, by glue type and outcome", metrics.runs.clone());
        r.register_with_unit(
            "run_duration",
            "Run time by glue type",
            Unit::Seconds,
            metrics.durations.clone(),
        );
        r.register(
            "job_queue_depth",
            "Triggers waiting in a job thread's queue",
            metrics.queue_depth.clone(),
        );
        r.register(
            "callback_spool_batches",
            "Callback batches waiting in the spool for another delivery attempt",
            metrics.spool_batches.clone(),
        );
        r.register(
            "run_slots_in_use",
            "Runs executing under --max-concurrent-runs (0 without a cap)",
            metrics.slots_in_use.clone(),
        );
        r.register(
            "runs_waiting_for_slot",
            "Runs waiting for a slot under --max-concurrent-runs",
            metrics.slots_waiting.clone(),
        );
        r.register(
            "wasm_fuel_used",
            "Fuel (about one per Wasm instruction) used by a GLUE_WASM run",
            metrics.fuel.clone(),
        );
        r.register_with_unit(
            "wasm_peak_memory",
            "Largest linear memory a GLUE_WASM run reached",
            Unit::Bytes,
            metrics.peak_memory.clone(),
        );
        r.register(
            "wasm_module_loads",
            "GLUE_WASM module loads, by where the module came from",
            metrics.module_loads.clone(),
        );
        r.register(
            "wasm_http_requests",
            "Outbound HTTP requests of Wasm jobs, allowed or denied by the network policy",
            metrics.http_requests.clone(),
        );
        // Series with a fixed set of labels exist from the start at zero.
        for source in ["memory", "disk", "compiled"] {
            drop(metrics.module_loads.get_or_create(&LoadLabels { source }));
        }
        for decision in ["allowed", "denied"] {
            drop(metrics.http_requests.get_or_create(&DecisionLabels { decision }));
        }
        Self { registry, ..metrics }
    }

    /// A run of `glue_type` ended with `handle_code` after `seconds`.
    pub(crate) fn run_ended(&self, glue_type: &str, handle_code: i32, seconds: f64) {
        let glue_type = if glue_type.is_empty() { "BEAN" } else { glue_type };
        let outcome = match handle_code {
            200 => "success",
            502 => "timeout",
            _ => "fail",
        };
        self.runs.get_or_create(&RunLabels { glue_type: glue_type.to_owned(), outcome }).inc();
        self.durations.get_or_create(&GlueLabels { glue_type: glue_type.to_owned() }).observe(seconds);
    }

    /// What a Wasm run consumed and how its HTTP requests were decided.
    pub(crate) fn wasm_run(&self, stats: &jobwheel_wasm::RunStats) {
        self.fuel.observe(stats.fuel_used as f64);
        self.peak_memory.observe(stats.peak_memory_bytes as f64);
        let count = |decision, n: u32| {
            if n > 0 {
                self.http_requests.get_or_create(&DecisionLabels { decision }).inc_by(u64::from(n));
            }
        };
        count("allowed", stats.http_allowed);
        count("denied", stats.http_denied);
    }

    /// A module load of a trigger (or a `/wasmPrepare`) found its module at `source`.
    pub(crate) fn module_load(&self, source: jobwheel_wasm::LoadSource) {
        let source = match source {
            jobwheel_wasm::LoadSource::Memory => "memory",
            jobwheel_wasm::LoadSource::Disk => "disk",
            jobwheel_wasm::LoadSource::Compiled => "compiled",
        };
        self.module_loads.get_or_create(&LoadLabels { source }).inc();
    }

    /// Sets the levels and encodes every series in the OpenMetrics text format.
    pub(crate) fn encode(&self, levels: &Levels) -> String {
        // Job threads come and go: only the current ones are exposed.
        self.queue_depth.clear();
        for (job_id, waiting) in &levels.queues {
            let depth = i64::try_from(*waiting).unwrap_or(i64::MAX);
            self.queue_depth.get_or_create(&JobLabels { job_id: job_id.to_string() }).set(depth);
        }
        self.spool_batches.set(i64::try_from(levels.spool_batches).unwrap_or(i64::MAX));
        let (running, waiting, _) = levels.slots.unwrap_or_default();
        self.slots_in_use.set(i64::try_from(running).unwrap_or(i64::MAX));
        self.slots_waiting.set(i64::try_from(waiting).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
