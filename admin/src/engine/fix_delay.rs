//! FIX_DELAY (jobwheel extension): the next run is due `delay` after the previous one
//! *completed*, not after it fired. The pre-read parks a fired FIX_DELAY job at
//! [`FIX_DELAY_PARKED`]; completion (or a trigger that failed to reach an executor) unparks it
//! here with the completion time.

use super::schedule::Times;
use super::{Engine, EngineError};
use crate::calendar::{DayRules, rules_by_job};
use crate::cron::ScheduleType;
use crate::store::{JobId, TriggerTimeUpdate};

/// `trigger_next_time` of a running FIX_DELAY job whose run has fired and not completed yet:
/// the pre-read never reaches it, and completion replaces it with `completion + delay`.
pub const FIX_DELAY_PARKED: i64 = i64::MAX;

impl Engine {
    /// One job's calendars and windows, as the scheduler applies them.
    pub(crate) async fn job_day_rules(&self, job_id: JobId) -> Result<DayRules, EngineError> {
        Ok(rules_by_job(&self.store.job_days(&[job_id]).await?).remove(&job_id).unwrap_or_default())
    }

    /// FIX_DELAY: the run that parked `job_id` is over at `completed_ms`; schedule the next one
    /// `delay` after it. Does nothing unless the job is running and parked.
    pub(crate) async fn unpark_fix_delay(&self, job_id: JobId, completed_ms: i64) -> Result<(), EngineError> {
        let Some(job) = self.store.load_job(job_id).await? else { return Ok(()) };
        let parked = job.job.trigger_status == 1 && job.job.trigger_next_time == FIX_DELAY_PARKED;
        if !parked {
            return Ok(());
        }
        let schedule_type = job.job.schedule_type.parse::<ScheduleType>().ok();
        let mut times =
            Times { last: job.job.trigger_last_time, next: job.job.trigger_next_time, stopped: false };
        let rules = self.job_day_rules(job_id).await?;
        times.refresh(&job, schedule_type, (self.job_time_zone(&job), &rules), completed_ms);
        let update = TriggerTimeUpdate {
            job_id,
            // Keep the fire time recorded when parking as the last trigger time.
            trigger_last_time: if times.stopped { 0 } else { job.job.trigger_last_time },
            trigger_next_time: times.next,
            stop: times.stopped,
        };
        // The update goes through the schedule lock so it never interleaves with a pre-read.
        let mut tx = self.store.begin_schedule().await?;
        tx.update_trigger_times(&[update]).await?;
        tx.commit().await?;
        tracing::debug!(job_id = job_id.0, next = times.next, "FIX_DELAY job rescheduled after completion");
        Ok(())
    }
}
