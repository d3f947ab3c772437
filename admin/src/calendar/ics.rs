//! Reading a calendar's days from an iCalendar (`.ics`, RFC 5545) file, such as a public
//! holiday feed exported from a calendar application. Parsing is the `icalendar` crate's (the
//! maintained Rust iCalendar library); this file only decides which days each event names.
//!
//! - An all-day event names its dates (`DTEND` is exclusive, as RFC 5545 says).
//! - A timed event names every date it touches, in the time it was written in.
//! - A plain yearly recurrence (`RRULE:FREQ=YEARLY` with no end, count, interval or BY-parts
//!   beyond the start's own month and day) of a one-day event becomes a yearly date.
//! - Any other recurrence, a cancelled event and an event without a start are not imported;
//!   the answer lists each with the reason, so nothing is dropped silently.

use chrono::{Datelike, Duration, NaiveDate};
use icalendar::{Calendar, CalendarComponent, CalendarDateTime, Component, DatePerhapsTime, EventStatus};

use super::CalendarError;
use super::days::{CalendarDays, DateRange, MAX_DATES};

/// Largest `.ics` file read (a decade of a country's holidays is a few dozen KiB).
pub const MAX_ICS_BYTES: usize = 2 * 1024 * 1024;

/// What a `.ics` file yields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IcsDays {
    /// The calendar's name (`X-WR-CALNAME`), if it has one.
    pub name: Option<String>,
    /// The days, not yet normalized.
    pub days: CalendarDays,
    /// Events imported.
    pub imported: usize,
    /// Events left out, each as "summary (start): reason".
    pub skipped: Vec<String>,
}

/// Reads the days of every event in `text`.
pub fn read_ics(text: &str) -> Result<IcsDays, CalendarError> {
    if text.len() > MAX_ICS_BYTES {
        return Err(CalendarError::Ics(format!("the file is larger than {} MiB", MAX_ICS_BYTES >> 20)));
    }
    if !text.to_ascii_uppercase().contains("BEGIN:VCALENDAR") {
        return Err(CalendarError::Ics("not an iCalendar file: it has no BEGIN:VCALENDAR".to_owned()));
    }
    let calendar: Calendar = text.parse().map_err(|e: String| CalendarError::Ics(first_line(&e)))?;
    let mut out = IcsDays { name: calendar.get_name().map(str::to_owned), ..IcsDays::default() };
    for component in &calendar.components {
        let CalendarComponent::Event(event) = component else { continue };
        let summary = event.get_summary().unwrap_or("(no summary)").to_owned();
        let Some(start) = event.get_start() else {
            out.skipped.push(format!("{summary}: no DTSTART"));
            continue;
        };
        let (first, last) = dates_of(&start, event.get_end().as_ref());
        let label = format!("{summary} ({first})");
        if event.get_status() == Some(EventStatus::Cancelled) {
            out.skipped.push(format!("{label}: cancelled"));
            continue;
        }
        if let Some(rule) = event.property_value("RRULE") {
            if plain_yearly(rule, first) && first == last {
                out.days.yearly.push(format!("{:02}-{:02}", first.month(), first.day()));
                out.imported += 1;
            } else {
                out.skipped.push(format!(
                    "{label}: recurrence {rule:?} not supported (only a plain FREQ=YEARLY of a one-day event)"
                ));
            }
            continue;
        }
        if first == last {
            out.days.dates.push(first.to_string());
        } else {
            out.days.ranges.push(DateRange { from: first.to_string(), to: last.to_string() });
        }
        out.imported += 1;
        if out.days.dates.len() > MAX_DATES {
            return Err(CalendarError::TooMany { what: "dates", max: MAX_DATES });
        }
    }
    Ok(out)
}

/// The first and last date an event covers.
fn dates_of(start: &DatePerhapsTime, end: Option<&DatePerhapsTime>) -> (NaiveDate, NaiveDate) {
    let first = date_of(start);
    let last = match end {
        // DTEND of an all-day event is the day after its last day.
        Some(DatePerhapsTime::Date(end)) => *end - Duration::days(1),
        // A timed event ending at midnight does not touch the day it ends on.
        Some(DatePerhapsTime::DateTime(end)) => {
            let naive = naive_of(end);
            if naive.time() == chrono::NaiveTime::MIN {
                naive.date() - Duration::days(1)
            } else {
                naive.date()
            }
        }
        None => first,
    };
    (first, last.max(first))
}

fn date_of(value: &DatePerhapsTime) -> NaiveDate {
    match value {
        DatePerhapsTime::Date(date) => *date,
        DatePerhapsTime::DateTime(date_time) => naive_of(date_time).date(),
    }
}

fn naive_of(value: &CalendarDateTime) -> chrono::NaiveDateTime {
    match value {
        CalendarDateTime::Floating(naive) => *naive,
        CalendarDateTime::Utc(utc) => utc.naive_utc(),
        CalendarDateTime::WithTimezone { date_time, .. } => *date_time,
    }
}

/// Whether `rule` recurs every year on `start`'s month and day, forever.
fn plain_yearly(rule: &str, start: NaiveDate) -> bool {
    let mut yearly = false;
    for part in rule.split(';') {
        let Some((key, value)) = part.split_once('=') else { return false };
        match key.to_ascii_uppercase().as_str() {
            "FREQ" if value.eq_ignore_ascii_case("YEARLY") => yearly = true,
            "INTERVAL" if value == "1" => {}
            "BYMONTH" if value.parse::<u32>().ok() == Some(start.month()) => {}
            "BYMONTHDAY" if value.parse::<u32>().ok() == Some(start.day()) => {}
            "WKST" => {}
            _ => return false,
        }
    }
    yearly
}

fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("not an iCalendar file");
    format!("not a readable iCalendar file: {}", line.chars().take(200).collect::<String>())
}
