//! Schedules: Quartz cron expressions, FIX_RATE/FIX_DELAY intervals and next trigger times
//! (docs/upstream.md §5.1 `generateNextTriggerTime` and §6; see `docs/scheduling.md`).
//!
//! - [`next_trigger_time`], [`validate`]: what the scheduler and the job form use (with
//!   calendars and windows: `crate::calendar::next_fire` and `next_fires`).
//! - [`ScheduleType`], [`Schedule`]: the types and a validated configuration.
//! - [`CronExpression`]: Quartz syntax on top of the `croner` crate, with Quartz's DST rules.
//! - [`local_time_zone`], [`parse_time_zone`]: the admin's zone and per-job zones.

mod days;
mod expression;
mod field;
mod memo;
mod schedule;
mod zone;

pub use chrono_tz::Tz;
pub use expression::{CronError, CronExpression, LAST_YEAR};
pub use field::CronField;
pub use schedule::{Schedule, ScheduleError, ScheduleType, next_trigger_time, validate};
pub use zone::{UnknownTimeZone, local_time_zone, parse_time_zone};
