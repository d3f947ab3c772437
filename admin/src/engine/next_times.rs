//! A job's trigger times, as the pre-read, FIX_DELAY and recovery all read them: the pre-read
//! window ([`PRE_READ_MS`]), upstream's refresh of the next valid time ([`Times`]), the zone a
//! job's schedule is computed in, and the mark of a parked FIX_DELAY job. Below the roles that
//! move trigger times, so none of them imports another for these rules.

use chrono_tz::Tz;

use crate::calendar::{DayRules, next_fire};
use crate::cron::parse_time_zone;
use crate::domain::ScheduleType;
use crate::store::JobRow;

/// Upstream `PRE_READ_MS`: the window the pre-read looks ahead, and the lateness beyond which
/// a trigger is a misfire.
pub const PRE_READ_MS: i64 = 5000;

/// `trigger_next_time` of a running FIX_DELAY job whose run has fired and not completed yet:
/// the pre-read never reaches it, and completion replaces it with `completion + delay`.
pub const FIX_DELAY_PARKED: i64 = i64::MAX;

/// The job's trigger times while its rules are applied (upstream mutates the job object).
pub(super) struct Times {
    pub(super) last: i64,
    pub(super) next: i64,
    pub(super) stopped: bool,
}

impl Times {
    /// Upstream `refreshNextValidTime(job, from)`: success → last = old next, next = new;
    /// no next time or an invalid schedule → the job is stopped (status 0, last 0, next 0).
    /// The next time honours the job's calendars and windows (`rules`).
    pub(super) fn refresh(
        &mut self,
        job: &JobRow,
        schedule_type: Option<ScheduleType>,
        (tz, rules): (Tz, &DayRules),
        from_ms: i64,
    ) {
        let conf = job.job.schedule_conf.as_deref().unwrap_or_default();
        match schedule_type.map(|t| next_fire(t, conf, tz, rules, from_ms)) {
            Some(Ok(Some(next))) => {
                self.last = self.next;
                self.next = next;
            }
            outcome => {
                tracing::error!(job_id = job.id.0, ?outcome, "refresh next trigger time failed, job stopped");
                *self = Self { last: 0, next: 0, stopped: true };
            }
        }
    }

    /// FIX_DELAY after firing: remember the fire time, wait for completion.
    pub(super) fn park(&mut self) {
        self.last = self.next;
        self.next = FIX_DELAY_PARKED;
    }
}

/// The zone the job's schedule is computed in (jobwheel extension): its own IANA zone from
/// `jobwheel_job_zone` when it has one, else `fallback` (`EngineConfig::time_zone`). A stored name that
/// is not a zone falls back to the engine's zone with a warning rather than stopping the
/// job: the job keeps running on the admin's clock, and the log says why.
pub(crate) fn job_time_zone(job: &JobRow, fallback: Tz) -> Tz {
    let Some(name) = job.time_zone.as_deref() else { return fallback };
    parse_time_zone(name).unwrap_or_else(|error| {
        tracing::warn!(job_id = job.id.0, zone = name, %error, "invalid job time zone, using the admin's");
        fallback
    })
}
