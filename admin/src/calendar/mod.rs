//! Calendars and exclusion windows (jobwheel extension; `docs/scheduling.md` "Calendars and
//! exclusion windows").
//!
//! - [`CalendarDays`], [`DaySet`] (`days.rs`): a named calendar's days and their lookup.
//! - [`Window`] (`window.rs`): a daily span of local time in which a job does not fire.
//! - [`DayRules`], [`next_fire`], [`next_fires`] (`rules.rs`): a job's "only on" / "never on"
//!   calendars and windows, and the next fire time that honours them in the job's zone.
//! - [`read_ics`] (`ics.rs`): a calendar's days from an iCalendar file.

mod days;
mod ics;
mod rules;
mod window;

pub use days::{CalendarDays, DateRange, DaySet, MAX_DATES, MAX_RANGES};
pub use ics::{IcsDays, MAX_ICS_BYTES, read_ics};
pub use rules::{DayRules, MAX_SKIPS, next_fire, next_fires, rules_by_job};
pub use window::{
    MAX_WINDOWS, Window, join_windows, parse_stored_windows, parse_windows, stored_window_texts,
};

/// Why calendar days, a window or an `.ics` file were refused; the messages name the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalendarError {
    /// Not a weekday name.
    #[error("weekdays: {0:?} is not a weekday (MON … SUN)")]
    Weekday(String),
    /// Not `MM-DD`.
    #[error("yearly: {0:?} is not a month and day (MM-DD)")]
    Yearly(String),
    /// Not `YYYY-MM-DD`.
    #[error("{what}: {text:?} is not a date (YYYY-MM-DD)")]
    Date {
        /// Which list.
        what: &'static str,
        /// The text given.
        text: String,
    },
    /// A range that ends before it starts.
    #[error("ranges: {0} ends before it starts")]
    Range(String),
    /// Too many entries of one kind.
    #[error("{what}: at most {max}")]
    TooMany {
        /// Which list.
        what: &'static str,
        /// Its limit.
        max: usize,
    },
    /// Not `HH:MM-HH:MM`.
    #[error("exclusionWindows: {0:?} is not a window (HH:MM-HH:MM, 24-hour clock)")]
    Window(String),
    /// Start equal to end.
    #[error("exclusionWindows: {0:?} is empty (start and end are equal); exclude whole days with a calendar")]
    EmptyWindow(String),
    /// Stored days that are not the JSON this admin writes (edited by hand).
    #[error("stored calendar days are unreadable: {0}")]
    Stored(String),
    /// An `.ics` file that cannot be read.
    #[error("{0}")]
    Ics(String),
}
