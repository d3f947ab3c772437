//! [`WorkflowSweep`]: once a second on every admin, start scheduled instances, admit queued
//! ones, and recover what no admin is handling — instances started but not planned, runs whose
//! results were stored by an admin that died before it advanced them, child instances that ended
//! before their parent was told, due runs nobody fired
//! (a dead admin's, or retries whose delay passed), map runs with items left (a map item's retry
//! or a result nobody settled), and fired runs past their node's timeout;
//! last, raise the alarms of instances that ended FAILED and of scheduled starts kept as MISSED
//! (docs/workflows.md, "Alarms"). Each step is guarded in the store, so admins sweeping together
//! do each thing once.
//!
//! The alarms wait in no claim state: each sweep reads the instances that ended in those states
//! since its last look, by end time (`i_instance_ended`), and raises each on the alarm desk,
//! whose event key (`WORKFLOW_FAILED:instance:<id>:<end_ms>`) is recorded once — so of several
//! admins one raises it, and a second failure after a rerun is a new event. Each look reaches
//! [`LOOK_BACK_MS`] behind the sweep's time, for an end stored by a transaction that committed
//! late; an admin's first look reaches back [`CATCH_UP_MS`], so an instance that ended just
//! before its admin died is still told by the next sweep of any admin. The raising runs in a
//! task of its own, so a slow mail server never holds up the sweep.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::task::TaskTracker;

use super::EngineError;
use super::alarm_desk::AlarmDesk;
use super::next_times::PRE_READ_MS;
use super::workflow_children::finish_parent;
use super::workflow_runner::InstanceRunner;
use crate::alarm::{Alarm, FailedNode, WorkflowAlarmEvent, ended_key, ended_kind};
use crate::calendar::next_fire;
use crate::cron::parse_time_zone;
use crate::domain::{MisfireStrategy, Overflow, TriggerType};
use crate::store::{
    Admission, InstanceId, InstanceRow, InstanceStatus, NewInstance, RunStatus, StartOutcome, Store,
    WorkflowRow,
};
use crate::workflow::{NodeState, WorkflowDays, node_states};

/// Due runs younger than this are left to the admin that made them due (it fires them at
/// once); older ones are fired by whoever sweeps.
pub const RUN_GRACE_MS: i64 = 1000;
/// Rows one sweep step handles at most.
const SWEEP_BATCH: u32 = 500;
/// Ended instances of one state one look reads at most.
const ALARM_BATCH: u32 = 200;
/// How far each look for ended instances reaches behind the sweep's time.
pub const LOOK_BACK_MS: i64 = 30_000;
/// How far an admin's first look reaches back.
pub const CATCH_UP_MS: i64 = 600_000;
/// The ended states that are told.
const TOLD: [InstanceStatus; 2] = [InstanceStatus::Failed, InstanceStatus::Missed];

/// What one sweep did (tests look at it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Scheduled instances started (or queued).
    pub started: usize,
    /// Instances advanced.
    pub advanced: usize,
    /// Runs fired.
    pub fired: usize,
    /// Runs failed for their timeout.
    pub timed_out: usize,
    /// Approvals decided by their deadline.
    pub deadlines: usize,
    /// Alarms of failed instances and missed starts this admin raised.
    pub alarms: usize,
}

/// Where the looks have got to.
#[derive(Default)]
struct Scan {
    /// Per told state: read on after this (end time, id); none before the first look.
    after: [Option<(i64, InstanceId)>; 2],
    /// Instances looked at within the look-back, with the end they were looked at for.
    seen: HashMap<InstanceId, i64>,
}

/// The sweep, with where its looks for ended instances have got to.
pub(super) struct WorkflowSweep {
    store: Arc<dyn Store>,
    runner: Arc<InstanceRunner>,
    /// The admin's zone, for workflows without their own.
    time_zone: chrono_tz::Tz,
    desk: Arc<AlarmDesk>,
    tracker: TaskTracker,
    scan: Mutex<Scan>,
}

impl WorkflowSweep {
    pub(super) fn new(
        runner: Arc<InstanceRunner>,
        time_zone: chrono_tz::Tz,
        desk: Arc<AlarmDesk>,
        tracker: TaskTracker,
    ) -> Self {
        let store = Arc::clone(&runner.triggers().store);
        Self { store, runner, time_zone, desk, tracker, scan: Mutex::default() }
    }

