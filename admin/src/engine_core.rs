//! [`EngineCore`]: the scheduling engine behind the HTTP edge's [`AdminCore`] seam.
//!
//! Built once the store is open and the access token is settled (both come in the
//! [`CoreContext`]); maps the admin's flags onto the engine's configuration, starts the
//! scheduler, ring and monitors, and stops them after the edge has applied every acknowledged
//! callback.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use async_trait::async_trait;
use jobwheel_protocol::{HandleCallbackParam, LogResult};
use tokio_util::sync::CancellationToken;

use crate::alarm::{EmailAlarm, UpstreamAlarms, WebhookAlarm};
use crate::app::CoreContext;
use crate::clock::{Clock, SystemClock, ThreadRandom};
use crate::config::AdminConfig;
use crate::domain::TriggerType;
use crate::engine::{
    Engine, EngineConfig, EngineError, EngineServices, InstanceOp, OpError, StartError, schedule_node_name,
};
use crate::executor_client::HttpExecutorClient;
use crate::http::AdminCore;
use crate::metrics::SchedulerLevels;
use crate::routing::Router;
use crate::store::{Backend, GroupId, InstanceId, JobId, LogId, StartOutcome, WorkflowId};

/// How long an alarm webhook may take before the alarm counts as failed.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The engine, running, as seen by the HTTP edge.
pub struct EngineCore {
    engine: Arc<Engine>,
    clock: Arc<dyn Clock>,
    stop: CancellationToken,
}

impl EngineCore {
    /// Builds the engine from the admin's configuration and starts its background tasks.
    pub fn start(context: CoreContext, config: &AdminConfig) -> anyhow::Result<Arc<Self>> {
        let lang = config.i18n;
        let client = HttpExecutorClient::new(Some(context.access_token), config.executor_timeout)
            .context("cannot build the executor client")?
            .with_dial(context.dial);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let router = Router::new(Arc::clone(&clock), Arc::new(ThreadRandom), lang);
        let mut upstream = UpstreamAlarms::default();
        if let Some(smtp) = &config.smtp {
            upstream.mail = Some(Arc::new(EmailAlarm::new(smtp, lang).context("invalid SMTP settings")?));
        }
        if let Some(url) = &config.alarm_webhook_url {
            upstream.webhook =
                Some(WebhookAlarm::new(url.clone(), WEBHOOK_TIMEOUT).context("invalid alarm webhook")?);
        }
        // Shared scheduling needs row locks across hosts; SQLite is one admin's file.
        let shared = !config.exclusive_scheduling && context.store.backend() != Backend::Sqlite;
        let schedule_node = shared.then(|| schedule_node_name(&context.admin_address));
        let mut engine_config = EngineConfig::new(context.admin_address);
        engine_config.schedule_node = schedule_node;
        engine_config.lang = lang;
        engine_config.fast_pool_max = config.trigger_pools.fast_max;
        engine_config.slow_pool_max = config.trigger_pools.slow_max;
        engine_config.fast_queue = config.trigger_pools.fast_queue;
        engine_config.slow_queue = config.trigger_pools.slow_queue;
        engine_config.outcome_backlog = config.trigger_pools.outcome_backlog;
        engine_config.fire_lead = config.fire_lead;
        engine_config.alarm_networks = config.alarm_allow_private.clone();
        engine_config.lost_after = config.lost_job_timeout;
        engine_config.retry_backoff = config.retry_backoff;
        engine_config.dead_timeout = config.executor_dead_timeout;
        // Shorter timeouts need monitors that look at least twice (lost) or three times
        // (registry) per timeout; upstream's 60 s / 30 s otherwise.
        engine_config.intervals.lost = engine_config.intervals.lost.min(config.lost_job_timeout / 2);
        engine_config.intervals.registry =
            engine_config.intervals.registry.min(config.executor_dead_timeout / 3);
        // Below the engine's minimum nothing is deleted, which is what `None` means here.
        engine_config.log_retention_days = config.log_retention_days.unwrap_or(0);
        let services = EngineServices {
            clock: Arc::clone(&clock),
            secrets: Some(Arc::clone(&context.secret_box)),
            metrics: Arc::clone(&context.metrics),
            group_tokens: Some(Arc::clone(&context.group_tokens)),
        };
        let engine = Engine::new(context.store, Arc::new(client), router, upstream, engine_config, services);
        let stop = CancellationToken::new();
        engine.start(stop.clone());
        Ok(Arc::new(Self { engine, clock, stop }))
    }

