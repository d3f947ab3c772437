//! Calendars and exclusion windows (jobwheel extension; `docs/scheduling.md` "Calendars and
//! exclusion windows").
//!
//! - [`CalendarDays`], [`DaySet`] (`days.rs`): a named calendar's days and their lookup.
//! - [`Window`] (`window.rs`): a daily span of local time in which a job does not fire.
//! - [`DayRules`], [`next_fire`], [`next_fires`] (`rules.rs`): a job's "only on" / "never on"
//!   calendars and windows, and the next fire time that honours them in the job's zone.
//! - [`read_ics`] (`ics.rs`): a calendar's days from an iCalendar file.

mod days;
mod error;
mod ics;
mod rules;
mod window;

pub use days::{CalendarDays, DateRange, DaySet, MAX_DATES, MAX_RANGES};
pub use error::CalendarError;
pub use ics::{IcsDays, MAX_ICS_BYTES, read_ics};
pub use rules::{DayRules, MAX_SKIPS, ScheduleWalk, next_fire, next_fires, rules_by_job};
pub use window::{
    MAX_WINDOWS, Window, join_windows, parse_stored_windows, parse_windows, stored_window_texts,
};