    /// One sweep at `now_ms`.
    pub(super) async fn pass(&self, now_ms: i64) -> Result<SweepReport, EngineError> {
        let mut report = SweepReport::default();
        for workflow in self.store.due_workflows(now_ms).await? {
            if self.start_scheduled(&workflow, now_ms).await? {
                report.started += 1;
            }
        }
        for workflow in self.store.queued_workflows().await? {
            let Some(row) = self.store.load_workflow(workflow).await? else { continue };
            while let Some(id) =
                self.store.admit_queued(workflow, row.workflow.max_instances.max(1), now_ms).await?
            {
                self.runner.advance_and_fire(id).await?;
                report.advanced += 1;
            }
        }
        let mut stuck = self.store.idle_instances(SWEEP_BATCH).await?;
        stuck.extend(self.store.settled_runs(SWEEP_BATCH).await?.into_iter().map(|(_, instance)| instance));
        // Map runs with items left: retries whose delay passed, results a dead admin did not settle.
        stuck.extend(self.store.mapping_instances(SWEEP_BATCH).await?);
        stuck.sort_unstable();
        stuck.dedup();
        for instance in stuck {
            self.runner.advance_and_fire(instance).await?;
            report.advanced += 1;
        }
        // Children that ended while their admin died before it told the parent.
        for child in self.store.ended_children(SWEEP_BATCH).await? {
            if let Some(parent) = finish_parent(self.store.as_ref(), child, now_ms).await? {
                self.runner.advance_and_fire(parent).await?;
                report.advanced += 1;
            }
        }
        for (run, instance) in self.store.overdue_runs(now_ms, SWEEP_BATCH).await? {
            let logs = self.store.instance_runs(instance).await?;
            let log = logs.iter().find(|r| r.id == run).and_then(|r| r.log_id);
            self.runner.end_fired(run, instance, "timed out: the node's timeout passed").await?;
            if let Some(log) = log {
                self.runner.kill_log(log).await;
            }
            report.timed_out += 1;
        }
        let due = self.store.due_runs(now_ms - RUN_GRACE_MS, SWEEP_BATCH).await?;
        report.fired = due.len();
        self.runner.fire_runs(due, None).await?;
        report.alarms = self.raise_ended(now_ms).await?;
        Ok(report)
    }

    /// Starts one scheduled instance of `workflow` (due at its `trigger_next_time`) and moves its
    /// schedule on under its calendars and windows, in one transaction; more than 5 s late is a
    /// misfire: `FIRE_ONCE_NOW` starts it now, `DO_NOTHING` only moves the schedule on and keeps
    /// the start as MISSED (as does a start skipped at max instances). A due time its calendars
    /// no longer allow (one changed since the time was computed) moves on without a start.
    /// True if an instance started or queued.
    async fn start_scheduled(&self, row: &WorkflowRow, now_ms: i64) -> Result<bool, EngineError> {
        let w = &row.workflow;
        let tz = w.time_zone.as_deref().and_then(|z| parse_time_zone(z).ok()).unwrap_or(self.time_zone);
        let rules = WorkflowDays::from_stored(&w.days).rules(&*self.store).await?;
        let schedule = w.schedule_type.known();
        let conf = w.schedule_conf.as_deref().unwrap_or_default();
        let due = w.trigger_next_time;
        let late = now_ms > due + PRE_READ_MS;
        // False only when a calendar changed after the due time was computed under it.
        let allowed = rules.allows(tz, due);
        let from = if late { now_ms } else { due };
        let next = match schedule.map(|s| next_fire(s, conf, tz, &rules, from)) {
            Some(Ok(Some(next))) => Some(next),
            outcome => {
                tracing::error!(workflow = row.id.0, ?outcome, "workflow schedule has no next time, stopped");
                None
            }
        };
        let advance = Some((due, due, next.unwrap_or(0), next.is_none()));
        let fire_once = MisfireStrategy::of(&w.misfire_strategy) == MisfireStrategy::FireOnceNow;
        // A missed start under DO_NOTHING only moves the schedule on: nothing may start.
        let starts = allowed && (!late || fire_once);
        if allowed && late && !fire_once {
            tracing::warn!(workflow = row.id.0, due, "workflow start missed (DO_NOTHING)");
        }
        let new = NewInstance {
            workflow_id: row.id,
            trigger_type: if late { TriggerType::Misfire } else { TriggerType::Cron },
            rerun_of: None,
            fire_time_ms: if late { now_ms } else { due },
            graph: w.graph.clone(),
            context: "{}".into(),
        };
        let admission = Admission {
            max: if starts { w.max_instances.max(1) } else { 0 },
            queue: starts && Overflow::of(&w.overflow) == Overflow::Queue,
            advance,
            now_ms,
            keep_missed: allowed,
        };
        match self.store.start_instance(&new, admission).await? {
            StartOutcome::Started(id) => {
                self.runner.advance_and_fire(id).await?;
                Ok(true)
            }
            StartOutcome::Queued(_) => Ok(true),
            StartOutcome::Skipped | StartOutcome::Gone => Ok(false),
        }
    }

