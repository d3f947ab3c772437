//! The admin's engine: the scheduler with its durable time ring, the trigger path, completion
//! of runs and the monitors (docs/upstream.md §5; see `docs/engine.md`).
//!
//! Each role is a type that owns its state and collaborators; [`Engine::new`] wires them once
//! and [`Engine::start`] runs their background tasks. The engine itself is the facade the HTTP
//! edge uses (manual triggers, rolling logs, `/status`, module announcements) and hands out
//! the roles. Every decision that depends on time is a method taking `now_ms`, so tests drive
//! the scheduler and the monitors with controlled time and the spawned loops stay thin.
//!
//! | role (type) | files | upstream |
//! |---|---|---|
//! | [`Scheduler`] | `scheduler.rs` (threads), `schedule.rs` (pre-read), `next_times.rs` (trigger times), `ring.rs`, `share.rs`, `missed.rs` | `JobScheduleHelper` (+ durable claims, missed-fire rows) |
//! | [`ClaimRecovery`] | `recover.rs`, `claims.rs` | — (dead admins' claims) |
//! | [`TriggerPath`] | `fire.rs` (what a fire is), `trigger.rs`, `resolve.rs`, `shard.rs`, `pool.rs`, `batch.rs`, `sending.rs`, `ticket.rs`, `grant.rs`, `group_cap.rs`, `trigger_msg.rs` | `JobTriggerPoolHelper`, `XxlJobTrigger` |
//! | [`Completion`] | `complete.rs` (+ lost monitor, kill), `restarts.rs`, `fix_delay.rs` | `JobCompleteHelper`, `XxlJobCompleter` |
//! | [`Workflows`] | `workflows.rs` (commands), `workflow_runner.rs` (`InstanceRunner`), `workflow_sweep.rs` (`WorkflowSweep`), `workflow_ops.rs` (`InstanceOps`), `workflow_children.rs` (sub-workflows) | — (DAG workflows, docs/workflows.md) |
//! | [`RegistryMonitor`], [`FailMonitor`], [`ReportMonitor`] | `registry.rs`, `fail.rs`, `report.rs` | `JobRegistryHelper`, `JobFailMonitorHelper`, `JobLogReportHelper` |
//! | [`Backfills`] | `backfills.rs` | — (a schedule run over a past range, docs/backfill.md) |
//! | [`AlarmDesk`] | `alarm_desk.rs` | `JobAlarmer` (every alarm, on every channel: docs/alarms.md) |
//!
//! `tasks.rs` spawns them all; `start.rs` is `JobInfoController.start`'s first fire time.

use std::sync::Arc;

use jobwheel_protocol::{LogParam, LogResult};
use tokio_util::task::TaskTracker;

use crate::alarm::UpstreamAlarms;
use crate::clock::Clock;
use crate::executor_client::ExecutorApi;
use crate::routing::Router;
use crate::store::{GroupId, JobId, LogId, Store, StoreError};

mod alarm_desk;
mod backfills;
mod batch;
mod claims;
mod clients;
mod complete;
mod config;
mod fail;
mod fire;
mod fire_key;
mod fix_delay;
mod grant;
mod group_cap;
mod i18n;
mod instance_context;
mod missed;
mod next_times;
mod pool;
mod prepare;
mod recover;
mod registry;
mod replays;
mod report;
mod report_slices;
mod resend;
mod resolve;
mod restarts;
mod ring;
mod schedule;
mod scheduler;
mod sending;
mod shard;
mod share;
mod start;
mod tasks;
mod ticket;
mod trigger;
mod trigger_msg;
mod workflow_children;
mod workflow_map;
mod workflow_ops;
mod workflow_runner;
mod workflow_sweep;
mod workflows;

