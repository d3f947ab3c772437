//! [`InstanceRunner`]: running one instance's nodes — advancing it when results arrive and
//! firing the runs that became due (docs/workflows.md). The `Workflows` role's commands and
//! its sweep hand their instances to it.
//!
//! **Advancing**, under the instance's row lock: end the fired runs whose every shard is over
//! (output into the context, a retry if the node has attempts left), ask the planner
//! (`workflow::plan`) what runs, is skipped or passes next, insert those runs, and end the
//! instance when every node is over. One transaction, so a crash leaves either all of it or
//! none, and the sweep finds the instance again.
//!
//! **Firing**: the runs made due together — a fan-out's children, the due runs the sweep finds —
//! are taken per instance in one transaction (`take_runs`: each run `DUE` → `FIRED`, guarded,
//! with its `xxl_job_log` row and link), after one read of the instance and of each job they
//! run; then every node's trigger goes out at once, in the background. One transaction instead
//! of one per child keeps a 200-node fan-out's last hand-off close to its first
//! (docs/benchmarks.md, "Workflows").

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use tokio_util::task::TaskTracker;

use super::EngineError;
use super::fire::{NodeFire, TriggerRequest, to_datetime};
use super::instance_context::InstanceContext;
use super::trigger::{TriggerOutcome, TriggerPath};
use super::workflow_children::{finish_parent, start_child};
use super::workflow_map::{start_maps, step_maps};
use crate::clock::Clock;
use crate::domain::TriggerType;
use crate::store::{
    InstanceId, InstanceStatus, JobId, JobRow, LogId, NewLog, NewRun, RunEnd, RunId, RunLog, RunRow,
    RunStatus, RunTake, Store,
};
use crate::workflow::schema::mismatch;
use crate::workflow::{
    Decision, Graph, MAX_CONTEXT, NodeKind, PlanInput, branch_output, branches, node_states, plan, settle,
};

/// How long a kill waits for a trigger in flight to record where it went: above any executor
/// client's timeout (upstream's 3 s by default) and the batched log write after it.
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
/// How often that wait reads the log row.
const KILL_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What one advance did.
#[derive(Default)]
struct Step {
    /// The runs it made due now, for the caller to fire.
    due: Vec<RunRow>,
    /// A node ended after the planning (a sub-workflow that could not start): advance again.
    again: bool,
    /// Child instances it started, for the caller to advance.
    children: Vec<InstanceId>,
    /// The instance ended and is a child: its parent's run ends next.
    ended_child: bool,
    /// Map items it took, for the caller to send (with their map runs).
    items: Vec<(RunId, TriggerRequest)>,
}

/// Advances instances and fires their runs.
pub(super) struct InstanceRunner {
    store: Arc<dyn Store>,
    triggers: Arc<TriggerPath>,
    clock: Arc<dyn Clock>,
    tracker: TaskTracker,
    /// Instances this admin is advancing for stored results, each with the earliest store time
    /// of results that arrived meanwhile (`Some`: one more pass is owed).
    advancing: std::sync::Mutex<HashMap<InstanceId, Option<Instant>>>,
}

impl InstanceRunner {
    pub(super) fn new(triggers: Arc<TriggerPath>, tracker: TaskTracker) -> Arc<Self> {
        Arc::new(Self {
            store: Arc::clone(&triggers.store),
            clock: Arc::clone(&triggers.clock),
            triggers,
            tracker,
            advancing: std::sync::Mutex::default(),
        })
    }

    /// The trigger path (its metrics and executor clients).
    pub(super) fn triggers(&self) -> &Arc<TriggerPath> {
        &self.triggers
    }
    /// Asks the executor running `log` to kill it (best effort: a run that ended meanwhile
    /// has nothing to kill). A run whose `/run` is still on its way has no address yet — the
    /// trigger records it after the executor answers — so the kill waits for that record in
    /// the background, bounded by [`KILL_WAIT`]: a stop in that instant must still reach it.
    pub(super) async fn kill_log(self: &Arc<Self>, log: LogId) {
        let Ok(Some(row)) = self.store.load_log(log).await else { return };
        if row.trigger_code == 0 {
            let this = Arc::clone(self);
            self.tracker.spawn(async move { this.kill_when_sent(log).await });
            return;
        }
        self.kill_at(&row).await;
    }

