//! Upstream's `generateNextTriggerTime` for each schedule type (`domain::ScheduleType`), plus
//! jobwheel's FIX_DELAY.

use chrono_tz::Tz;

use super::expression::{CronError, CronExpression};
pub use crate::domain::ScheduleType;

/// Why a schedule is invalid; the messages are meant for the user who typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A CRON job's expression does not parse.
    #[error("invalid cron expression: {0}")]
    Cron(#[from] CronError),
    /// A FIX_RATE/FIX_DELAY interval is not a whole number of seconds ≥ 1.
    #[error("{schedule_type} needs a whole number of seconds >= 1, got `{conf}`")]
    Interval {
        /// FIX_RATE or FIX_DELAY.
        schedule_type: ScheduleType,
        /// What was configured.
        conf: String,
    },
}

/// What `schedule_conf` means once validated.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// NONE.
    None,
    /// CRON.
    Cron(std::sync::Arc<CronExpression>),
    /// FIX_RATE, in seconds.
    FixRate(u32),
    /// FIX_DELAY, in seconds.
    FixDelay(u32),
}

impl Schedule {
    /// Validates `conf` for `schedule_type`.
    ///
    /// Intervals parse like Java's `Integer.valueOf` (optional sign, no spaces) and must be
    /// ≥ 1, as upstream's job form requires.
    pub fn parse(schedule_type: ScheduleType, conf: &str) -> Result<Self, ScheduleError> {
        let interval = || {
            conf.parse::<i32>()
                .ok()
                .and_then(|seconds| u32::try_from(seconds).ok())
                .filter(|seconds| *seconds >= 1)
                .ok_or_else(|| ScheduleError::Interval { schedule_type, conf: conf.to_owned() })
        };
        Ok(match schedule_type {
            ScheduleType::None => Self::None,
            ScheduleType::Cron => Self::Cron(super::memo::parse(conf)?),
            ScheduleType::FixRate => Self::FixRate(interval()?),
            ScheduleType::FixDelay => Self::FixDelay(interval()?),
        })
    }

    /// The next trigger time after `from_ms` (epoch ms), or `None` if there is none.
    ///
    /// - CRON: the next matching instant strictly after `from_ms`, in `tz`; `None` past
    ///   year 2999.
    /// - FIX_RATE / FIX_DELAY: `from_ms + seconds * 1000`, rounded up to a whole second
    ///   (upstream 3.4.0; the time ring has one-second slots). For FIX_DELAY `from_ms` is
    ///   the previous run's completion time (or the start time for the first run).
    /// - NONE: `None`.
    pub fn next_after(&self, tz: Tz, from_ms: i64) -> Option<i64> {
        match self {
            Self::None => None,
            Self::Cron(expression) => expression.next_after(tz, from_ms).map(|t| t.timestamp_millis()),
            Self::FixRate(seconds) | Self::FixDelay(seconds) => {
                let next = from_ms.checked_add(i64::from(*seconds) * 1000)?;
                let partial = next.rem_euclid(1000);
                if partial == 0 { Some(next) } else { next.checked_add(1000 - partial) }
            }
        }
    }
}

/// Validates a job's schedule; the error message names what is wrong (for cron: the field
/// and why).
pub fn validate(schedule_type: ScheduleType, conf: &str) -> Result<(), ScheduleError> {
    Schedule::parse(schedule_type, conf).map(|_| ())
}

/// Upstream's `generateNextTriggerTime(job, from)`, plus FIX_DELAY (see [`Schedule::next_after`]).
///
/// `Ok(None)` means "no next time": the scheduler stops the job, as upstream does on null.
pub fn next_trigger_time(
    schedule_type: ScheduleType,
    schedule_conf: &str,
    tz: Tz,
    from_ms: i64,
) -> Result<Option<i64>, ScheduleError> {
    Ok(Schedule::parse(schedule_type, schedule_conf)?.next_after(tz, from_ms))
}
