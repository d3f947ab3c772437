//! A job's day rules — "only on" calendars, "never on" calendars and exclusion windows — and
//! the next fire time that honours them, everything read in the job's zone.
//!
//! The rules act on the schedule, not on the firing: an excluded time is never chosen as the
//! job's `trigger_next_time`, so it is not a misfire (nothing was due) and leaves no log. The
//! search takes the schedule's next time and, while that time is excluded, jumps to the end of
//! what excludes it (the next local midnight for a day, the window's end for a window) and asks
//! the schedule again from there.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{Duration, LocalResult, NaiveDate, NaiveDateTime, TimeZone};
use chrono_tz::Tz;

use super::days::{CalendarDays, DaySet};
use super::window::{Window, parse_stored_windows};
use crate::cron::{Schedule, ScheduleError, ScheduleType};
use crate::store::{JobDayRow, JobId, day_mode};

/// How many excluded candidates the search skips before it answers "no next time" (the job is
/// then stopped, as for a cron expression with no future time). Days are skipped whole, so this
/// covers decades of excluded days.
pub const MAX_SKIPS: usize = 20_000;

/// A job's day rules; the default has none (the schedule alone decides).
#[derive(Debug, Clone, Default)]
pub struct DayRules {
    only_on: Vec<Arc<DaySet>>,
    never_on: Vec<Arc<DaySet>>,
    windows: Vec<Window>,
}

impl DayRules {
    /// Rules from compiled calendars and windows.
    pub fn new(only_on: Vec<Arc<DaySet>>, never_on: Vec<Arc<DaySet>>, windows: Vec<Window>) -> Self {
        Self { only_on, never_on, windows }
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.only_on.is_empty() && self.never_on.is_empty() && self.windows.is_empty()
    }

    /// Whether a job may fire on `date`: in one of its "only on" calendars (if it has any) and
    /// in none of its "never on" calendars.
    pub fn day_allowed(&self, date: NaiveDate) -> bool {
        (self.only_on.is_empty() || self.only_on.iter().any(|c| c.contains(date)))
            && !self.never_on.iter().any(|c| c.contains(date))
    }

    /// Whether the rules allow a fire at `ms` in `tz` (a time computed under older rules — a
    /// calendar changed since — may no longer be allowed).
    pub fn allows(&self, tz: Tz, ms: i64) -> bool {
        self.is_empty()
            || tz
                .timestamp_millis_opt(ms)
                .single()
                .is_none_or(|t| self.excluded_until(t.naive_local()).is_none())
    }

    /// The first local date-time after `local` at which the rules may allow a fire, or `None`
    /// if they allow `local` itself.
    fn excluded_until(&self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        if !self.day_allowed(local.date()) {
            return Some((local.date() + Duration::days(1)).and_time(chrono::NaiveTime::MIN));
        }
        self.windows.iter().find(|w| w.contains(local.time())).map(|w| w.end_after(local))
    }

    /// The schedule's next fire time strictly after `from_ms` that the rules allow, in `tz`;
    /// `None` when the schedule has none or none within [`MAX_SKIPS`] excluded candidates.
    pub fn next_after(&self, schedule: &Schedule, tz: Tz, from_ms: i64) -> Option<i64> {
        let mut from = from_ms;
        for _ in 0..=MAX_SKIPS {
            let candidate = schedule.next_after(tz, from)?;
            if self.is_empty() {
                return Some(candidate);
            }
            let local = tz.timestamp_millis_opt(candidate).single()?.naive_local();
            let Some(resume) = self.excluded_until(local) else { return Some(candidate) };
            // The schedule's next time after `resume - 1 ms` may be `resume` itself; never go
            // backwards (a resume time in a DST overlap can map before the candidate).
            from = (first_instant_at_or_after(tz, resume) - 1).max(candidate);
        }
        None
    }
}

