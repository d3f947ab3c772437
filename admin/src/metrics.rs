//! The admin's Prometheus metrics (`/metrics`, docs/metrics.md).
//!
//! One [`AdminMetrics`] per admin: its registry and typed handles, updated where things happen
//! (the trigger path, the callback queue, completion, the monitors) and, for what is a level
//! rather than an event (ring depth, pool queues, executors per group), sampled at scrape time.
//! `prometheus-client` keeps each registry on its own, so several admins in one test process
//! count apart; the only process-wide series is the store's statement latency
//! ([`crate::store::statement_seconds`]), which every statement of the process feeds.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::domain::TriggerType;

mod lateness;
pub(crate) use lateness::LatenessSnapshot;

/// The content type of the OpenMetrics text format `/metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Lateness buckets (seconds): from a millisecond to the 5 s pre-read window and beyond.
const LATENESS_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// Callback store buckets (seconds): a group commit takes milliseconds, an outage seconds.
const STORE_BUCKETS: [f64; 11] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    /// `cron`, `manual`, `retry`, `parent`, `api`, `misfire`.
    r#type: &'static str,
    /// `success` (the executor accepted the run) or `fail`.
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StrategyLabels {
    strategy: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: String,
}

/// How long something took, for a histogram: elapsed time, not a reading of the clock that
/// decisions use (`clock.rs`), so it stays real under a test's manual clock.
#[derive(Debug, Clone, Copy)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts measuring.
    pub fn start() -> Self {
        Self(std::time::Instant::now())
    }

    /// Seconds since [`Stopwatch::start`].
    pub fn seconds(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// The scheduler's levels at scrape time (zero for an admin core without a scheduler).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SchedulerLevels {
    /// Triggers waiting in the time ring.
    pub ring_depth: usize,
    /// Triggers waiting for the fast and the slow pool.
    pub pool_waiting: (usize, usize),
    /// Triggers that took a pool slot and have not written their outcome yet.
    pub outcomes_unwritten: usize,
}

/// Levels read at scrape time from the engine and the store.
#[derive(Debug, Default, Clone)]
pub struct Levels {
    /// The time ring and the trigger pools.
    pub scheduler: SchedulerLevels,
    /// Callback batches received and not yet stored.
    pub callback_batches: usize,
    /// `(app name, live addresses)` of every group.
    pub executors: Vec<(String, usize)>,
}

/// The admin's metrics and their registry.
#[derive(Debug)]
pub struct AdminMetrics {
    registry: Registry,
    triggers: Family<TriggerLabels, Counter>,
    lateness: Histogram,
    misfires: Family<StrategyLabels, Counter>,
    ring_depth: Gauge,
    pool_waiting: Family<PoolLabels, Gauge>,
    outcomes_unwritten: Gauge,
    callback_batches: Gauge,
    callback_store: Histogram,
    results: Family<ResultLabels, Counter>,
    lost_jobs: Counter,
    group_cap_refusals: Counter,
    alarms: Family<ResultLabels, Counter>,
    executors: Family<GroupLabels, Gauge>,
    partitions: Gauge,
    pre_read: Histogram,
    workflow_instances: Family<ResultLabels, Counter>,
    workflow_handoff: Histogram,
    workflow_item_dispatch: Histogram,
    log_pieces: Counter,
    flights: Counter,
    flight_bytes: Counter,
}

