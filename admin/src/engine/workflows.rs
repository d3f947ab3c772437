//! The `Workflows` role: instances of workflows (docs/workflows.md). It starts instances
//! (by hand, by API, by schedule), fires node runs through the trigger path, and advances an
//! instance when a run's result is stored (`workflow_advance.rs`); its sweep
//! (`workflow_sweep.rs`) runs schedules and recovers what a dead admin left.
//!
//! Exactly once: a run is fired by taking it (`DUE` → `FIRED`, guarded) in the transaction
//! that inserts its log row, so of two admins one fires it; what runs next is decided under the
//! instance's row lock, from the stored states, so a join is planned once however its parents'
//! results arrive. The hand-off is event driven — the admin that stores a parent's result
//! plans and fires the children at once — and the sweep is only the safety net.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::task::TaskTracker;

use super::EngineError;
use super::trigger::TriggerPath;
use super::workflow_alarms::InstanceAlarms;
use crate::clock::Clock;
use crate::domain::Overflow;
use crate::domain::TriggerType;
use crate::store::{
    Admission, InstanceId, InstanceStatus, LogId, NewInstance, NewWorkflow, RunEnd, RunId, RunStatus,
    StartOutcome, Store, WorkflowId,
};
use crate::workflow::Graph;

/// The largest output one node may add to the context, in bytes of JSON.
pub const MAX_NODE_OUTPUT: usize = jobwheel_protocol::MAX_WORKFLOW_OUTPUT;
/// The largest context an instance may hold (start input and outputs), in bytes of JSON.
pub const MAX_CONTEXT: usize = 1024 * 1024;

/// Instances of workflows: start, fire, advance, stop.
pub struct Workflows {
    pub(super) store: Arc<dyn Store>,
    pub(super) triggers: Arc<TriggerPath>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) tracker: TaskTracker,
    pub(super) time_zone: chrono_tz::Tz,
    /// Raises the alarms of instances that ended failed or missed (`workflow_alarms.rs`).
    pub(super) alarms: InstanceAlarms,
}

