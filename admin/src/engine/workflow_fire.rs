//! Firing a workflow's due runs. The runs made due together — a fan-out's children, the due
//! runs the sweep finds — are taken per instance in one transaction (`take_runs`: each run
//! `DUE` → `FIRED`, guarded, with its `xxl_job_log` row and link), after one read of the
//! instance and of each job they run; then every node's trigger goes out at once, in the
//! background. One transaction instead of one per child keeps a 200-node fan-out's last
//! hand-off close to its first (docs/benchmarks.md, "Workflows").

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use super::EngineError;
use super::fire::{NodeFire, TriggerRequest, to_datetime};
use super::trigger::TriggerOutcome;
use super::workflows::Workflows;
use crate::domain::TriggerType;
use crate::store::{InstanceId, JobId, JobRow, LogId, NewLog, RunId, RunRow, RunStatus, RunTake};
use crate::workflow::Graph;

impl Workflows {
    /// Fires one due run (see [`Self::fire_runs`]).
    pub(super) async fn fire(self: &Arc<Self>, run: RunRow) -> Result<(), EngineError> {
        self.fire_runs(vec![run], None).await
    }

    /// Fires due runs: per instance, takes them with their log rows in one transaction, then
    /// triggers each node's job (in the background) with the node's parameter, the context as
    /// it is now, no job-level retries (the node has its own) and the log row staged. `stored`:
    /// when the results that made them due were stored, for the hand-off metric.
    pub(super) async fn fire_runs(
        self: &Arc<Self>,
        runs: Vec<RunRow>,
        stored: Option<Instant>,
    ) -> Result<(), EngineError> {
        let mut by_instance: BTreeMap<InstanceId, Vec<RunRow>> = BTreeMap::new();
        for run in runs {
            by_instance.entry(run.instance_id).or_default().push(run);
        }
        for (instance, runs) in by_instance {
            self.fire_instance_runs(instance, runs, stored).await?;
        }
        Ok(())
    }

    async fn fire_instance_runs(
        self: &Arc<Self>,
        instance_id: InstanceId,
        runs: Vec<RunRow>,
        stored: Option<Instant>,
    ) -> Result<(), EngineError> {
        let now_ms = self.clock.now_ms();
        let Some(instance) = self.store.load_instance(instance_id).await? else { return Ok(()) };
        let graph = Graph::from_json(&instance.graph).unwrap_or_default();
        // The context as it is when the runs fire: the start input and every output so far.
        let context = Arc::new(serde_json::Value::Object(crate::workflow::context_map(&instance.context)));
        let mut jobs: HashMap<i32, Option<JobRow>> = HashMap::new();
        let mut takes = Vec::with_capacity(runs.len());
        let mut requests = Vec::with_capacity(runs.len());
        for run in runs {
            let Some(node) = graph.node(&run.node) else {
                self.fail_due(&run, "the node is not in the instance's graph").await?;
                continue;
            };
            if let Entry::Vacant(slot) = jobs.entry(node.job_id) {
                slot.insert(self.store.load_job(JobId(node.job_id)).await?);
            }
            let Some(job) = jobs.get(&node.job_id).and_then(Option::as_ref) else {
                self.fail_due(&run, &format!("job {} does not exist", node.job_id)).await?;
                continue;
            };
            let log =
                NewLog { job_group: job.job.job_group, job_id: job.id, trigger_time: to_datetime(now_ms) };
            let deadline_ms =
                if node.timeout_secs > 0 { now_ms + i64::from(node.timeout_secs) * 1000 } else { 0 };
            takes.push(RunTake { run: run.id, log, deadline_ms });
            let request = TriggerRequest {
                fail_retry_count: Some(0),
                executor_param: node.param.clone(),
                workflow_context: Some(Arc::clone(&context)),
                node: Some(NodeFire { instance: instance_id, node: run.node.clone(), run: run.id }),
                delivery: node.delivery,
                ..TriggerRequest::new(job.id, TriggerType::Workflow)
            };
            requests.push((run.id, request));
        }
        if takes.is_empty() {
            return Ok(());
        }
        let taken = self.store.take_runs(&takes, now_ms).await?;
        for ((run, mut request), log) in requests.into_iter().zip(taken) {
            // None: another admin fired it, or it was stopped.
            let Some(log_id) = log else { continue };
            request.staged_log = Some(log_id);
            let this = Arc::clone(self);
            self.tracker.spawn(async move {
                if let Err(error) = this.after_trigger(run, instance_id, request, stored).await {
                    tracing::error!(run = run.0, %error, "workflow node trigger failed");
                }
            });
        }
        Ok(())
    }

    /// Sends the trigger, then records shards a broadcast added; a trigger that failed gets
    /// no callback, so its instance is advanced here.
    async fn after_trigger(
        self: &Arc<Self>,
        run: RunId,
        instance: InstanceId,
        request: TriggerRequest,
        stored: Option<Instant>,
    ) -> Result<(), EngineError> {
        match self.triggers.trigger(request).await? {
            TriggerOutcome::Fired(fired) => {
                if let Some(stored) = stored.filter(|_| fired.iter().any(|(_, code)| *code == 200)) {
                    self.triggers.metrics.workflow_handoff(stored.elapsed().as_secs_f64());
                }
                let logs: Vec<LogId> = fired.iter().map(|(log, _)| *log).collect();
                if logs.len() > 1 {
                    let shards = i32::try_from(logs.len()).unwrap_or(i32::MAX);
                    self.store.link_logs(run, &logs, shards).await?;
                }
                if logs.len() > 1 || fired.iter().any(|(_, code)| *code != 200) {
                    self.advance_and_fire(instance).await?;
                }
            }
            TriggerOutcome::ClaimGone | TriggerOutcome::JobMissing => {
                self.end_fired(run, instance, "the node's job no longer exists").await?;
            }
        }
        Ok(())
    }

    /// Fails a due run that cannot be fired, and advances its instance.
    async fn fail_due(self: &Arc<Self>, run: &RunRow, message: &str) -> Result<(), EngineError> {
        self.end_run(run.id, run.instance_id, RunStatus::Due, message).await
    }
}