impl Default for AdminMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl AdminMetrics {
    /// Every series registered, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("jobwheel");
        let metrics = Self {
            triggers: Family::default(),
            lateness: Histogram::new(LATENESS_BUCKETS),
            misfires: Family::default(),
            ring_depth: Gauge::default(),
            pool_waiting: Family::default(),
            outcomes_unwritten: Gauge::default(),
            callback_batches: Gauge::default(),
            callback_store: Histogram::new(STORE_BUCKETS),
            results: Family::default(),
            lost_jobs: Counter::default(),
            group_cap_refusals: Counter::default(),
            alarms: Family::default(),
            executors: Family::default(),
            partitions: Gauge::default(),
            pre_read: Histogram::new(STORE_BUCKETS),
            workflow_instances: Family::default(),
            workflow_handoff: Histogram::new(LATENESS_BUCKETS),
            workflow_item_dispatch: Histogram::new(LATENESS_BUCKETS),
            log_pieces: Counter::default(),
            flights: Counter::default(),
            flight_bytes: Counter::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "triggers",
            "Triggers sent (or failed before sending), by type and result",
            metrics.triggers.clone(),
        );
        r.register_with_unit(
            "trigger_lateness",
            "From a scheduled trigger's fire second to the executor's answer to /run",
            Unit::Seconds,
            metrics.lateness.clone(),
        );
        r.register(
            "misfires",
            "Fire times missed by more than the pre-read window, by misfire strategy",
            metrics.misfires.clone(),
        );
        r.register("ring_depth", "Triggers waiting in the time ring", metrics.ring_depth.clone());
        r.register(
            "trigger_pool_waiting",
            "Triggers waiting for a trigger pool slot",
            metrics.pool_waiting.clone(),
        );
        r.register(
            "trigger_outcomes_unwritten",
            "Triggers that took a pool slot and have not written their outcome yet",
            metrics.outcomes_unwritten.clone(),
        );
        r.register(
            "callback_queue_batches",
            "Callback batches received and not yet stored",
            metrics.callback_batches.clone(),
        );
        r.register_with_unit(
            "callback_store",
            "From receiving a callback batch to its results being committed (the executor's wait)",
            Unit::Seconds,
            metrics.callback_store.clone(),
        );
        r.register(
            "results_stored",
            "Run results stored (callbacks, kills, lost-job closures), by result",
            metrics.results.clone(),
        );
        r.register(
            "log_pieces_stored",
            "Pieces of job logs executors shipped (--job-logs both|admin) and this admin stored",
            metrics.log_pieces.clone(),
        );
        r.register(
            "flight_records_stored",
            "Flight records of recorded Wasm runs stored for replay (docs/replay.md)",
            metrics.flights.clone(),
        );
        r.register_with_unit(
            "flight_records_stored",
            "Bytes of flight records stored, deflated and sealed",
            Unit::Bytes,
            metrics.flight_bytes.clone(),
        );
        r.register(
            "lost_jobs",
            "Running logs closed as lost by the lost-job monitor",
            metrics.lost_jobs.clone(),
        );
        r.register(
            "group_cap_refusals",
            "Triggers not started because their executor group had its cap of runs in flight",
            metrics.group_cap_refusals.clone(),
        );
        r.register("alarms", "Alarms raised, by whether every channel delivered", metrics.alarms.clone());
        r.register(
            "executors_registered",
            "Live executor addresses per executor group (app name)",
            metrics.executors.clone(),
        );
        r.register(
            "schedule_partitions",
            "Job partitions this admin pre-reads (32 alone or exclusive; its share when shared)",
            metrics.partitions.clone(),
        );
        r.register_with_unit(
            "schedule_pre_read",
            "One pre-read: from taking the schedule lock (or the leases) to its commit",
            Unit::Seconds,
            metrics.pre_read.clone(),
        );
        r.register(
            "workflow_instances_ended",
            "Workflow instances that ended, by outcome (succeeded, failed, stopped)",
            metrics.workflow_instances.clone(),
        );
        r.register_with_unit(
            "workflow_handoff",
            "From a workflow node's result being stored to its next node's /run answered",
            Unit::Seconds,
            metrics.workflow_handoff.clone(),
        );
        r.register_with_unit(
            "workflow_item_dispatch",
            "From a map item's result being stored to the /run of the item that took its slot answered",
            Unit::Seconds,
            metrics.workflow_item_dispatch.clone(),
        );
        r.register_with_unit(
            "db_statement",
            "Database statement latency (process-wide)",
            Unit::Seconds,
            crate::store::statement_seconds().clone(),
        );
        // Series with a fixed set of labels exist from the start at zero, so a rate over them
        // is 0 rather than absent before the first event.
        for r#type in ["cron", "manual", "retry", "parent", "api", "misfire", "workflow"] {
            for result in ["success", "fail"] {
                drop(metrics.triggers.get_or_create(&TriggerLabels { r#type, result }));
            }
        }
        for strategy in ["DO_NOTHING", "FIRE_ONCE_NOW"] {
            drop(metrics.misfires.get_or_create(&StrategyLabels { strategy }));
        }
        for result in ["success", "fail", "timeout"] {
            drop(metrics.results.get_or_create(&ResultLabels { result }));
        }
        for result in ["sent", "failed"] {
            drop(metrics.alarms.get_or_create(&ResultLabels { result }));
        }
        for result in ["succeeded", "failed", "stopped"] {
            drop(metrics.workflow_instances.get_or_create(&ResultLabels { result }));
        }
        Self { registry, ..metrics }
    }

    /// A workflow instance ended: `result` is `succeeded`, `failed` or `stopped`.
    pub(crate) fn workflow_instance_ended(&self, result: &'static str) {
        self.workflow_instances.get_or_create(&ResultLabels { result }).inc();
    }

    /// A workflow node's hand-off: from its parent's result stored to its `/run` answered.
    pub(crate) fn workflow_handoff(&self, seconds: f64) {
        self.workflow_handoff.observe(seconds);
    }

    /// A map item's dispatch: from a result that freed a slot stored to the next item's `/run`
    /// answered.
    pub(crate) fn workflow_item_dispatch(&self, seconds: f64) {
        self.workflow_item_dispatch.observe(seconds);
    }

    /// A trigger's outcome: `code` is the executor's answer (200 accepted).
    pub(crate) fn trigger(&self, trigger_type: TriggerType, code: i32) {
        let result = if code == jobwheel_protocol::envelope::SUCCESS_CODE { "success" } else { "fail" };
        self.triggers.get_or_create(&TriggerLabels { r#type: type_label(trigger_type), result }).inc();
    }

    /// The job partitions this admin's last pre-read held.
    pub(crate) fn schedule_partitions(&self, held: usize) {
        self.partitions.set(gauge(held));
    }

    /// A pre-read took `seconds` from its lock to its commit.
    pub(crate) fn pre_read(&self, seconds: f64) {
        self.pre_read.observe(seconds);
    }

    /// A scheduled trigger answered `late_ms` after its fire second.
    pub(crate) fn lateness(&self, late_ms: i64) {
        self.lateness.observe(late_ms.max(0) as f64 / 1000.0);
    }

    /// `count` fire times missed under `strategy` (`DO_NOTHING` or `FIRE_ONCE_NOW`).
    pub(crate) fn misfire(&self, strategy: &'static str, count: usize) {
        self.misfires.get_or_create(&StrategyLabels { strategy }).inc_by(count as u64);
    }

    /// A callback batch took `seconds` from receipt to commit.
    pub(crate) fn callback_stored(&self, seconds: f64) {
        self.callback_store.observe(seconds);
    }

    /// `pieces` pieces of shipped job logs were stored.
    pub(crate) fn log_pieces_stored(&self, pieces: u64) {
        self.log_pieces.inc_by(pieces);
    }

    /// Flight records of these sealed sizes were stored.
    pub(crate) fn flights_stored(&self, sizes: impl Iterator<Item = usize>) {
        for size in sizes {
            self.flights.inc();
            self.flight_bytes.inc_by(size as u64);
        }
    }

    /// A run result was stored with `handle_code`.
    pub(crate) fn result_stored(&self, handle_code: i32) {
        self.results.get_or_create(&ResultLabels { result: result_label(handle_code) }).inc();
    }

    /// `count` running logs were closed as lost.
    pub(crate) fn lost(&self, count: usize) {
        self.lost_jobs.inc_by(count as u64);
    }

    /// A trigger was refused by its group's cap on runs in flight.
    pub(crate) fn group_cap_refusal(&self) {
        self.group_cap_refusals.inc();
    }

    /// An alarm was raised; `delivered` if every channel took it.
    pub(crate) fn alarm(&self, delivered: bool) {
        let result = if delivered { "sent" } else { "failed" };
        self.alarms.get_or_create(&ResultLabels { result }).inc();
    }

    /// Sets the levels and encodes every series in the OpenMetrics text format.
    pub fn encode(&self, levels: &Levels) -> String {
        let scheduler = &levels.scheduler;
        self.ring_depth.set(gauge(scheduler.ring_depth));
        self.pool_waiting.get_or_create(&PoolLabels { pool: "fast" }).set(gauge(scheduler.pool_waiting.0));
        self.pool_waiting.get_or_create(&PoolLabels { pool: "slow" }).set(gauge(scheduler.pool_waiting.1));
        self.outcomes_unwritten.set(gauge(scheduler.outcomes_unwritten));
        self.callback_batches.set(gauge(levels.callback_batches));
        // Groups come and go: only the current ones are exposed.
        self.executors.clear();
        for (app_name, live) in &levels.executors {
            self.executors.get_or_create(&GroupLabels { group: app_name.clone() }).set(gauge(*live));
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

fn gauge(level: usize) -> i64 {
    i64::try_from(level).unwrap_or(i64::MAX)
}

fn type_label(trigger_type: TriggerType) -> &'static str {
    match trigger_type {
        TriggerType::Manual => "manual",
        TriggerType::Cron => "cron",
        TriggerType::Retry => "retry",
        TriggerType::Parent => "parent",
        TriggerType::Api => "api",
        TriggerType::Workflow => "workflow",
        TriggerType::Misfire => "misfire",
        TriggerType::Rerun => "rerun",
        TriggerType::Backfill => "backfill",
    }
}

/// Upstream's handle codes: 200 success, 502 timeout, anything else a failure.
fn result_label(handle_code: i32) -> &'static str {
    match handle_code {
        200 => "success",
        502 => "timeout",
        _ => "fail",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_levels_appear_in_the_exposition() {
        let metrics = AdminMetrics::new();
        metrics.trigger(TriggerType::Cron, 200);
        metrics.trigger(TriggerType::Cron, 200);
        metrics.trigger(TriggerType::Manual, 500);
        metrics.result_stored(502);
        metrics.lateness(12);
        let levels = Levels {
            scheduler: SchedulerLevels { ring_depth: 3, outcomes_unwritten: 4, ..SchedulerLevels::default() },
            executors: vec![("app-a".to_owned(), 2)],
            ..Levels::default()
        };
        let text = metrics.encode(&levels);
        assert!(text.contains("jobwheel_triggers_total{type=\"cron\",result=\"success\"} 2\n"), "{text}");
        assert!(text.contains("jobwheel_triggers_total{type=\"manual\",result=\"fail\"} 1\n"), "{text}");
        assert!(text.contains("jobwheel_results_stored_total{result=\"timeout\"} 1\n"), "{text}");
        assert!(text.contains("jobwheel_trigger_lateness_seconds_bucket{le=\"0.025\"} 1\n"), "{text}");
        assert!(text.contains("jobwheel_ring_depth 3\n"), "{text}");
        assert!(text.contains("jobwheel_trigger_outcomes_unwritten 4\n"), "{text}");
        assert!(text.contains("jobwheel_executors_registered{group=\"app-a\"} 2\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        // A group that disappeared is no longer exposed.
        let text = metrics.encode(&Levels::default());
        assert!(!text.contains("app-a"), "{text}");
    }
}