/// The first instant whose local time in `tz` is `local` or later: the earlier of two in a
/// DST overlap. In a gap (no such local time) it answers an instant at most a minute before
/// the gap's end: early is safe, since [`DayRules::next_after`] re-checks what it finds there.
fn first_instant_at_or_after(tz: Tz, local: NaiveDateTime) -> i64 {
    let mut probe = local;
    // Gaps are at most a few hours; minute steps find their end.
    for _ in 0..24 * 60 {
        match tz.from_local_datetime(&probe) {
            LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => {
                let instant = t.timestamp_millis();
                return if probe == local { instant } else { instant - 60_000 };
            }
            LocalResult::None => probe += Duration::minutes(1),
        }
    }
    local.and_utc().timestamp_millis()
}

/// The next fire time of a schedule under `rules` (upstream's `generateNextTriggerTime` with
/// jobwheel's calendars); `Ok(None)`: no next time, the scheduler stops the job.
pub fn next_fire(
    schedule_type: ScheduleType,
    schedule_conf: &str,
    tz: Tz,
    rules: &DayRules,
    from_ms: i64,
) -> Result<Option<i64>, ScheduleError> {
    Ok(rules.next_after(&Schedule::parse(schedule_type, schedule_conf)?, tz, from_ms))
}

/// A schedule walked over a range under its rules, parsed once (a backfill's times: the admin
/// counts them when one is asked for, the engine hands them out from its cursor).
#[derive(Debug, Clone)]
pub struct ScheduleWalk {
    schedule: Schedule,
    tz: Tz,
    rules: DayRules,
}

impl ScheduleWalk {
    /// The walk of a parsed schedule in `tz` under `rules`.
    pub fn new(schedule: Schedule, tz: Tz, rules: DayRules) -> Self {
        Self { schedule, tz, rules }
    }

    /// The first time after `after_ms` and not after `to_ms`.
    pub fn next(&self, after_ms: i64, to_ms: i64) -> Option<i64> {
        self.rules.next_after(&self.schedule, self.tz, after_ms).filter(|t| *t <= to_ms)
    }
}

/// The next `count` fire times under `rules`, each after the previous (the form's preview).
pub fn next_fires(
    schedule_type: ScheduleType,
    schedule_conf: &str,
    tz: Tz,
    rules: &DayRules,
    from_ms: i64,
    count: usize,
) -> Result<Vec<i64>, ScheduleError> {
    let schedule = Schedule::parse(schedule_type, schedule_conf)?;
    let mut times = Vec::with_capacity(count);
    let mut from = from_ms;
    while times.len() < count {
        let Some(next) = rules.next_after(&schedule, tz, from) else { break };
        times.push(next);
        from = next;
    }
    Ok(times)
}

/// Each job's rules from the store's rows (`CalendarStore::job_days`). A calendar is compiled
/// once however many jobs use it. Stored days that no longer parse (written by hand) count as
/// an empty calendar, with an error in the log.
pub fn rules_by_job(rows: &[JobDayRow]) -> HashMap<JobId, DayRules> {
    let mut compiled: HashMap<i64, Arc<DaySet>> = HashMap::new();
    let mut rules: HashMap<JobId, DayRules> = HashMap::new();
    for row in rows {
        let entry = rules.entry(row.job_id).or_default();
        if row.mode == day_mode::WINDOWS {
            match parse_stored_windows(&row.value) {
                Ok(windows) => entry.windows = windows,
                Err(error) => {
                    tracing::error!(job_id = row.job_id.0, %error, "stored exclusion windows unreadable")
                }
            }
            continue;
        }
        let calendar_id = row.calendar_id.unwrap_or_default();
        let set = compiled
            .entry(calendar_id)
            .or_insert_with(|| {
                Arc::new(CalendarDays::compile_stored(&row.value).unwrap_or_else(|error| {
                    tracing::error!(calendar_id, %error, "stored calendar unreadable, treated as empty");
                    DaySet::default()
                }))
            })
            .clone();
        if row.mode == day_mode::ONLY { entry.only_on.push(set) } else { entry.never_on.push(set) }
    }
    rules
}
