//! One pre-read cycle of the schedule thread (upstream `JobScheduleHelper`, docs/upstream.md
//! §5.1), made durable: every trigger the cycle takes from `xxl_job_info` is inserted as a ring
//! claim in the same transaction that advances `trigger_next_time`.
//!
//! [`Scheduler::schedule_cycle`] takes `now_ms` so tests drive it with controlled time; the spawned
//! loop in `scheduler.rs` only adds the clock and upstream's aligned sleeps.

use std::collections::HashMap;
use std::sync::Arc;

use chrono_tz::Tz;

use super::EngineError;
use super::fire::{JobSnapshot, TriggerRequest, to_datetime};
use super::next_times::{PRE_READ_MS, Times, job_time_zone};
use super::resolve::route_strategy;
use super::ring::{RingEntry, ring_second};
use super::scheduler::Scheduler;
use crate::calendar::{DayRules, rules_by_job};
use crate::domain::TriggerType;
use crate::domain::{MisfireStrategy, ScheduleType};
use crate::routing::ExecutorRouteStrategy;
use crate::store::{ClaimId, JobId, JobRow, NewClaim, NewLog, TriggerTimeUpdate};

/// The most fires one job gets from one shared pre-read: an every-second job's whole window
/// (five ring seconds and one fired now) and no more, whatever its schedule says.
///
/// Why shared pre-reads fill the window: upstream claims at most two fires of a job per
/// cycle, so an every-second job is claimed only a second or two ahead. When an admin dies,
/// its partitions reach another admin only after their leases run out (`share.rs`); claims
/// reaching the whole 5 s window bridge that hand-over, where one or two seconds would leave a
/// gap (a job found late fires once and resumes from now).
const FILL_WINDOW_MAX: usize = 6;

/// Where a planned trigger goes after the pre-read commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Fired immediately through the trigger pool.
    Now,
    /// Pushed into the ring slot of this second.
    Ring(u32),
}

/// One trigger a cycle planned (and claimed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedFire {
    /// The job.
    pub job_id: JobId,
    /// The claim inserted for it.
    pub claim: ClaimId,
    /// The fire time the claim records, epoch ms.
    pub fire_time_ms: i64,
    /// CRON for due and ring triggers, MISFIRE for `FIRE_ONCE_NOW`.
    pub trigger_type: TriggerType,
    /// Fired now or pushed into the ring.
    pub placement: Placement,
}

/// What one cycle did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CycleReport {
    /// Jobs the pre-read returned (upstream's `preReadSuc` is `pre_read > 0`).
    pub pre_read: usize,
    /// Triggers claimed, in job order.
    pub fires: Vec<PlannedFire>,
    /// Jobs whose trigger was more than 5 s late.
    pub misfired: Vec<JobId>,
    /// The trigger-time updates written (stops included).
    pub updates: Vec<TriggerTimeUpdate>,
}

/// The decisions for one job, before claims exist.
struct JobPlan {
    fires: Vec<(i64, TriggerType, Placement)>,
    misfired: bool,
    /// The fire time `DO_NOTHING` skipped, recorded as a missed fire (`missed.rs`).
    skipped: Option<i64>,
    update: TriggerTimeUpdate,
}

/// Upstream's three cases for one pre-read job; `clock` is the job's zone and day rules.
/// `fill_window` (shared scheduling) claims every fire time within the pre-read window rather
/// than upstream's one or two per cycle (see [`FILL_WINDOW_MAX`]).
fn plan_job(job: &JobRow, now_ms: i64, clock: (Tz, &DayRules), fill_window: bool) -> JobPlan {
    let schedule_type = job.job.schedule_type.known();
    let waits = schedule_type.is_some_and(ScheduleType::waits_for_completion);
    let next = job.job.trigger_next_time;
    let mut times = Times { last: job.job.trigger_last_time, next, stopped: false };
    let mut fires = Vec::new();
    let mut misfired = false;
    let mut skipped = None;
    if now_ms > next + PRE_READ_MS {
        misfired = true;
        tracing::warn!(job_id = job.id.0, next, "schedule misfire");
        let fire_once = MisfireStrategy::of(&job.job.misfire_strategy) == MisfireStrategy::FireOnceNow;
        if fire_once {
            fires.push((now_ms, TriggerType::Misfire, Placement::Now));
        } else {
            skipped = Some(next);
        }
        if fire_once && waits {
            times.park();
        } else {
            times.refresh(job, schedule_type, clock, now_ms);
        }
    } else if now_ms >= next {
        fires.push((next, TriggerType::Cron, Placement::Now));
        if waits {
            times.park();
        } else {
            times.refresh(job, schedule_type, clock, now_ms);
            if !times.stopped && now_ms + PRE_READ_MS > times.next {
                let ring_time = times.next;
                fires.push((ring_time, TriggerType::Cron, Placement::Ring(ring_second(ring_time))));
                times.refresh(job, schedule_type, clock, ring_time);
            }
        }
    } else {
        fires.push((next, TriggerType::Cron, Placement::Ring(ring_second(next))));
        if waits {
            times.park();
        } else {
            times.refresh(job, schedule_type, clock, next);
        }
    }
    while fill_window
        && !waits
        && !times.stopped
        && now_ms + PRE_READ_MS > times.next
        && fires.len() < FILL_WINDOW_MAX
    {
        let ring_time = times.next;
        fires.push((ring_time, TriggerType::Cron, Placement::Ring(ring_second(ring_time))));
        times.refresh(job, schedule_type, clock, ring_time);
    }
    let update = TriggerTimeUpdate {
        job_id: job.id,
        trigger_last_time: times.last,
        trigger_next_time: times.next,
        stop: times.stopped,
    };
    JobPlan { fires, misfired, skipped, update }
}