    async fn kill_when_sent(&self, log: LogId) {
        let deadline = tokio::time::Instant::now() + KILL_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(KILL_POLL).await;
            match self.store.load_log(log).await {
                Ok(Some(row)) if row.trigger_code != 0 => return self.kill_at(&row).await,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return,
            }
        }
        tracing::warn!(log_id = log.0, "workflow run not killed: its trigger was never recorded");
    }

    async fn kill_at(&self, row: &crate::store::LogRow) {
        let Some(address) = row.executor_address.as_deref() else { return };
        if row.trigger_code != 200 || row.handle_code != 0 {
            return;
        }
        let reply = self.triggers.clients.for_group(row.job_group).await.kill(address, row.job_id.0).await;
        tracing::info!(log_id = row.id.0, code = reply.code, "workflow run killed");
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
                let runner = Arc::clone(&this);
                this.tracker.spawn(async move { runner.advance_for_results(instance, stored).await });
            }
        });
    }

    /// Advances `instance` for results stored at `stored`, one pass at a time on this admin: a
    /// result arriving while a pass runs asks for one more instead of a task of its own queueing
    /// on the instance's row lock. A map's results arrive by the thousand; each pass settles
    /// all that are in, so the passes stay few and a freed slot is refilled within one.
    async fn advance_for_results(self: &Arc<Self>, instance: InstanceId, stored: Instant) {
        {
            let mut advancing = self.advancing.lock().unwrap_or_else(|e| e.into_inner());
            match advancing.entry(instance) {
                Entry::Occupied(mut owed) => {
                    let earliest = owed.get().map_or(stored, |t| t.min(stored));
                    owed.insert(Some(earliest));
                    return;
                }
                Entry::Vacant(slot) => {
                    slot.insert(None);
                }
            }
        }
        let mut since = Some(stored);
        loop {
            if let Err(error) = self.advance_and_fire_since(instance, since).await {
                tracing::error!(instance = instance.0, %error, "cannot advance workflow instance");
            }
            let mut advancing = self.advancing.lock().unwrap_or_else(|e| e.into_inner());
            match advancing.get_mut(&instance).and_then(Option::take) {
                Some(owed) => since = Some(owed),
                None => {
                    advancing.remove(&instance);
                    return;
                }
            }
        }
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
            loop {
                let step = this.advance(instance, this.clock.now_ms()).await?;
                this.fire_runs(step.due, stored).await?;
                this.fire_items(instance, step.items, stored);
                for child in step.children {
                    this.advance_and_fire(child).await?;
                }
                if step.ended_child {
                    // A child instance ended: its parent's run ends and the parent goes on.
                    let parent = finish_parent(this.store.as_ref(), instance, this.clock.now_ms()).await?;
                    if let Some(parent) = parent {
                        this.advance_and_fire(parent).await?;
                    }
                }
                // A sub-workflow that could not start failed its node: plan what follows it.
                if !step.again {
                    return Ok(());
                }
            }
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

    /// Advances `id` at `now_ms`: the runs it made due now, for the caller to fire.
    async fn advance(&self, id: InstanceId, now_ms: i64) -> Result<Step, EngineError> {
        let Some(mut tx) = self.store.begin_instance(id).await? else { return Ok(Step::default()) };
        if tx.instance().status != InstanceStatus::Running {
            return Ok(Step::default());
        }
        // A graph this admin cannot read (written by a newer one: a node kind or field it does
        // not know) is left alone rather than planned as if it had no nodes.
        let Some(graph) = readable(id, &tx.instance().graph) else { return Ok(Step::default()) };
        let mut context = InstanceContext::new();
        let mut runs = tx.runs().await?;
        let fired: Vec<_> =
            runs.iter().filter(|r| r.status == RunStatus::Fired && r.shards > 0).map(|r| r.id).collect();
        let logs = tx.run_logs(&fired).await?;
        let mut new_runs = Vec::new();
        for run in runs.iter_mut().filter(|r| fired.contains(&r.id)) {
            let own: Vec<&RunLog> = logs.iter().filter(|l| l.run_id == run.id).collect();
            if own.len() < usize::try_from(run.shards).unwrap_or(usize::MAX)
                || !own.iter().all(|l| l.is_over())
            {
                continue;
            }
            let mut end = settle(&own, now_ms);
            let declared = graph.node(&run.node).and_then(|n| n.output_schema.as_ref());
            if end.status == RunStatus::Succeeded
                && let Some(output) = end.output.as_deref()
            {
                let value = serde_json::from_str(output).unwrap_or(Value::Null);
                if let Some(why) = declared.and_then(|schema| mismatch(schema, &value)) {
                    end.status = RunStatus::Failed;
                    end.message = Some(format!("the output does not match the node's outputSchema {why}"));
                } else if !context.join(&mut *tx, &run.node, value).await? {
                    end.status = RunStatus::Failed;
                    end.message = Some(format!("the instance context would exceed {MAX_CONTEXT} bytes"));
                }
            }
            if !tx.end_run(run.id, RunStatus::Fired, &end).await? {
                continue;
            }
            run.status = end.status;
            let node = graph.node(&run.node);
            let retries = node.map_or(0, |n| n.retries);
            if end.status == RunStatus::Failed && u32::try_from(run.attempt).unwrap_or(u32::MAX) <= retries {
                let delay = i64::from(node.map_or(0, |n| n.retry_delay_secs)) * 1000;
                new_runs.push(NewRun {
                    node: run.node.clone(),
                    attempt: run.attempt + 1,
                    status: RunStatus::Due,
                    due_ms: now_ms + delay,
                    output: None,
                    message: None,
                    deadline_ms: 0,
                });
            }
        }
        let mut items = step_maps(&mut *tx, &graph, &mut runs, &mut context, now_ms).await?;
        let retrying: Vec<String> = new_runs.iter().map(|r| r.node.clone()).collect();
        let states = node_states(&runs, &retrying);
        let branches = branches(&graph, &runs);
        // The planner reads the context only for conditions on data.
        let empty = serde_json::Map::new();
        let data = if graph.reads_data() { &*context.map(&mut *tx).await? } else { &empty };
        let planned = plan(&graph, &PlanInput { states: &states, branches: &branches, context: data });
        for (node, decision) in planned.decisions.iter().cloned() {
            let (status, output, message) = match decision {
                Decision::Run => (RunStatus::Due, None, None),
                Decision::Skip => {
                    (RunStatus::Skipped, None, Some("an incoming edge's condition did not hold".to_owned()))
                }
                Decision::Pass => (RunStatus::Passed, None, Some("disabled".to_owned())),
                Decision::Fail(why) => (RunStatus::Failed, None, Some(why)),
                Decision::Wait => (RunStatus::Waiting, None, Some("waiting for approval".to_owned())),
                Decision::Start => {
                    (RunStatus::Waiting, None, Some("waiting for its child workflow instance".to_owned()))
                }
                Decision::Map => (RunStatus::Waiting, None, Some("running its items".to_owned())),
                Decision::Branch(branch) => {
                    // The branch goes into the context too, for the conditions after it.
                    let output = branch_output(branch.as_deref());
                    context.join(&mut *tx, &node, output.clone()).await?;
                    let output = output.to_string();
                    let message = match &branch {
                        Some(to) => format!("took the branch to {to}"),
                        None => "no branch held and there is no default".to_owned(),
                    };
                    (RunStatus::Passed, Some(output), Some(message))
                }
            };
            // An approval's deadline runs from when it starts waiting.
            let deadline = graph
                .node(&node)
                .filter(|n| n.kind == NodeKind::Approval)
                .map_or(0, |n| i64::from(n.timeout_secs) * 1000);
            let deadline_ms =
                if status == RunStatus::Waiting && deadline > 0 { now_ms + deadline } else { 0 };
            new_runs.push(NewRun { node, attempt: 1, status, due_ms: now_ms, output, message, deadline_ms });
        }
        let ids = tx.insert_runs(&new_runs).await?;
        // Each sub-workflow's child starts in this transaction; one that cannot fails its node.
        let (mut again, mut children) = (false, Vec::new());
        for (run, id) in new_runs.iter().zip(&ids).filter(|(r, _)| r.status == RunStatus::Waiting) {
            let Some(node) = graph.node(&run.node).filter(|n| n.kind == NodeKind::Workflow) else { continue };
            let input = context.map(&mut *tx).await?;
            match start_child(&mut *tx, node, *id, input, now_ms).await? {
                Ok(child) => children.push(child),
                Err(why) => {
                    let end = RunEnd {
                        status: RunStatus::Failed,
                        output: None,
                        message: Some(format!("the child workflow did not start: {why}")),
                        end_ms: now_ms,
                    };
                    tx.end_run(*id, RunStatus::Waiting, &end).await?;
                    again = true;
                }
            }
        }
        let inserted: Vec<(&NewRun, RunId)> = new_runs.iter().zip(ids.iter().copied()).collect();
        let maps = start_maps(&mut *tx, &graph, &inserted, &mut context, now_ms).await?;
        again |= maps.again;
        items.extend(maps.triggers);
        let instance = tx.instance().clone();
        context.write(&mut *tx).await?;
        let ended = planned.outcome.filter(|_| retrying.is_empty() && !again);
        if let Some(ok) = ended {
            let status = if ok { InstanceStatus::Succeeded } else { InstanceStatus::Failed };
            tx.set_instance(status, instance.start_ms, now_ms).await?;
        }
        tx.commit().await?;
        if let Some(ok) = ended {
            self.triggers.metrics.workflow_instance_ended(if ok { "succeeded" } else { "failed" });
        }
        let due = new_runs
            .into_iter()
            .zip(ids)
            .filter(|(r, _)| r.status == RunStatus::Due && r.due_ms <= now_ms)
            .map(|(r, id)| RunRow::due(id, instance.id, r))
            .collect();
        Ok(Step {
            due,
            again,
            children,
            ended_child: ended.is_some() && instance.parent_run.is_some(),
            items,
        })
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
        let Some(graph) = readable(instance_id, &instance.graph) else { return Ok(()) };
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
            if let Some(why) = node.input_schema.as_ref().and_then(|schema| mismatch(schema, &context)) {
                self.fail_due(&run, &format!("the input does not match the node's inputSchema {why}"))
                    .await?;
                continue;
            }
            let log =
                NewLog { job_group: job.job.job_group, job_id: job.id, trigger_time: to_datetime(now_ms) };
            let deadline_ms =
                if node.timeout_secs > 0 { now_ms + i64::from(node.timeout_secs) * 1000 } else { 0 };
            takes.push(RunTake { run: run.id, log, deadline_ms });
            let request = TriggerRequest {
                fail_retry_count: Some(0),
                executor_param: node.param.clone(),
                workflow_context: Some(Arc::clone(&context)),
                node: Some(NodeFire {
                    instance: instance_id,
                    node: run.node.clone(),
                    run: run.id,
                    item: None,
                }),
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

    /// Sends map items' triggers in the background. A trigger that failed gets no callback, so
    /// the instance is advanced (the item settles: a retry, or its end); a job gone meanwhile
    /// ends the item's attempt with a failed result.
    fn fire_items(
        self: &Arc<Self>,
        instance: InstanceId,
        items: Vec<(RunId, TriggerRequest)>,
        stored: Option<Instant>,
    ) {
        for (run, mut request) in items {
            request.dispatch_from = stored;
            let this = Arc::clone(self);
            self.tracker.spawn(async move {
                let log = request.staged_log;
                let outcome = match this.triggers.trigger(request).await {
                    Ok(TriggerOutcome::Fired(fired)) => {
                        let ok = fired.first().is_some_and(|(_, code)| *code == 200);
                        if ok { Ok(()) } else { this.advance_and_fire(instance).await }
                    }
                    Ok(TriggerOutcome::ClaimGone | TriggerOutcome::JobMissing) => {
                        this.fail_item_log(log).await;
                        this.advance_and_fire(instance).await
                    }
                    Err(error) => Err(error),
                };
                if let Err(error) = outcome {
                    tracing::error!(run = run.0, %error, "workflow map item trigger failed");
                }
            });
        }
    }

    /// Stores a failed result on an item's log row whose trigger found no job.
    async fn fail_item_log(&self, log: Option<LogId>) {
        let Some(log_id) = log else { return };
        let result = crate::store::HandleResult {
            log_id,
            handle_time: to_datetime(self.clock.now_ms()),
            handle_code: 500,
            handle_msg: Some("the node's job no longer exists".to_owned()),
        };
        if let Err(error) = self.store.apply_handle_result(&result).await {
            tracing::error!(log_id = log_id.0, %error, "cannot fail a map item's log row");
        }
    }

    /// Fails a due run that cannot be fired, and advances its instance.
    async fn fail_due(self: &Arc<Self>, run: &RunRow, message: &str) -> Result<(), EngineError> {
        self.end_run(run.id, run.instance_id, RunStatus::Due, message).await
    }
}

/// The instance's graph, or `None` (logged) when this admin cannot read it.
fn readable(instance: InstanceId, graph: &str) -> Option<Graph> {
    match Graph::from_json(graph) {
        Ok(graph) => Some(graph),
        Err(error) => {
            tracing::error!(instance = instance.0, %error, "workflow instance left alone: its graph cannot be read");
            None
        }
    }
}