pub use crate::domain::TriggerType;
pub use crate::workflow::{MAX_CONTEXT, MAX_NODE_OUTPUT};
pub use alarm_desk::{AlarmDesk, AlarmOutcome, RETRY_DELAYS_MS, SWEEP_EVERY_MS};
pub use backfills::{BackfillReport, Backfills, UNSENT_AFTER_MS};
pub use complete::{Completion, LOST_AFTER_MS};
pub use config::{
    EngineConfig, EngineServices, FAST_POOL_FLOOR, FIRE_LEAD, MAX_FIRE_LEAD, MIN_LOG_RETENTION_DAYS,
    MonitorIntervals, OUTCOME_BACKLOG, SLOW_POOL_FLOOR,
};
pub use fail::{FAIL_BATCH, FailHandled, FailMonitor};
pub use fire::{JobSnapshot, NodeFire, TriggerRequest};
pub(crate) use i18n::block_title;
pub use i18n::is_missed_fire;
pub use next_times::{FIX_DELAY_PARKED, PRE_READ_MS};
pub use pool::{SLOW_COUNT_LIMIT, SLOW_TRIGGER};
pub use recover::{ClaimRecovery, RECOVERY_GRACE_MS, Recovery};
pub use registry::{DEAD_TIMEOUT_MS, RegistryMonitor};
pub use replays::{MAX_WHAT_IF_RUNS, ReplayOutcome, WhatIfRow};
pub(crate) use report::local_midnight;
pub use report::{CLAIM_KEEP_MS, ReportMonitor};
pub use resend::{RESEND_AFTER_MS, Resend, Resends};
pub use ring::{RingEntry, ring_second};
pub use schedule::{CycleReport, Placement, PlannedFire};
pub use scheduler::Scheduler;
pub use sending::MAX_DEFER;
pub use share::{LEASE_MS, fair_share, schedule_node_name};
pub use start::{Starting, first_fire_time, first_start, first_workflow_start};
pub use trigger::{TriggerOutcome, TriggerPath};
pub use workflow_children::MAX_DEPTH as MAX_SUBFLOW_DEPTH;
pub use workflow_ops::{InstanceOp, OpError};
pub use workflow_sweep::{CATCH_UP_MS, LOOK_BACK_MS, RUN_GRACE_MS, SweepReport};
pub use workflows::{StartError, Workflows};

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

