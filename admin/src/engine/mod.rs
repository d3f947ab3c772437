//! The admin's engine: the scheduler with its durable time ring, the trigger path, completion
//! of runs and the monitors (docs/upstream.md §5; see `docs/engine.md`).
//!
//! [`Engine`] is the facade the HTTP edge uses: manual triggers, kills, rolling logs,
//! callbacks and registry refreshes; [`Engine::start`] runs the background tasks. Every
//! decision that depends on time is a method taking `now_ms`, so tests drive the scheduler and
//! the monitors with controlled time and the spawned loops stay thin.
//!
//! | file | upstream |
//! |---|---|
//! | `schedule.rs` (the pre-read), `ring.rs` (+ draining), `claims.rs`, `recover.rs`, `misfire.rs`, `missed.rs` | `JobScheduleHelper` (+ durable claims, missed-fire rows) |
//! | `start.rs`, `fix_delay.rs` | `JobInfoController.start`'s first fire time; FIX_DELAY's reschedule after a run |
//! | `pool.rs`, `trigger.rs`, `trigger_msg.rs` | `JobTriggerPoolHelper`, `XxlJobTrigger` |
//! | `complete.rs` | `JobCompleteHelper`, `XxlJobCompleter`, log kill |
//! | `registry.rs`, `fail.rs`, `report.rs` | `JobRegistryHelper`, `JobFailMonitorHelper`, `JobLogReportHelper` |
//! | `tasks.rs` | the threads of all of the above |

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use jobwheel_protocol::{LogParam, LogResult};
use tokio_util::task::TaskTracker;

use crate::alarm::Alarmer;
use crate::executor_client::ExecutorApi;
use crate::routing::Router;
use crate::store::{ClaimId, GroupId, JobId, LogId, Store, StoreError};

mod batch;
mod claims;
mod complete;
mod config;
mod fail;
mod fix_delay;
mod grant;
mod group_cap;
mod i18n;
mod misfire;
mod missed;
mod pool;
mod prepare;
mod recover;
mod registry;
mod report;
mod restarts;
mod ring;
mod schedule;
mod sending;
mod share;
mod start;
mod tasks;
mod trigger;
mod trigger_msg;

pub use crate::domain::TriggerType;
pub use complete::LOST_AFTER_MS;
pub use config::{
    EngineConfig, EngineServices, FAST_POOL_FLOOR, FIRE_LEAD, MAX_FIRE_LEAD, MIN_LOG_RETENTION_DAYS,
    MonitorIntervals, SLOW_POOL_FLOOR,
};
pub use fail::{FAIL_BATCH, FailHandled};
pub use fix_delay::FIX_DELAY_PARKED;
pub(crate) use i18n::block_title;
pub use misfire::{MisfireStrategy, UnknownMisfireStrategy};
pub use pool::{SLOW_COUNT_LIMIT, SLOW_TRIGGER};
pub use recover::{RECOVERY_GRACE_MS, Recovery};
pub use registry::DEAD_TIMEOUT_MS;
pub use report::CLAIM_KEEP_MS;
pub(crate) use report::local_midnight;
pub use ring::{RingEntry, ring_second};
pub use schedule::{CycleReport, PRE_READ_MS, Placement, PlannedFire};
pub use sending::MAX_DEFER;
pub use share::{LEASE_MS, fair_share, schedule_node_name};
pub use start::first_fire_time;
pub use trigger::{TriggerOutcome, TriggerRequest};

/// What the engine's callers can get wrong, or what failed underneath.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such job.
    #[error("job {0} not found")]
    JobNotFound(JobId),
    /// No such log.
    #[error("log {0} not found")]
    LogNotFound(LogId),
    /// The operation is not allowed for this log (upstream's message, e.g. kill of a log
    /// whose trigger failed).
    #[error("{0}")]
    Refused(String),
    /// The executor answered with a failure.
    #[error("executor answered {code}: {}", msg.as_deref().unwrap_or("null"))]
    Executor {
        /// Its code.
        code: i32,
        /// Its message.
        msg: Option<String>,
    },
}

