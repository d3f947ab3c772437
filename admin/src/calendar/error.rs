//! [`CalendarError`]: why calendar days, a window or an `.ics` file were refused. In a file of
//! its own so the fuzz targets can compile the parsers (`days.rs`, `window.rs`, `ics.rs`)
//! without the scheduling rules, which need the store.

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
