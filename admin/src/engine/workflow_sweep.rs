//! The workflow sweep, once a second on every admin: start scheduled instances, admit queued
//! ones, and recover what no admin is handling — instances started but not planned, runs whose
//! results were stored by an admin that died before it advanced them, due runs nobody fired
//! (a dead admin's, or retries whose delay passed), and fired runs past their node's timeout;
//! last, it raises the alarms of instances that ended failed and of missed starts
//! (`workflow_alarms.rs`).
//! Each step is guarded in the store, so admins sweeping together do each thing once.

use std::sync::Arc;

use super::EngineError;
use super::next_times::PRE_READ_MS;
use super::workflows::Workflows;
use crate::calendar::next_fire;
use crate::cron::parse_time_zone;
use crate::domain::TriggerType;
use crate::domain::{MisfireStrategy, Overflow};
use crate::store::{Admission, NewInstance, StartOutcome, WorkflowRow};
use crate::workflow::WorkflowDays;

/// Due runs younger than this are left to the admin that made them due (it fires them at
/// once); older ones are fired by whoever sweeps.
pub const RUN_GRACE_MS: i64 = 1000;
/// Rows one sweep step handles at most.
const SWEEP_BATCH: u32 = 500;

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
    /// Alarms of failed instances and missed starts this admin raised.
    pub alarms: usize,
}

impl Workflows {
    /// One sweep at `now_ms`.
    pub async fn sweep(self: &Arc<Self>, now_ms: i64) -> Result<SweepReport, EngineError> {
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
                self.advance_and_fire(id).await?;
                report.advanced += 1;
            }
        }
        let mut stuck = self.store.idle_instances(SWEEP_BATCH).await?;
        stuck.extend(self.store.settled_runs(SWEEP_BATCH).await?.into_iter().map(|(_, instance)| instance));
        stuck.sort_unstable();
        stuck.dedup();
        for instance in stuck {
            self.advance_and_fire(instance).await?;
            report.advanced += 1;
        }
        for (run, instance) in self.store.overdue_runs(now_ms, SWEEP_BATCH).await? {
            let logs = self.store.instance_runs(instance).await?;
            let log = logs.iter().find(|r| r.id == run).and_then(|r| r.log_id);
            self.end_fired(run, instance, "timed out: the node's timeout passed").await?;
            if let Some(log) = log {
                self.kill_log(log).await;
            }
            report.timed_out += 1;
        }
        let due = self.store.due_runs(now_ms - RUN_GRACE_MS, SWEEP_BATCH).await?;
        report.fired = due.len();
        self.fire_runs(due, None).await?;
        report.alarms = self.alarms.raise_ended(now_ms).await?;
        Ok(report)
    }

    /// Starts one scheduled instance of `workflow` (due at its `trigger_next_time`) and moves its
    /// schedule on under its calendars and windows, in one transaction; more than 5 s late is a
    /// misfire: `FIRE_ONCE_NOW` starts it now, `DO_NOTHING` only moves the schedule on and keeps
    /// the start as MISSED (as does a start skipped at max instances). A due time its calendars
    /// no longer allow (one changed since the time was computed) moves on without a start.
    /// True if an instance started or queued.
    async fn start_scheduled(self: &Arc<Self>, row: &WorkflowRow, now_ms: i64) -> Result<bool, EngineError> {
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
                self.advance_and_fire(id).await?;
                Ok(true)
            }
            StartOutcome::Queued(_) => Ok(true),
            StartOutcome::Skipped | StartOutcome::Gone => Ok(false),
        }
    }
}
