//! The `Backfills` role (docs/backfill.md): runs a job's or a workflow's schedule over a past
//! range. Once a second on every admin, each running backfill hands out its next scheduled
//! times — under its calendars, in order, each once — while fewer than its parallelism of its
//! runs are unfinished, and sends them: a job's trigger (`BACKFILL`, keyed and timed as the
//! schedule's fire of that time: `job:<id>@<time>`) or a workflow's instance (its fire time
//! that time). A time that already ran is skipped unless the request says to run it again.
//!
//! Exactly once per time, at least once per run: the times are handed out under the backfill's
//! row lock in one transaction with the cursor that moves past them, so two admins hand each
//! time out once; a time handed out by an admin that died before sending it is sent again by
//! the next sweep after [`UNSENT_AFTER_MS`] (claimed, so by one admin) — with the same per-fire
//! key, so a job that keys its work on it does the work once. The range is walked lazily from
//! the cursor: memory does not grow with it.

use std::sync::Arc;

use super::EngineError;
use super::fire::TriggerRequest;
use super::next_times::job_time_zone;
use super::trigger::{TriggerOutcome, TriggerPath};
use super::workflows::Workflows;
use crate::calendar::{ScheduleWalk, rules_by_job};
use crate::cron::{Schedule, parse_time_zone};
use crate::domain::TriggerType;
use crate::store::{
    BackfillKind, BackfillRow, BackfillStatus, FireRun, JobId, Store, UnsentFire, WorkflowId,
};
use crate::workflow::WorkflowDays;

/// A handed-out time not sent after this long is sent again (its admin died in between).
pub const UNSENT_AFTER_MS: i64 = 30_000;
/// Times one backfill hands out in one pass at most.
const STEP_MAX: i64 = 200;
/// Backfills one pass drives at most.
const PASS_MAX: u32 = 100;

/// What one pass did (tests look at it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackfillReport {
    /// Times sent.
    pub sent: usize,
    /// Times skipped because they already ran.
    pub skipped: usize,
    /// Backfills that ended.
    pub ended: usize,
}

/// Drives the running backfills.
pub struct Backfills {
    store: Arc<dyn Store>,
    triggers: Arc<TriggerPath>,
    workflows: Arc<Workflows>,
    /// The admin's zone, for targets without their own.
    time_zone: chrono_tz::Tz,
}

impl Backfills {
    pub(super) fn new(
        triggers: Arc<TriggerPath>,
        workflows: Arc<Workflows>,
        time_zone: chrono_tz::Tz,
    ) -> Self {
        Self { store: Arc::clone(&triggers.store), triggers, workflows, time_zone }
    }

    /// One pass at `now_ms`: resend what a dead admin handed out, then step every running backfill.
    pub async fn pass(&self, now_ms: i64) -> Result<BackfillReport, EngineError> {
        let mut report = BackfillReport::default();
        for fire in self.store.unsent_fires(now_ms - UNSENT_AFTER_MS, PASS_MAX).await? {
            if !self.store.reclaim_fire(&fire, now_ms).await? {
                continue; // another admin took it
            }
            if let Some(row) = self.store.load_backfill(fire.backfill_id).await? {
                self.send(&row, &UnsentFire { claimed_ms: now_ms, ..fire }).await?;
                report.sent += 1;
            }
        }
        for id in self.store.running_backfills(PASS_MAX).await? {
            self.step(id, now_ms, &mut report).await?;
        }
        Ok(report)
    }