    /// The engine, for manual triggers, kills and log reads.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }
}

#[async_trait]
impl AdminCore for EngineCore {
    async fn start_workflow(
        &self,
        workflow: WorkflowId,
        context: Option<&str>,
    ) -> Result<StartOutcome, StartError> {
        self.engine.workflows().start(workflow, context, TriggerType::Manual).await
    }

    async fn stop_workflow_instance(&self, instance: InstanceId) -> Result<bool, EngineError> {
        self.engine.workflows().stop(instance).await
    }

    async fn workflow_instance_op(&self, instance: InstanceId, op: InstanceOp) -> Result<(), OpError> {
        let workflows = self.engine.workflows();
        match op {
            InstanceOp::RerunFailed => workflows.rerun_failed(instance).await,
            InstanceOp::MarkDone { node, output } => {
                workflows.mark_done(instance, &node, output.as_deref()).await
            }
            InstanceOp::Decide { node, approve, by, comment } => {
                workflows.decide(instance, &node, approve, &by, comment.as_deref()).await
            }
        }
    }

    async fn rerun_workflow_instance(&self, instance: InstanceId) -> Result<StartOutcome, StartError> {
        self.engine.workflows().rerun(instance).await
    }

    fn readiness(&self) -> Result<(), String> {
        self.engine.scheduler().readiness()
    }

    fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    fn scheduler_levels(&self) -> SchedulerLevels {
        let triggers = self.engine.triggers();
        SchedulerLevels {
            ring_depth: self.engine.scheduler().ring_len(),
            pool_waiting: triggers.pool_waiting(),
            outcomes_unwritten: triggers.unrecorded(),
        }
    }

    async fn wasm_version_changed(&self, job_id: JobId) {
        self.engine.prepare_wasm(job_id);
    }

    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
        let count = items.len();
        self.engine.completion().on_callbacks(items).await.inspect_err(|e| {
            // The executors are told and keep their results for another attempt.
            tracing::error!(count, error = %e, "cannot store executor callbacks");
        })
    }

    async fn refresh_group(&self, app_name: &str) {
        if let Err(e) = self.engine.registry().refresh_group(app_name).await {
            tracing::warn!(app_name, error = %e, "cannot refresh the group's address list");
        }
    }

    fn executor_restarted(&self, address: &str) {
        self.engine.completion().executor_restarted(address);
    }

    async fn trigger(
        &self,
        job_id: JobId,
        executor_param: Option<String>,
        address_list: Option<Vec<String>>,
    ) -> Result<(), EngineError> {
        self.engine.trigger_manual(job_id, executor_param, address_list).await
    }

    async fn read_log(&self, log_id: LogId, from_line: i32) -> Result<LogResult, EngineError> {
        self.engine.read_log(log_id, from_line).await
    }

    async fn replay(
        &self,
        log_id: LogId,
        version: Option<i64>,
    ) -> Result<crate::engine::ReplayOutcome, EngineError> {
        self.engine.replay(log_id, version).await
    }

    async fn what_if(
        &self,
        job: JobId,
        version: i64,
        runs: u32,
    ) -> Result<Vec<crate::engine::WhatIfRow>, EngineError> {
        self.engine.what_if(job, version, runs).await
    }

    async fn kill(&self, log_id: LogId) -> Result<Option<String>, EngineError> {
        self.engine.completion().kill(log_id).await
    }

    async fn executor_status(
        &self,
        group: GroupId,
        address: &str,
    ) -> Result<jobwheel_protocol::ExecutorStatus, EngineError> {
        self.engine.executor_status(group, address).await
    }

    async fn shutdown(&self) {
        self.stop.cancel();
        self.engine.stopped().await;
    }
}
