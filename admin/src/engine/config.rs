//! [`EngineConfig`]: the engine's settings, with upstream's defaults (docs/upstream.md §5)
//! and jobwheel's extensions (retry backoff, injectable clock).

use std::sync::Arc;
use std::time::Duration;

use chrono_tz::Tz;

use crate::clock::{Clock, SystemClock};
use crate::lang::MessageLang;
use crate::store::RetryBackoff;

/// Upstream's floor of `xxl.job.triggerpool.fast.max`.
pub const FAST_POOL_FLOOR: usize = 200;
/// Upstream's floor of `xxl.job.triggerpool.slow.max`.
pub const SLOW_POOL_FLOOR: usize = 100;
/// Upstream's smallest accepted `xxl.job.logretentiondays` (≥ 3.1.0); below it retention is off.
pub const MIN_LOG_RETENTION_DAYS: u32 = 3;

/// How often the monitors run; upstream's values by default, shortened by tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorIntervals {
    /// Registry monitor (§5.4): 30 s.
    pub registry: Duration,
    /// Fail monitor (§5.5): 10 s.
    pub fail: Duration,
    /// Lost-job monitor (§5.6): 60 s.
    pub lost: Duration,
    /// Report and log retention (§5.7): 60 s.
    pub report: Duration,
}

impl Default for MonitorIntervals {
    fn default() -> Self {
        Self {
            registry: Duration::from_secs(30),
            fail: Duration::from_secs(10),
            lost: Duration::from_secs(60),
            report: Duration::from_secs(60),
        }
    }
}

/// The engine's settings: numbers, names and strategies, no services ([`EngineServices`]).
#[derive(Clone)]
pub struct EngineConfig {
    /// Language of trigger and handle messages (`xxl.job.i18n`; upstream defaults to zh_CN).
    pub lang: MessageLang,
    /// This admin's address as shown in `trigger_msg` ("调度机器"; upstream: its IP).
    pub admin_address: String,
    /// Fast trigger pool concurrency (`xxl.job.triggerpool.fast.max`, default 300, floor 200).
    pub fast_pool_max: usize,
    /// Slow trigger pool concurrency (`xxl.job.triggerpool.slow.max`, default 200, floor 100).
    pub slow_pool_max: usize,
    /// Triggers waiting for the fast pool before new ones are dropped (upstream ≥ 2.5: 2000).
    pub fast_queue: usize,
    /// Triggers waiting for the slow pool before new ones are dropped (upstream ≥ 2.5: 5000).
    pub slow_queue: usize,
    /// jobwheel: the most triggers that have taken a pool slot and not yet written their
    /// outcome (the pools stop sending at it: `engine/pool.rs`); [`OUTCOME_BACKLOG`].
    pub outcome_backlog: usize,
    /// The zone cron expressions and report days are evaluated in (upstream: the JVM's).
    pub time_zone: Tz,
    /// `xxl.job.logretentiondays`: logs older than this many days are deleted once a day;
    /// below [`MIN_LOG_RETENTION_DAYS`] nothing is deleted.
    pub log_retention_days: u32,
    /// jobwheel extension: the default retry backoff (a job's own wins): a failed log that has
    /// retries left is parked until its wait has passed since its result; zero is upstream's
    /// immediate retry.
    pub retry_backoff: RetryBackoff,
    /// Monitor periods.
    pub intervals: MonitorIntervals,
    /// A running log older than this whose executor is not registered is lost (upstream:
    /// 10 minutes).
    pub lost_after: Duration,
    /// A registration without heartbeat for this long is dead (upstream `DEAD_TIMEOUT`, 90 s).
    pub dead_timeout: Duration,
    /// Shared scheduling: this admin's name in the lease table (unique per process start), so
    /// it pre-reads only its share of the jobs' partitions (`engine/share.rs`). `None`:
    /// upstream's exclusive schedule lock, every job.
    pub schedule_node: Option<String>,
    /// The longest a trigger outcome or a callback batch waits for the triggers on their way
    /// to `/run` (`engine/sending.rs`; 200 ms).
    pub max_defer: Duration,
    /// How long before each second the ring hands that second's triggers to the pools, so
    /// their database work is done when it begins (`engine/ring.rs`; 200 ms, at most
    /// [`MAX_FIRE_LEAD`]). Zero: at the second, as upstream.
    pub fire_lead: Duration,
    /// Private networks alarm channels may post to besides public addresses
    /// (`--alarm-allow-private`; docs/alarms.md).
    pub alarm_networks: crate::alarm::AlarmNetworks,
}