    /// Hands out and sends `id`'s next times; ends it when its range is walked and its runs
    /// are over.
    async fn step(&self, id: i64, now_ms: i64, report: &mut BackfillReport) -> Result<(), EngineError> {
        // Read before the lock: on SQLite the lock is the one writer, and the reads need it.
        let Some(row) = self.store.load_backfill(id).await? else { return Ok(()) };
        let walk = self.walk(&row).await?;
        let Some(mut tx) = self.store.begin_backfill(id).await? else { return Ok(()) };
        let b = tx.backfill().backfill.clone();
        if b.status != BackfillStatus::Running {
            return Ok(());
        }
        let Some(walk) = walk else {
            tx.end(BackfillStatus::Failed, Some("its job or workflow no longer exists"), now_ms).await?;
            tx.commit().await?;
            report.ended += 1;
            return Ok(());
        };
        let in_flight = tx.in_flight().await?;
        let room = (i64::from(b.parallelism) - in_flight).clamp(0, STEP_MAX);
        let (mut cursor, mut handed, mut skipped) = (b.cursor_ms, Vec::new(), 0);
        while i64::try_from(handed.len()).unwrap_or(i64::MAX) < room {
            let Some(at) = walk.next(cursor, b.to_ms) else { break };
            cursor = at;
            if b.rerun_existing == 0 && tx.ran_before(at).await? {
                skipped += 1;
                continue;
            }
            handed.push((tx.add_fire(at, now_ms).await?, at));
        }
        let count = i32::try_from(handed.len()).unwrap_or(i32::MAX);
        if cursor != b.cursor_ms {
            tx.advance(cursor, count, skipped).await?;
        }
        let walked = walk.next(cursor, b.to_ms).is_none();
        if walked && handed.is_empty() && in_flight == 0 {
            tx.end(BackfillStatus::Done, None, now_ms).await?;
            report.ended += 1;
        }
        let row = tx.backfill().clone();
        tx.commit().await?;
        report.skipped += usize::try_from(skipped).unwrap_or(0);
        for (fire, at) in handed {
            self.send(&row, &UnsentFire { id: fire, backfill_id: id, scheduled_ms: at, claimed_ms: now_ms })
                .await?;
            report.sent += 1;
        }
        Ok(())
    }

    /// The schedule `row` walks, or `None` if its target is gone. A stored schedule that no
    /// longer parses (written by hand) has no times: the backfill ends with nothing run.
    async fn walk(&self, row: &BackfillRow) -> Result<Option<ScheduleWalk>, EngineError> {
        let parsed = |schedule, conf: Option<String>| {
            Schedule::parse(schedule, conf.as_deref().unwrap_or_default()).unwrap_or(Schedule::None)
        };
        let target = row.backfill.target_id;
        match row.kind() {
            Some(BackfillKind::Job) => {
                let id = JobId(i32::try_from(target).unwrap_or(0));
                let Some(job) = self.store.load_job(id).await? else { return Ok(None) };
                let rules = rules_by_job(&self.store.job_days(&[id]).await?).remove(&id).unwrap_or_default();
                let Some(schedule) = job.job.schedule_type.known() else { return Ok(None) };
                let schedule = parsed(schedule, job.job.schedule_conf.clone());
                Ok(Some(ScheduleWalk::new(schedule, job_time_zone(&job, self.time_zone), rules)))
            }
            Some(BackfillKind::Workflow) => {
                let Some(w) = self.store.load_workflow(WorkflowId(target)).await? else { return Ok(None) };
                let w = w.workflow;
                let rules = WorkflowDays::from_stored(&w.days).rules(&*self.store).await?;
                let tz =
                    w.time_zone.as_deref().and_then(|z| parse_time_zone(z).ok()).unwrap_or(self.time_zone);
                let Some(schedule) = w.schedule_type.known() else { return Ok(None) };
                Ok(Some(ScheduleWalk::new(parsed(schedule, w.schedule_conf), tz, rules)))
            }
            None => Ok(None),
        }
    }

    /// Sends one handed-out time and records what ran it.
    async fn send(&self, row: &BackfillRow, fire: &UnsentFire) -> Result<(), EngineError> {
        let target = row.backfill.target_id;
        let run = match row.kind() {
            Some(BackfillKind::Job) => {
                let request = TriggerRequest {
                    scheduled_ms: Some(fire.scheduled_ms),
                    ..TriggerRequest::new(JobId(i32::try_from(target).unwrap_or(0)), TriggerType::Backfill)
                };
                match self.triggers.trigger(request).await? {
                    TriggerOutcome::Fired(fired) => fired.first().map(|(log, _)| FireRun::Log(*log)),
                    TriggerOutcome::ClaimGone | TriggerOutcome::JobMissing => None,
                }
            }
            Some(BackfillKind::Workflow) => {
                let started = self.workflows.start_backfill(WorkflowId(target), fire.scheduled_ms).await?;
                started.map(FireRun::Instance)
            }
            None => None,
        };
        // Nothing ran (the target went away, or no log row came of the trigger): the time counts
        // as failed rather than waiting to be sent again for ever.
        if run.is_none() {
            tracing::warn!(backfill = row.id, at = fire.scheduled_ms, "backfill time not run");
        }
        self.store.set_fire_run(fire.id, run.unwrap_or(FireRun::Nothing)).await?;
        Ok(())
    }
}
