//! [`AdminCore`]: what the HTTP edge asks of the rest of the admin.
//!
//! The executor-facing API validates, stores registrations and answers; everything with
//! consequences beyond one row — applying a job result (child jobs, alarms, FIX_DELAY) and
//! making a new executor routable — belongs to the scheduling engine. This trait is the seam,
//! so the edge can be tested with a recording fake and the engine can be developed on its own.

use std::sync::Arc;

use async_trait::async_trait;
use jobwheel_protocol::{HandleCallbackParam, LogResult};

use crate::clock::{Clock, SystemClock};
use crate::engine::{EngineError, InstanceOp, OpError, StartError};
use crate::metrics::SchedulerLevels;
use crate::store::{GroupId, InstanceId, JobId, LogId, StartOutcome, WorkflowId};

/// What the operations below answer on an admin built without a scheduling engine.
fn no_engine() -> EngineError {
    EngineError::Refused("this admin runs without a scheduling engine".to_owned())
}

/// The admin's reaction to executor API calls.
#[async_trait]
pub trait AdminCore: Send + Sync + 'static {
    /// Applies executor callbacks: store each result with upstream's repeat guard
    /// (`handle_code > 0` → ignored), then whatever completing a log implies (child jobs etc.).
    ///
    /// Called from a bounded queue that may merge batches of concurrent requests; each request
    /// is answered with the outcome, so `Ok` must mean every result is stored (committed). An
    /// `Err` makes the executors keep their batches and send them again, which the repeat guard
    /// makes harmless. Failures after the results are stored (child triggers, FIX_DELAY) are the
    /// core's to log: the results are safe.
    async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError>;

    /// The registry rows of `app_name` changed (an executor appeared or deregistered): make the
    /// address list of its automatically registered group(s) current now, instead of at the
    /// next 30 s registry pass.
    ///
    /// Called after the registry row was written and before the executor gets its reply.
    /// Heartbeats from an executor this admin has seen within the last 90 s do not call it.
    /// Implementations log their own errors: the registration itself is stored already.
    async fn refresh_group(&self, app_name: &str);

    /// A jobwheel executor at `address` beat with an incarnation this admin had not seen for
    /// it: check, in the background, which runs there its new process does not have, and
    /// close them as lost (`engine/restarts.rs`). Returns at once.
    fn executor_restarted(&self, address: &str) {
        let _ = address;
    }

    /// Triggers a job once now (management API "trigger once"): `executor_param` replaces the
    /// job's parameter, `address_list` (non-empty) replaces routing. Returns once queued.
    async fn trigger(
        &self,
        job_id: JobId,
        executor_param: Option<String>,
        address_list: Option<Vec<String>>,
    ) -> Result<(), EngineError> {
        let _ = (job_id, executor_param, address_list);
        Err(no_engine())
    }

    /// A new module version of job `job_id` became current (upload or rollback): let the
    /// group's executors compile it before its first trigger. Returns at once; best effort.
    async fn wasm_version_changed(&self, job_id: JobId) {
        let _ = job_id;
    }

    /// One page of a run's job log, read from the executor that ran it.
    async fn read_log(&self, log_id: LogId, from_line: i32) -> Result<LogResult, EngineError> {
        let _ = (log_id, from_line);
        Err(no_engine())
    }

    /// What the executor at `address` of group `group` is doing (`/status`, jobwheel executors).
    async fn executor_status(
        &self,
        group: GroupId,
        address: &str,
    ) -> Result<jobwheel_protocol::ExecutorStatus, EngineError> {
        let _ = (group, address);
        Err(no_engine())
    }

    /// Kills a running log on its executor and records it as killed; the executor's message.
    async fn kill(&self, log_id: LogId) -> Result<Option<String>, EngineError> {
        let _ = log_id;
        Err(no_engine())
    }

    /// Replays the recorded Wasm run `log_id` on an executor of its group, with its own module
    /// or the job's module version `version` (docs/replay.md).
    async fn replay(
        &self,
        log_id: LogId,
        version: Option<i64>,
    ) -> Result<crate::engine::ReplayOutcome, EngineError> {
        let _ = (log_id, version);
        Err(no_engine())
    }

    /// Replays job `job`'s last `runs` recorded runs against its module version `version`.
    async fn what_if(
        &self,
        job: JobId,
        version: i64,
        runs: u32,
    ) -> Result<Vec<crate::engine::WhatIfRow>, EngineError> {
        let _ = (job, version, runs);
        Err(no_engine())
    }

    /// Starts an instance of `workflow` now with `context` (a JSON object's text).
    async fn start_workflow(
        &self,
        workflow: WorkflowId,
        context: Option<&str>,
    ) -> Result<StartOutcome, StartError> {
        let _ = (workflow, context);
        Err(StartError::Engine(no_engine()))
    }

    /// Stops a running or queued workflow instance; false if it was over already.
    async fn stop_workflow_instance(&self, instance: InstanceId) -> Result<bool, EngineError> {
        let _ = instance;
        Err(no_engine())
    }

    /// Reruns a failed instance from its failed nodes, or marks a failed node done.
    async fn workflow_instance_op(&self, instance: InstanceId, op: InstanceOp) -> Result<(), OpError> {
        let _ = (instance, op);
        Err(OpError::Engine(no_engine()))
    }

    /// Starts a new instance like `instance` (same graph and start input).
    async fn rerun_workflow_instance(&self, instance: InstanceId) -> Result<StartOutcome, StartError> {
        let _ = instance;
        Err(StartError::Engine(no_engine()))
    }

    /// The time ring's and the trigger pools' levels (`/metrics`). Cores without a scheduler
    /// have none.
    fn scheduler_levels(&self) -> SchedulerLevels {
        SchedulerLevels::default()
    }

    /// Whether the core's background work runs (`/readyz`): `Err` says what does not. Cores
    /// without a scheduler are ready.
    fn readiness(&self) -> Result<(), String> {
        Ok(())
    }

    /// The clock the admin decides by. The edge reads its time here too (stamps, expiries, the
    /// throttles' windows), so a test that gives its core a manual clock steps the whole admin.
    fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(SystemClock)
    }

    /// Stops whatever the core runs in the background. Called once at shutdown, after every
    /// callback request received was applied and answered.
    async fn shutdown(&self) {}
}