impl Scheduler {
    /// One pre-read at `now_ms`: under the schedule lock, read the jobs due within 5 s, decide
    /// misfire / fire now / ring for each, write their new trigger times and a claim per
    /// trigger, commit; then fire the "now" triggers on the pools and push the rest into the
    /// ring.
    pub async fn schedule_cycle(&self, now_ms: i64) -> Result<CycleReport, EngineError> {
        let started = std::time::Instant::now();
        // Before the jobs: a row read after it is current while the epoch stands.
        let epoch = self.store.job_epoch().await?;
        let mut tx = self.leases.begin(now_ms).await?;
        let jobs = tx.due_jobs(now_ms + PRE_READ_MS, self.pre_read_count).await?;
        let mut report = CycleReport { pre_read: jobs.len(), ..CycleReport::default() };
        let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
        // One read for the whole cycle; most jobs have no rules and the answer is empty.
        let day_rules =
            if ids.is_empty() { Default::default() } else { rules_by_job(&self.store.job_days(&ids).await?) };
        let no_rules = DayRules::default();
        let fill_window = self.leases.shared();
        let mut planned = Vec::new();
        // Pre-staged firing: a claim with its log row, or (a broadcast, whose shards depend on
        // the registry at fire time) a bare claim.
        let mut claims = Vec::new();
        let mut skipped = Vec::new();
        for job in &jobs {
            let rules = day_rules.get(&job.id).unwrap_or(&no_rules);
            let plan = plan_job(job, now_ms, (job_time_zone(job, self.time_zone), rules), fill_window);
            if plan.misfired {
                report.misfired.push(job.id);
                if plan.skipped.is_none() {
                    self.metrics.misfire("FIRE_ONCE_NOW", 1);
                }
            }
            if let Some(missed_ms) = plan.skipped {
                skipped.push((job, missed_ms));
            }
            let broadcast = route_strategy(job) == Some(ExecutorRouteStrategy::ShardingBroadcast);
            for (fire_time_ms, trigger_type, placement) in plan.fires {
                let claim = NewClaim { job_id: job.id, fire_time_ms, claimed_at_ms: now_ms };
                let log = NewLog {
                    job_group: job.job.job_group,
                    job_id: job.id,
                    trigger_time: to_datetime(fire_time_ms),
                };
                claims.push((claim, (!broadcast).then_some(log)));
                planned.push((job.id, fire_time_ms, trigger_type, placement));
            }
            report.updates.push(plan.update);
        }
        if !report.updates.is_empty() {
            tx.update_trigger_times(&report.updates).await?;
        }
        let claim_ids = if claims.is_empty() { Vec::new() } else { tx.stage_claims(&claims).await? };
        // In the transaction that advances the job: only the admin whose pre-read skipped it
        // records the skip, and a crash cannot keep the skip without its record.
        if !skipped.is_empty() {
            let rows: Vec<_> =
                skipped.iter().map(|(job, missed_ms)| self.missed.row(job, *missed_ms, 1, now_ms)).collect();
            tx.record_missed(&rows).await?;
        }
        // Crash points for the soak: only a cycle that claims something is worth dying in.
        let claiming = !planned.is_empty();
        if claiming {
            crate::fault::pass(crate::fault::FaultPoint::PreRead);
        }
        tx.commit().await?;
        if claiming {
            crate::fault::pass(crate::fault::FaultPoint::Claim);
        }
        self.metrics.pre_read(started.elapsed().as_secs_f64());
        for (job, _) in skipped {
            self.missed.recorded(job.id, 1);
        }
        let snapshots: HashMap<JobId, JobSnapshot> =
            jobs.into_iter().map(|row| (row.id, JobSnapshot { row: Arc::new(row), epoch })).collect();

        for ((job_id, fire_time_ms, trigger_type, placement), (claim, staged_log)) in
            planned.into_iter().zip(claim_ids)
        {
            report.fires.push(PlannedFire { job_id, claim, fire_time_ms, trigger_type, placement });
            self.in_flight.hold(claim);
            match placement {
                Placement::Now => {
                    let request = TriggerRequest {
                        claim: Some(claim),
                        // A misfire's compensation fires "now": it has no second to be late for.
                        scheduled_ms: (trigger_type == TriggerType::Cron).then_some(fire_time_ms),
                        staged_log,
                        snapshot: snapshots.get(&job_id).cloned(),
                        ..TriggerRequest::new(job_id, trigger_type)
                    };
                    self.triggers.submit(request);
                }
                Placement::Ring(second) => {
                    let job = snapshots.get(&job_id).cloned();
                    self.ring.push(second, RingEntry { claim, job_id, fire_time_ms, staged_log, job });
                }
            }
        }
        if !report.fires.is_empty() {
            tracing::debug!(pre_read = report.pre_read, fires = report.fires.len(), "schedule cycle");
        }
        Ok(report)
    }
}