/// The default [`EngineConfig::outcome_backlog`]: about two seconds of 10 000 triggers a second
/// (outcomes are written in batches at most [`EngineConfig::max_defer`] apart when the
/// database keeps up), a few KiB each.
pub const OUTCOME_BACKLOG: usize = 20_000;

/// The longest [`EngineConfig::fire_lead`]: the pre-read fills the next second's slot half a
/// second before it.
pub const MAX_FIRE_LEAD: Duration = Duration::from_millis(400);
/// The default [`EngineConfig::fire_lead`].
pub const FIRE_LEAD: Duration = Duration::from_millis(200);

impl std::fmt::Debug for EngineConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineConfig")
            .field("lang", &self.lang)
            .field("admin_address", &self.admin_address)
            .field("fast_pool_max", &self.fast_pool_max)
            .field("slow_pool_max", &self.slow_pool_max)
            .field("outcome_backlog", &self.outcome_backlog)
            .field("time_zone", &self.time_zone)
            .field("log_retention_days", &self.log_retention_days)
            .field("retry_backoff", &self.retry_backoff)
            .field("intervals", &self.intervals)
            .field("lost_after", &self.lost_after)
            .field("dead_timeout", &self.dead_timeout)
            .field("schedule_node", &self.schedule_node)
            .field("max_defer", &self.max_defer)
            .field("fire_lead", &self.fire_lead)
            .field("alarm_networks", &self.alarm_networks)
            .finish_non_exhaustive()
    }
}

impl EngineConfig {
    /// Upstream ≥ 3.3 defaults, the system clock and the process's time zone.
    pub fn new(admin_address: impl Into<String>) -> Self {
        Self {
            lang: MessageLang::Zh,
            admin_address: admin_address.into(),
            fast_pool_max: 300,
            slow_pool_max: 200,
            fast_queue: 2000,
            slow_queue: 5000,
            outcome_backlog: OUTCOME_BACKLOG,
            time_zone: crate::cron::local_time_zone(),
            log_retention_days: 30,
            retry_backoff: RetryBackoff::NONE,
            intervals: MonitorIntervals::default(),
            lost_after: Duration::from_millis(super::LOST_AFTER_MS.unsigned_abs()),
            dead_timeout: Duration::from_millis(super::DEAD_TIMEOUT_MS.unsigned_abs()),
            schedule_node: None,
            max_defer: super::sending::MAX_DEFER,
            fire_lead: FIRE_LEAD,
            alarm_networks: crate::alarm::AlarmNetworks::default(),
        }
    }

    /// Pool sizes with upstream's floors applied.
    pub(crate) fn pool_sizes(&self) -> (usize, usize) {
        (self.fast_pool_max.max(FAST_POOL_FLOOR), self.slow_pool_max.max(SLOW_POOL_FLOOR))
    }

    /// Upstream ≥ 3.3's `preReadCount = (fastMax + slowMax) * 10`.
    pub(crate) fn pre_read_count(&self) -> u32 {
        let (fast, slow) = self.pool_sizes();
        u32::try_from((fast + slow) * 10).unwrap_or(u32::MAX)
    }
}

/// The services the engine shares with the rest of the admin, passed to [`super::Engine::new`]
/// beside its settings rather than inside them.
#[derive(Clone)]
pub struct EngineServices {
    /// The time source of every decision the engine makes (tests use a `ManualClock`).
    pub clock: Arc<dyn Clock>,
    /// Opens the secret values Wasm jobs' triggers carry; `None` fails the trigger of a job
    /// that has secrets (with a message saying so).
    pub secrets: Option<Arc<crate::sealing::SecretBox>>,
    /// Where the engine counts triggers, results, misfires, lost jobs and alarms (`/metrics`).
    pub metrics: Arc<crate::metrics::AdminMetrics>,
    /// Groups' own access tokens: their executors are called with them (xxl-job 3.5's
    /// protocol). `None`: every executor is called with the client's global token.
    pub group_tokens: Option<Arc<crate::credentials::GroupTokens>>,
}

impl EngineServices {
    /// The system clock, fresh metrics, no secrets and no group tokens.
    pub fn new() -> Self {
        Self { clock: Arc::new(SystemClock), secrets: None, metrics: Arc::default(), group_tokens: None }
    }
}

impl Default for EngineServices {
    fn default() -> Self {
        Self::new()
    }
}