    /// Looks at what ended since the last look and raises what no admin raised yet; answers
    /// how many it raised.
    async fn raise_ended(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for (slot, status) in TOLD.into_iter().enumerate() {
            for instance in self.look(slot, status, now_ms).await? {
                if self.store.event_recorded(&ended_key(ended_kind(&instance), &instance)).await? {
                    continue; // raised by another admin, or before a restart
                }
                raised += 1;
                let (store, desk) = (Arc::clone(&self.store), Arc::clone(&self.desk));
                self.tracker.spawn(async move {
                    let id = instance.id;
                    let raised = match alarm_event(store.as_ref(), instance).await {
                        Ok(Some(event)) => {
                            desk.alarm(&Alarm::workflow_ended(event), now_ms).await.map(|_| ())
                        }
                        Ok(None) => Ok(()), // the workflow is gone
                        Err(error) => Err(error),
                    };
                    if let Err(error) = raised {
                        tracing::error!(instance = id.0, %error, "workflow alarm not raised");
                    }
                });
            }
        }
        Ok(raised)
    }

    /// The instances in `status` that ended since the last look and were not looked at yet.
    async fn look(
        &self,
        slot: usize,
        status: InstanceStatus,
        now_ms: i64,
    ) -> Result<Vec<InstanceRow>, EngineError> {
        let from = self.scan.lock().expect("scan lock").after[slot]
            .unwrap_or((now_ms.saturating_sub(CATCH_UP_MS), InstanceId(0)));
        let rows = self.store.ended_instances(status, from, ALARM_BATCH).await?;
        let mut scan = self.scan.lock().expect("scan lock");
        // A full batch reads on from its last row; otherwise everything up to now was read, and
        // the next look reaches back again for late commits.
        scan.after[slot] = match rows.last() {
            Some(last) if rows.len() == ALARM_BATCH as usize => Some((last.end_ms, last.id)),
            _ => Some((now_ms.saturating_sub(LOOK_BACK_MS), InstanceId(0))),
        };
        let oldest = scan.after.iter().flatten().map(|(end, _)| *end).min().unwrap_or(now_ms);
        scan.seen.retain(|_, end| *end >= oldest);
        Ok(rows.into_iter().filter(|i| scan.seen.insert(i.id, i.end_ms) != Some(i.end_ms)).collect())
    }
}

/// The alarm of `instance`: its workflow, group and failed nodes; `None` if the workflow is gone.
async fn alarm_event(
    store: &dyn Store,
    instance: InstanceRow,
) -> Result<Option<WorkflowAlarmEvent>, EngineError> {
    let Some(workflow) = store.load_workflow(instance.workflow_id).await? else { return Ok(None) };
    let group = store.load_group(workflow.workflow.job_group).await?;
    let runs = store.instance_runs(instance.id).await?;
    let failed_nodes = node_states(&runs, &[])
        .into_iter()
        .filter(|(_, state)| *state == NodeState::Failed)
        .map(|(node, _)| {
            let message = runs
                .iter()
                .filter(|r| r.node == node && r.status == RunStatus::Failed)
                .max_by_key(|r| r.id)
                .and_then(|r| r.message.clone())
                .unwrap_or_default();
            FailedNode { node, message }
        })
        .collect();
    Ok(Some(WorkflowAlarmEvent { workflow, group, instance, failed_nodes }))
}
