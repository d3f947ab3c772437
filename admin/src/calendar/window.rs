//! Exclusion windows: a daily span of local time in which a job must not fire, such as
//! `23:00-01:00` ("not between 23:00 and 01:00"). The start is included, the end is not, so a
//! job due at 01:00 runs; a window whose end is before its start runs past midnight.

use std::fmt;
use std::str::FromStr;

use chrono::{Duration, NaiveDateTime, NaiveTime, Timelike};

use super::CalendarError;

/// Most windows one job carries.
pub const MAX_WINDOWS: usize = 8;

/// One daily window, in minutes after local midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    start: u32,
    end: u32,
}

impl Window {
    /// Whether the local time `time` falls inside the window.
    pub fn contains(self, time: NaiveTime) -> bool {
        let seconds = time.num_seconds_from_midnight();
        let (start, end) = (self.start * 60, self.end * 60);
        if start < end { start <= seconds && seconds < end } else { seconds >= start || seconds < end }
    }

    /// The local date-time at which the window holding `local` ends (the first moment the job
    /// may fire again). Only meaningful when [`Window::contains`] holds for `local`'s time.
    pub fn end_after(self, local: NaiveDateTime) -> NaiveDateTime {
        let end = NaiveTime::from_hms_opt(self.end / 60, self.end % 60, 0).unwrap_or(NaiveTime::MIN);
        let overnight_evening =
            self.start > self.end && local.time().num_seconds_from_midnight() >= self.start * 60;
        let date = if overnight_evening { local.date() + Duration::days(1) } else { local.date() };
        date.and_time(end)
    }
}

impl FromStr for Window {
    type Err = CalendarError;

    /// `HH:MM-HH:MM`, 24-hour clock; `24:00` is accepted as an end (midnight).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || CalendarError::Window(text.to_owned());
        let (start, end) = text.trim().split_once('-').ok_or_else(bad)?;
        let minutes = |hhmm: &str, end: bool| -> Result<u32, CalendarError> {
            let (h, m) = hhmm.trim().split_once(':').ok_or_else(bad)?;
            if h.len() > 2 || m.len() != 2 {
                return Err(bad());
            }
            let (h, m) = (h.parse::<u32>().map_err(|_| bad())?, m.parse::<u32>().map_err(|_| bad())?);
            match (h, m) {
                (24, 0) if end => Ok(0),
                (0..=23, 0..=59) => Ok(h * 60 + m),
                _ => Err(bad()),
            }
        };
        let window = Window { start: minutes(start, false)?, end: minutes(end, true)? };
        if window.start == window.end {
            return Err(CalendarError::EmptyWindow(text.to_owned()));
        }
        Ok(window)
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}-{:02}:{:02}", self.start / 60, self.start % 60, self.end / 60, self.end % 60)
    }
}

/// Parses a list of windows (the API's array) and checks its length.
pub fn parse_windows<S: AsRef<str>>(texts: &[S]) -> Result<Vec<Window>, CalendarError> {
    if texts.len() > MAX_WINDOWS {
        return Err(CalendarError::TooMany { what: "exclusion windows", max: MAX_WINDOWS });
    }
    texts.iter().map(|t| t.as_ref().parse()).collect()
}

/// The stored form: windows joined by commas (`jobwheel_job_window.windows`).
pub fn join_windows(windows: &[Window]) -> String {
    windows.iter().map(Window::to_string).collect::<Vec<_>>().join(",")
}

/// The windows of the stored form, as written ([`join_windows`]'s inverse, unparsed).
pub fn stored_window_texts(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|w| !w.is_empty())
}

/// The windows of the stored form, parsed.
pub fn parse_stored_windows(text: &str) -> Result<Vec<Window>, CalendarError> {
    parse_windows(&stored_window_texts(text).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(hms: &str) -> NaiveTime {
        NaiveTime::parse_from_str(hms, "%H:%M:%S").expect("time")
    }

    #[test]
    fn overnight_window_covers_both_sides_of_midnight() {
        let w: Window = "23:00-01:00".parse().expect("valid");
        assert!(w.contains(at("23:00:00")) && w.contains(at("23:59:59")) && w.contains(at("00:59:59")));
        assert!(!w.contains(at("01:00:00")) && !w.contains(at("22:59:59")));
        let evening = NaiveDateTime::parse_from_str("2026-12-31 23:30:00", "%Y-%m-%d %H:%M:%S").expect("dt");
        assert_eq!(w.end_after(evening).to_string(), "2027-01-01 01:00:00");
        let night = NaiveDateTime::parse_from_str("2027-01-01 00:10:00", "%Y-%m-%d %H:%M:%S").expect("dt");
        assert_eq!(w.end_after(night).to_string(), "2027-01-01 01:00:00");
        assert_eq!(w.to_string(), "23:00-01:00");
    }

    #[test]
    fn day_window_and_midnight_end() {
        let w: Window = "12:00-13:30".parse().expect("valid");
        assert!(w.contains(at("12:00:00")) && w.contains(at("13:29:59")) && !w.contains(at("13:30:00")));
        let late: Window = "22:00-24:00".parse().expect("valid");
        assert!(late.contains(at("23:59:59")) && !late.contains(at("00:00:00")));
        assert_eq!(late.to_string(), "22:00-00:00");
    }

    #[test]
    fn refuses_what_is_not_a_window() {
        for text in ["23:00", "25:00-01:00", "10:00-10:00", "9-10", "10:0-11:00", "24:00-01:00"] {
            assert!(text.parse::<Window>().is_err(), "{text} must be refused");
        }
        assert!(parse_windows(&["01:00-02:00"; 9]).is_err());
    }
}
