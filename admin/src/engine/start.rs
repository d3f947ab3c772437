//! Starting a schedule: the first fire time of a job being started (upstream
//! `JobInfoController.start`) or of a workflow whose schedule is saved or started — one rule,
//! the schedule's next valid time that its calendars and windows allow, with the two
//! differences below. Handlers only call it (ARCHITECTURE.md: no scheduling rule in a handler).
//!
//! - A **job** is found by the pre-read, which looks [`PRE_READ_MS`] ahead and treats anything
//!   behind that as a misfire, so its first fire is the next valid time after now + 5 s (as
//!   upstream's), and a job must have a schedule to be started.
//! - A **workflow** is started by the sweep at its time, so its first start is the next valid
//!   time after now; a workflow without a schedule (NONE) starts only by hand or API, and its
//!   schedule is NONE, CRON or FIX_RATE (no FIX_DELAY: an instance is not one run).

use chrono_tz::Tz;

use super::EngineError;
use super::next_times::PRE_READ_MS;
use crate::calendar::{DayRules, next_fire};
use crate::domain::{Named, ScheduleType};
use crate::store::{Job, NewWorkflow};

/// What is being started, for the rules that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Starting {
    /// A job (`/start`, or a running job's schedule edited).
    Job,
    /// A workflow (saved, or `/start`).
    Workflow,
}

/// The first fire time of a schedule of `schedule_type` and `conf` started at `now_ms`, read in
/// `tz` under `rules`: `None` for a workflow without a schedule. Refused (with the field at
/// fault) for a type `starting` may not have, a schedule that does not parse and one with no
/// future fire time (calendars included).
pub fn first_start(
    starting: Starting,
    schedule_type: &Named<ScheduleType>,
    conf: Option<&str>,
    (tz, rules): (Tz, &DayRules),
    now_ms: i64,
) -> Result<Option<i64>, EngineError> {
    let refused = |msg: String| EngineError::Refused(msg);
    let kind = match (starting, schedule_type.known()) {
        (Starting::Job, None) => {
            return Err(refused(format!("scheduleType: unknown type {:?}", schedule_type.as_str())));
        }
        (Starting::Job, Some(ScheduleType::None)) => {
            return Err(refused("scheduleType: a job with schedule type NONE cannot be started".to_owned()));
        }
        (Starting::Job, Some(kind)) => kind,
        (Starting::Workflow, Some(ScheduleType::None)) => return Ok(None),
        (Starting::Workflow, Some(kind @ (ScheduleType::Cron | ScheduleType::FixRate))) => kind,
        (Starting::Workflow, _) => return Err(refused("scheduleType: NONE, CRON or FIX_RATE".to_owned())),
    };
    let from_ms = match starting {
        Starting::Job => now_ms + PRE_READ_MS,
        Starting::Workflow => now_ms,
    };
    let next = next_fire(kind, conf.unwrap_or_default(), tz, rules, from_ms)
        .map_err(|e| refused(format!("scheduleConf: {e}")))?;
    match (next, starting) {
        (Some(next), _) => Ok(Some(next)),
        (None, Starting::Job) => {
            let why = if rules.is_empty() { "" } else { " its calendars and exclusion windows allow" };
            Err(refused(format!("scheduleConf: the schedule has no future fire time{why}")))
        }
        (None, Starting::Workflow) => Err(refused(
            "onlyOn, neverOn, exclusionWindows: they leave the schedule no start time".to_owned(),
        )),
    }
}

/// The first `trigger_next_time` of `job` started at `now_ms`, its schedule read in `tz` under
/// its day `rules` ([`first_start`] for a job, which always has one).
pub fn first_fire_time(job: &Job, tz: Tz, rules: &DayRules, now_ms: i64) -> Result<i64, EngineError> {
    let first =
        first_start(Starting::Job, &job.schedule_type, job.schedule_conf.as_deref(), (tz, rules), now_ms)?;
    first.ok_or_else(|| EngineError::Refused("scheduleType: a job needs a schedule to be started".to_owned()))
}

/// The first start of `workflow`'s schedule (saved while running, or `/start`) at `now_ms`, read
/// in `tz` under its day `rules` ([`first_start`] for a workflow): `None` when it has no
/// schedule and starts only by hand or API.
pub fn first_workflow_start(
    workflow: &NewWorkflow,
    tz: Tz,
    rules: &DayRules,
    now_ms: i64,
) -> Result<Option<i64>, EngineError> {
    first_start(
        Starting::Workflow,
        &workflow.schedule_type,
        workflow.schedule_conf.as_deref(),
        (tz, rules),
        now_ms,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_990_000_000; // a whole second

    fn start(starting: Starting, kind: &str, conf: &str) -> Result<Option<i64>, EngineError> {
        first_start(starting, &kind.into(), Some(conf), (chrono_tz::UTC, &DayRules::default()), NOW)
    }

    #[test]
    fn a_job_starts_past_the_pre_read_window_and_a_workflow_from_now() {
        assert_eq!(start(Starting::Job, "CRON", "* * * * * ?").expect("job"), Some(NOW + PRE_READ_MS + 1000));
        assert_eq!(start(Starting::Workflow, "CRON", "* * * * * ?").expect("workflow"), Some(NOW + 1000));
        assert_eq!(start(Starting::Workflow, "FIX_RATE", "30").expect("rate"), Some(NOW + 30_000));
    }

    #[test]
    fn each_refuses_what_it_may_not_have() {
        assert_eq!(start(Starting::Workflow, "NONE", "").expect("by hand only"), None);
        let refusal = |r: Result<Option<i64>, EngineError>| match r {
            Err(EngineError::Refused(msg)) => msg,
            other => panic!("not refused: {other:?}"),
        };
        assert!(refusal(start(Starting::Job, "NONE", "")).contains("NONE cannot be started"));
        assert!(refusal(start(Starting::Job, "WEEKLY", "")).contains("unknown type \"WEEKLY\""));
        assert_eq!(
            refusal(start(Starting::Workflow, "FIX_DELAY", "30")),
            "scheduleType: NONE, CRON or FIX_RATE"
        );
        assert!(refusal(start(Starting::Workflow, "CRON", "not cron")).starts_with("scheduleConf: "));
        assert!(refusal(start(Starting::Job, "CRON", "0 0 0 1 1 ? 2001")).contains("no future fire time"));
    }
}
