//! Starting a job (upstream `JobInfoController.start`): its first fire time is the schedule's
//! next valid time after now + [`PRE_READ_MS`], so the next pre-read finds it rather than
//! treating it as a misfire (and, with calendars, the first such time they allow).

use chrono_tz::Tz;

use super::EngineError;
use super::next_times::PRE_READ_MS;
use crate::calendar::{DayRules, next_fire};
use crate::domain::ScheduleType;
use crate::store::Job;

/// The first `trigger_next_time` of `job` started at `now_ms`, its schedule read in `tz` under
/// its day `rules`. Refused (with the field at fault) for schedule type NONE, an unknown type,
/// a schedule that does not parse and one with no future fire time (calendars included).
pub fn first_fire_time(job: &Job, tz: Tz, rules: &DayRules, now_ms: i64) -> Result<i64, EngineError> {
    let refused = |msg: String| EngineError::Refused(msg);
    let schedule_type = job
        .schedule_type
        .known()
        .ok_or_else(|| refused(format!("scheduleType: unknown type {:?}", job.schedule_type.as_str())))?;
    if schedule_type == ScheduleType::None {
        return Err(refused("scheduleType: a job with schedule type NONE cannot be started".to_owned()));
    }
    let conf = job.schedule_conf.as_deref().unwrap_or_default();
    next_fire(schedule_type, conf, tz, rules, now_ms + PRE_READ_MS)
        .map_err(|e| refused(format!("scheduleConf: {e}")))?
        .ok_or_else(|| {
            let why = if rules.is_empty() { "" } else { " its calendars and exclusion windows allow" };
            refused(format!("scheduleConf: the schedule has no future fire time{why}"))
        })
}
