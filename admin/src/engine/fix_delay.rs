//! FIX_DELAY (jobwheel extension): the next run is due `delay` after the previous one
//! *completed*, not after it fired. The pre-read parks a fired FIX_DELAY job at
//! [`FIX_DELAY_PARKED`]; completion (or a trigger that failed to reach an executor, or claim
//! recovery discarding the parked run) unparks it through [`FixDelay`] with the completion time.

use std::sync::Arc;

use chrono_tz::Tz;

use super::EngineError;
use super::next_times::{FIX_DELAY_PARKED, Times, job_time_zone};
use crate::calendar::rules_by_job;
use crate::store::{JobId, Store, TriggerTimeUpdate};

/// Reschedules parked FIX_DELAY jobs; shared by the trigger path, completion and recovery.
pub(crate) struct FixDelay {
    store: Arc<dyn Store>,
    /// The zone of jobs without their own (`EngineConfig::time_zone`).
    default_zone: Tz,
}

impl FixDelay {
    pub(crate) fn new(store: Arc<dyn Store>, default_zone: Tz) -> Self {
        Self { store, default_zone }
    }

    /// If `job_id` is a running FIX_DELAY job parked for a run, schedules its next run
    /// `delay` after `completed_ms` (honouring its calendars and windows).
    pub(crate) async fn unpark(&self, job_id: JobId, completed_ms: i64) -> Result<(), EngineError> {
        let Some(job) = self.store.load_job(job_id).await? else { return Ok(()) };
        let parked = job.job.trigger_status == 1 && job.job.trigger_next_time == FIX_DELAY_PARKED;
        if !parked {
            return Ok(());
        }
        let schedule_type = job.job.schedule_type.known();
        let mut times =
            Times { last: job.job.trigger_last_time, next: job.job.trigger_next_time, stopped: false };
        let rules = rules_by_job(&self.store.job_days(&[job_id]).await?).remove(&job_id).unwrap_or_default();
        let zone = job_time_zone(&job, self.default_zone);
        times.refresh(&job, schedule_type, (zone, &rules), completed_ms);
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