/// The engine of one admin process: its roles, wired together, and the facade over them.
pub struct Engine {
    config: EngineConfig,
    store: Arc<dyn Store>,
    clients: Arc<clients::ExecutorClients>,
    clock: Arc<dyn Clock>,
    scheduler: Arc<Scheduler>,
    triggers: Arc<TriggerPath>,
    completion: Arc<Completion>,
    resends: Arc<Resends>,
    workflows: Arc<Workflows>,
    backfills: Arc<Backfills>,
    registry: Arc<RegistryMonitor>,
    failures: Arc<FailMonitor>,
    report: Arc<ReportMonitor>,
    alarms: Arc<AlarmDesk>,
    tracker: TaskTracker,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `store`, calling executors through `client`. Nothing runs until
    /// [`Engine::start`]; the passes of every role work without it.
    ///
    /// The one place the roles are wired: the trigger path first (everything fires through
    /// it), then the scheduler, completion and the monitors around it. The claims in flight
    /// are shared by the scheduler (which holds them) and the trigger path (which releases
    /// them); FIX_DELAY's rescheduling by the trigger path, completion and recovery.
    pub fn new(
        store: Arc<dyn Store>,
        client: Arc<dyn ExecutorApi>,
        router: Router,
        upstream: UpstreamAlarms,
        config: EngineConfig,
        services: EngineServices,
    ) -> Arc<Self> {
        let tracker = TaskTracker::new();
        let clients = Arc::new(clients::ExecutorClients::new(client, services.group_tokens.clone()));
        let in_flight = Arc::new(claims::InFlight::default());
        let fix_delay = Arc::new(fix_delay::FixDelay::new(Arc::clone(&store), config.time_zone));
        let shared = (Arc::clone(&in_flight), Arc::clone(&fix_delay));
        let triggers = TriggerPath::new(
            Arc::clone(&store),
            Arc::clone(&clients),
            router,
            &config,
            &services,
            shared.clone(),
            tracker.clone(),
        );
        let scheduler = Scheduler::new(Arc::clone(&store), Arc::clone(&triggers), shared, &config, &services);
        let sender = crate::alarm::ChannelSender::new(
            upstream,
            services.secrets.clone(),
            config.alarm_networks.clone(),
        );
        let alarms = Arc::new(AlarmDesk::new(Arc::clone(&store), sender));
        let workflows =
            Workflows::new(Arc::clone(&triggers), tracker.clone(), config.time_zone, Arc::clone(&alarms));
        let completion = Completion::new(
            Arc::clone(&triggers),
            (fix_delay, Arc::clone(&workflows)),
            &config,
            &services,
            tracker.clone(),
        );
        let failures =
            FailMonitor::new(Arc::clone(&triggers), Arc::clone(&alarms), config.retry_backoff, config.lang);
        let clock = Arc::clone(&services.clock);
        Arc::new(Self {
            registry: Arc::new(RegistryMonitor::new(
                Arc::clone(&store),
                Arc::clone(&clock),
                config.dead_timeout,
            )),
            report: Arc::new(ReportMonitor::new(
                Arc::clone(&store),
                config.time_zone,
                config.log_retention_days,
            )),
            scheduler: Arc::new(scheduler),
            completion: Arc::new(completion),
            resends: Arc::new(Resends::new(Arc::clone(&triggers))),
            backfills: Arc::new(Backfills::new(
                Arc::clone(&triggers),
                Arc::clone(&workflows),
                config.time_zone,
            )),
            workflows,
            failures: Arc::new(failures),
            alarms,
            triggers,
            store,
            clients,
            clock,
            config,
            tracker,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The pre-read, the ring and claim recovery.
    pub fn scheduler(&self) -> &Arc<Scheduler> {
        &self.scheduler
    }

    /// Workflow instances.
    pub fn workflows(&self) -> &Arc<Workflows> {
        &self.workflows
    }

    /// Backfills (docs/backfill.md).
    pub fn backfills(&self) -> &Arc<Backfills> {
        &self.backfills
    }

    /// The alarm desk: every alarm raised, and its deliveries.
    pub fn alarms(&self) -> &Arc<AlarmDesk> {
        &self.alarms
    }

    /// The trigger path.
    pub fn triggers(&self) -> &Arc<TriggerPath> {
        &self.triggers
    }

    /// Exactly-once fires in doubt, resent to their address.
    pub fn resends(&self) -> &Arc<Resends> {
        &self.resends
    }

    /// Results of runs: callbacks, kills, lost runs, restarted executors.
    pub fn completion(&self) -> &Arc<Completion> {
        &self.completion
    }

    /// The registry monitor.
    pub fn registry(&self) -> &Arc<RegistryMonitor> {
        &self.registry
    }

    /// The fail monitor (retries and alarms).
    pub fn failures(&self) -> &Arc<FailMonitor> {
        &self.failures
    }

    /// The log report and retention.
    pub fn report(&self) -> &Arc<ReportMonitor> {
        &self.report
    }

    /// Upstream's manual trigger ("trigger once"): type MANUAL, the parameter overridden (a
    /// missing one becomes `""`, as upstream), and optionally the addresses. Returns once the
    /// trigger is queued; its outcome lands in the log row.
    pub async fn trigger_manual(
        &self,
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
            self.registry.check_manual_addresses(job.job.job_group, list).await?;
        }
        let request = TriggerRequest {
            executor_param: Some(executor_param.unwrap_or_default()),
            address_list,
            ..TriggerRequest::new(job_id, TriggerType::Manual)
        };
        if !self.triggers.submit(request) {
            return Err(EngineError::Refused("trigger pool is full, try again later".to_owned()));
        }
        Ok(())
    }

    /// What the executor at `address` of group `group` is doing (`/status`).
    pub async fn executor_status(
        &self,
        group: GroupId,
        address: &str,
    ) -> Result<jobwheel_protocol::ExecutorStatus, EngineError> {
        self.clients.for_group(group).await.status(address).await.map_err(|msg| EngineError::Executor {
            code: jobwheel_protocol::envelope::FAIL_CODE,
            msg: Some(msg),
        })
    }

    /// One page of a run's log for the rolling log page (upstream `/joblog/logDetailCat`):
    /// from the lines its executor shipped when there are any (`job_logs`; the executor may be
    /// gone), else from its executor over `/log`. `is_end` is set once nothing new came and
    /// the run is over. The content is returned as written; HTML-escaping is the page's
    /// business.
    pub async fn read_log(&self, log_id: LogId, from_line: i32) -> Result<LogResult, EngineError> {
        let log = self.store.load_log(log_id).await?.ok_or(EngineError::LogNotFound(log_id))?;
        let pieces = self.store.log_pieces(log_id).await?;
        if !pieces.is_empty() {
            let now_ms = self.clock.now_ms();
            let result_ms = log.handle_time.map(|t| t.timestamp_millis()).filter(|_| log.handle_code > 0);
            let closed = result_ms.is_some_and(|at| now_ms - at >= crate::job_logs::UNCLOSED_END_MS);
            return Ok(crate::job_logs::page(&pieces, from_line, closed));
        }
        let Some(address) = log.executor_address.as_deref() else {
            return Err(EngineError::Refused(format!("log {log_id} has no executor address")));
        };
        let trigger_ms = log.trigger_time.map_or(0, |t| t.timestamp_millis());
        let client = self.clients.for_group(log.job_group).await;
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

    /// Tells the executors of job `job_id`'s group to fetch and compile its new Wasm module
    /// now, in the background (`prepare.rs`).
    pub fn prepare_wasm(&self, job_id: JobId) {
        prepare::announce_module(Arc::clone(&self.store), Arc::clone(&self.clients), &self.tracker, job_id);
    }
}