/// Why a start was refused.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// No such workflow.
    #[error("workflow {0} not found")]
    NotFound(i64),
    /// The context is not a JSON object or is too large.
    #[error("{0}")]
    BadContext(String),
    /// The stored graph cannot be read.
    #[error("the workflow's graph cannot be read: {0}")]
    BadGraph(String),
    /// The store failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl Workflows {
    pub(super) fn new(
        triggers: Arc<TriggerPath>,
        tracker: TaskTracker,
        time_zone: chrono_tz::Tz,
        desk: Arc<super::AlarmDesk>,
    ) -> Arc<Self> {
        Arc::new(Self {
            store: Arc::clone(&triggers.store),
            clock: Arc::clone(&triggers.clock),
            alarms: InstanceAlarms::new(Arc::clone(&triggers.store), desk, tracker.clone()),
            triggers,
            tracker,
            time_zone,
        })
    }

    /// Starts an instance of `workflow` now with `context` (a JSON object; `None`: empty), as
    /// a user or the API asks; its root nodes are fired before this returns.
    pub async fn start(
        self: &Arc<Self>,
        workflow: WorkflowId,
        context: Option<&str>,
        trigger_type: TriggerType,
    ) -> Result<StartOutcome, StartError> {
        let now_ms = self.clock.now_ms();
        let row = self.store.load_workflow(workflow).await.map_err(EngineError::from)?;
        let row = row.ok_or(StartError::NotFound(workflow.0))?;
        let context = start_context(context)?;
        Graph::from_json(&row.workflow.graph).map_err(|e| StartError::BadGraph(e.to_string()))?;
        let new = NewInstance {
            workflow_id: workflow,
            trigger_type,
            rerun_of: None,
            fire_time_ms: now_ms,
            graph: row.workflow.graph.clone(),
            context,
        };
        Ok(self.admit(&new, &row.workflow, now_ms).await?)
    }

    /// Starts `new` under `workflow`'s max instances (queued or skipped beyond them) and fires
    /// its first runs if it started.
    pub(super) async fn admit(
        self: &Arc<Self>,
        new: &NewInstance,
        workflow: &NewWorkflow,
        now_ms: i64,
    ) -> Result<StartOutcome, EngineError> {
        let admission = Admission {
            max: workflow.max_instances.max(1),
            queue: Overflow::of(&workflow.overflow) == Overflow::Queue,
            advance: None,
            now_ms,
            keep_missed: false,
        };
        let outcome = self.store.start_instance(new, admission).await?;
        if let StartOutcome::Started(id) = outcome {
            self.advance_and_fire(id).await?;
        }
        Ok(outcome)
    }

    /// Stops a running or queued instance: due runs are dropped, fired runs are marked stopped
    /// and their executors asked to kill them. False if it was already over.
    pub async fn stop(&self, id: InstanceId) -> Result<bool, EngineError> {
        let now_ms = self.clock.now_ms();
        let Some(mut tx) = self.store.begin_instance(id).await? else { return Ok(false) };
        let instance = tx.instance().clone();
        if instance.status != InstanceStatus::Running && instance.status != InstanceStatus::Queued {
            return Ok(false);
        }
        let runs = tx.runs().await?;
        let end = RunEnd {
            status: RunStatus::Stopped,
            output: None,
            message: Some("stopped".into()),
            end_ms: now_ms,
        };
        let mut fired = Vec::new();
        for run in runs.iter().filter(|r| r.status == RunStatus::Due || r.status == RunStatus::Fired) {
            if tx.end_run(run.id, run.status, &end).await? && run.status == RunStatus::Fired {
                fired.push(run.id);
            }
        }
        let logs = tx.run_logs(&fired).await?;
        tx.set_instance(InstanceStatus::Stopped, &instance.context, instance.start_ms, now_ms).await?;
        tx.commit().await?;
        self.triggers.metrics.workflow_instance_ended("stopped");
        for log in logs.iter().filter(|l| !l.is_over()) {
            self.kill_log(log.log_id).await;
        }
        Ok(true)
    }

    /// Asks the executor running `log` to kill it (best effort: a run that ended meanwhile
    /// has nothing to kill).
    pub(super) async fn kill_log(&self, log: LogId) {
        let Ok(Some(row)) = self.store.load_log(log).await else { return };
        let Some(address) = row.executor_address.as_deref() else { return };
        let reply = self.triggers.clients.for_group(row.job_group).await.kill(address, row.job_id.0).await;
        tracing::info!(log_id = log.0, code = reply.code, "workflow run killed");
    }

    /// Results were stored for `logs`: advances the instances of those that belong to node
    /// runs, in the background (the callback's answer does not wait; the sweep covers a crash).
    pub(crate) fn on_results(self: &Arc<Self>, logs: Vec<LogId>) {
        let this = Arc::clone(self);
        let stored = Instant::now();
        self.tracker.spawn(async move {
            let runs = match this.store.runs_of_logs(&logs).await {
                Ok(runs) => runs,
                Err(error) => return tracing::error!(%error, "cannot look up workflow runs of results"),
            };
            let mut instances: Vec<InstanceId> = runs.into_iter().map(|(_, instance)| instance).collect();
            instances.sort_unstable();
            instances.dedup();
            for instance in instances {
                if let Err(error) = this.advance_and_fire_since(instance, Some(stored)).await {
                    tracing::error!(instance = instance.0, %error, "cannot advance workflow instance");
                }
            }
        });
    }

    /// Advances `instance` and fires what became due. Boxed: firing a run may advance its
    /// instance again (a failed trigger), and a recursive future must have a named type.
    pub(super) fn advance_and_fire(
        self: &Arc<Self>,
        instance: InstanceId,
    ) -> Pin<Box<dyn Future<Output = Result<(), EngineError>> + Send + 'static>> {
        self.advance_and_fire_since(instance, None)
    }

    /// [`Self::advance_and_fire`] for results stored at `stored`: the hand-off to each run it
    /// fires is measured from then (`jobwheel_workflow_handoff_seconds`).
    fn advance_and_fire_since(
        self: &Arc<Self>,
        instance: InstanceId,
        stored: Option<Instant>,
    ) -> Pin<Box<dyn Future<Output = Result<(), EngineError>> + Send + 'static>> {
        let this = Arc::clone(self);
        Box::pin(async move {
            let due = this.advance(instance, this.clock.now_ms()).await?;
            this.fire_runs(due, stored).await
        })
    }

    /// Fails a fired run that will get no result, and advances its instance.
    pub(super) async fn end_fired(
        self: &Arc<Self>,
        run: RunId,
        instance: InstanceId,
        message: &str,
    ) -> Result<(), EngineError> {
        self.end_run(run, instance, RunStatus::Fired, message).await
    }

    pub(super) async fn end_run(
        self: &Arc<Self>,
        run: RunId,
        instance: InstanceId,
        from: RunStatus,
        message: &str,
    ) -> Result<(), EngineError> {
        let Some(mut tx) = self.store.begin_instance(instance).await? else { return Ok(()) };
        let end = RunEnd {
            status: RunStatus::Failed,
            output: None,
            message: Some(message.to_owned()),
            end_ms: self.clock.now_ms(),
        };
        let ended = tx.end_run(run, from, &end).await?;
        tx.commit().await?;
        if ended {
            tracing::warn!(run = run.0, message, "workflow run failed");
            self.advance_and_fire(instance).await?;
        }
        Ok(())
    }
}

/// The stored start context: a JSON object (`{}` when none is given), within [`MAX_CONTEXT`].
fn start_context(context: Option<&str>) -> Result<String, StartError> {
    let Some(text) = context.filter(|t| !t.trim().is_empty()) else { return Ok("{}".to_owned()) };
    if text.len() > MAX_CONTEXT {
        return Err(StartError::BadContext(format!("the context is over {MAX_CONTEXT} bytes")));
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => Ok(value.to_string()),
        Ok(_) => Err(StartError::BadContext("the context must be a JSON object".to_owned())),
        Err(e) => Err(StartError::BadContext(format!("the context is not JSON: {e}"))),
    }
}