/// The scheduler, trigger path, completion and monitors of one admin process.
pub struct Engine {
    store: Arc<dyn Store>,
    client: Arc<dyn ExecutorApi>,
    router: Router,
    alarmer: Alarmer,
    config: EngineConfig,
    services: EngineServices,
    pools: Arc<pool::TriggerPools>,
    ring: ring::TimeRing,
    /// Claims this process has in its ring or pools. Recovery skips them, so it only picks
    /// up claims of dead admins (or our own, once their trigger finished without consuming).
    in_flight: Mutex<HashSet<ClaimId>>,
    /// When log retention last ran (epoch ms; 0 = never).
    last_clean_ms: Mutex<i64>,
    /// Group commit of the trigger path's store calls.
    batches: batch::Batches,
    /// Triggers on their way to `/run`; deferred writes wait for them (`sending.rs`).
    sends: Arc<sending::SendGauge>,
    /// When the schedule thread last began a pass (epoch ms; 0 = not started): readiness.
    schedule_beat_ms: std::sync::atomic::AtomicI64,
    tracker: TaskTracker,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `store`, calling executors through `client`. Nothing runs until
    /// [`Engine::start`]; the trigger, callback and monitor methods work without it.
    pub fn new(
        store: Arc<dyn Store>,
        client: Arc<dyn ExecutorApi>,
        router: Router,
        alarmer: Alarmer,
        config: EngineConfig,
        services: EngineServices,
    ) -> Arc<Self> {
        let tracker = TaskTracker::new();
        let pools = Arc::new(pool::TriggerPools::new(
            config.pool_sizes(),
            (config.fast_queue, config.slow_queue),
            Arc::clone(&services.clock),
            tracker.clone(),
        ));
        Arc::new(Self {
            store,
            client,
            router,
            alarmer,
            config,
            services,
            pools,
            ring: ring::TimeRing::default(),
            in_flight: Mutex::new(HashSet::new()),
            last_clean_ms: Mutex::new(0),
            batches: batch::Batches::default(),
            sends: Arc::default(),
            schedule_beat_ms: std::sync::atomic::AtomicI64::new(0),
            tracker,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Upstream's manual trigger ("trigger once"): type MANUAL, the parameter overridden (a
    /// missing one becomes `""`, as upstream), and optionally the addresses. Returns once the
    /// trigger is queued; its outcome lands in the log row.
    pub async fn trigger_manual(
        self: &Arc<Self>,
        job_id: JobId,
        executor_param: Option<String>,
        address_list: Option<Vec<String>>,
    ) -> Result<(), EngineError> {
        let Some(job) = self.store.load_job(job_id).await? else {
            return Err(EngineError::JobNotFound(job_id));
        };
        let address_list = address_list.filter(|list| !list.is_empty());
        if let Some(list) = &address_list {
            // The trigger carries the access token, the job's secrets and its source: it may
            // only go to executors of the job's own group (security review H1).
            self.check_manual_addresses(job.job.job_group, list).await?;
        }
        let request = TriggerRequest {
            executor_param: Some(executor_param.unwrap_or_default()),
            address_list,
            ..TriggerRequest::new(job_id, TriggerType::Manual)
        };
        if !self.submit_trigger(request) {
            return Err(EngineError::Refused("trigger pool is full, try again later".to_owned()));
        }
        Ok(())
    }

    /// The client for group `group`'s executors: with the group's own access token and
    /// xxl-job 3.5's protocol if it has a token, else the global one. A token that cannot be
    /// read now (database error) falls back to the global client; the executor's refusal then
    /// shows in the trigger message.
    pub(crate) async fn client_for(&self, group: GroupId) -> Arc<dyn ExecutorApi> {
        let Some(tokens) = &self.services.group_tokens else { return Arc::clone(&self.client) };
        match tokens.by_group(group).await {
            Ok(Some(credential)) => {
                self.client.for_group(&credential).unwrap_or_else(|| Arc::clone(&self.client))
            }
            Ok(None) => Arc::clone(&self.client),
            Err(error) => {
                tracing::warn!(group = group.0, %error, "cannot read the group's access token; using the global one");
                Arc::clone(&self.client)
            }
        }
    }

    /// What the executor at `address` of group `group` is doing (`/status`).
    pub async fn executor_status(
        &self,
        group: GroupId,
        address: &str,
    ) -> Result<jobwheel_protocol::ExecutorStatus, EngineError> {
        self.client_for(group).await.status(address).await.map_err(|msg| EngineError::Executor {
            code: jobwheel_protocol::envelope::FAIL_CODE,
            msg: Some(msg),
        })
    }

    /// One page of a run's log from its executor, for the rolling log page (upstream
    /// `/joblog/logDetailCat`): `is_end` is set once nothing new came and the run has a result.
    /// The content is returned as the executor sent it; HTML-escaping is the page's business.
    pub async fn read_log(&self, log_id: LogId, from_line: i32) -> Result<LogResult, EngineError> {
        let log = self.store.load_log(log_id).await?.ok_or(EngineError::LogNotFound(log_id))?;
        let Some(address) = log.executor_address.as_deref() else {
            return Err(EngineError::Refused(format!("log {log_id} has no executor address")));
        };
        let trigger_ms = log.trigger_time.map_or(0, |t| t.timestamp_millis());
        let client = self.client_for(log.job_group).await;
        let reply = client.log(address, &LogParam::new(trigger_ms, log_id.0, from_line)).await;
        let mut result = match (reply.code, reply.result) {
            (200, Some(result)) => result,
            (code, _) => return Err(EngineError::Executor { code, msg: reply.msg }),
        };
        if result.from_line_num > result.to_line_num && log.handle_code > 0 {
            result.is_end = true;
        }
        Ok(result)
    }

    /// Triggers between their submission and their last `/run` (`engine/sending.rs`).
    pub fn triggers_sending(&self) -> usize {
        self.sends.sending()
    }

    /// Waits until every queued trigger has finished (tests; shutdown uses [`Engine::stopped`]).
    pub async fn wait_triggers_idle(&self) {
        self.pools.wait_idle().await;
    }

    /// Whether `job_id` is currently dispatched to the slow trigger pool.
    pub fn uses_slow_pool(&self, job_id: JobId) -> bool {
        self.pools.is_slow(job_id)
    }

    /// How many triggers wait in the time ring.
    pub fn ring_len(&self) -> usize {
        self.ring.len()
    }

    /// Triggers waiting for the fast and the slow trigger pool.
    pub fn pool_waiting(&self) -> (usize, usize) {
        self.pools.waiting()
    }
}
