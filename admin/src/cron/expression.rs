//! [`CronExpression`]: a validated Quartz expression and its next fire time in a time zone.
//!
//! Matching is croner's (see `docs/scheduling.md` for why); this type owns the Quartz
//! front-end (parsing, validation, `L-n`) and the mapping from wall-clock times to instants,
//! where Quartz's behaviour around DST changes is reproduced:
//!
//! - A wall-clock time that does not exist (spring-forward gap) is skipped: `0 30 2 * * ?`
//!   does not fire on that day in New York, and an every-10-minutes job goes 01:50 → 03:00.
//! - A wall-clock time that exists twice (fall-back overlap) fires once, at its second
//!   (standard-time) instant. Java's `GregorianCalendar` resolves ambiguous fields that way
//!   and Quartz sets fields on every step, so upstream never fires inside the first pass of a
//!   repeated hour — interval jobs pause for that hour too.

use std::fmt;

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Timelike, Weekday};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

use super::days::{DayOfMonth, DayOfWeek, parse_day_of_month, parse_day_of_week};
use super::field::{CronField, parse_values, to_croner_list};

/// Quartz's `getTimeAfter` gives up past this year and returns null.
pub const LAST_YEAR: i32 = 2999;

/// A cron expression that failed to parse; the message names the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Nothing but whitespace.
    #[error("the cron expression is empty")]
    Empty,
    /// Not 6 or 7 whitespace-separated fields.
    #[error(
        "the cron expression has {0} fields; Quartz needs 6 or 7: \
         seconds minutes hours day-of-month month day-of-week [year]"
    )]
    FieldCount(usize),
    /// One field is malformed.
    #[error("{field} field `{text}`: {reason}")]
    Field {
        /// Which field.
        field: CronField,
        /// The field as written (upper-cased).
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The day-of-month/day-of-week pair breaks Quartz's "exactly one is `?`" rule.
    #[error("{0}")]
    DayFields(&'static str),
    /// croner refused the translated pattern (a bug in our translation, never user input).
    #[error("internal cron translation error for `{pattern}`: {reason}")]
    Engine {
        /// The croner pattern we produced.
        pattern: String,
        /// croner's message.
        reason: String,
    },
}

/// A parsed Quartz cron expression (`sec min hour dom month dow [year]`).
#[derive(Debug, Clone)]
pub struct CronExpression {
    source: String,
    cron: Cron,
    /// `L-n` / `L-nW` is matched here, on top of croner (which then sees `*`).
    last_offset: Option<(u32, bool)>,
}

impl CronExpression {
    /// Parses `text` with Quartz's rules.
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let upper = text.to_uppercase();
        let tokens: Vec<&str> = upper.split_whitespace().collect();
        if tokens.is_empty() {
            return Err(CronError::Empty);
        }
        if !(6..=7).contains(&tokens.len()) {
            return Err(CronError::FieldCount(tokens.len()));
        }
        let token = |field: CronField| tokens.get(field as usize).copied().unwrap_or("*");
        let invalid = |field: CronField, reason: String| CronError::Field {
            field,
            text: token(field).to_owned(),
            reason,
        };
        for field in CronField::ALL {
            let text = token(field);
            let day_field = matches!(field, CronField::DayOfMonth | CronField::DayOfWeek);
            if !day_field && text.contains('?') {
                return Err(invalid(field, "'?' is only allowed in day-of-month or day-of-week".into()));
            }
            if day_field && text.contains('?') && text != "?" {
                return Err(invalid(field, "'?' must stand alone".into()));
            }
        }
        let plain = |field: CronField| {
            parse_values(field, token(field))
                .map(|values| to_croner_list(field, &values))
                .map_err(|reason| invalid(field, reason))
        };
        let seconds = plain(CronField::Seconds)?;
        let minutes = plain(CronField::Minutes)?;
        let hours = plain(CronField::Hours)?;
        let month = plain(CronField::Month)?;
        // A missing year is `*`; croner's own year range is wider than Quartz's, and
        // `next_local_after` stops at Quartz's limit.
        let year = match token(CronField::Year) {
            "*" => "*".to_owned(),
            _ => plain(CronField::Year)?,
        };
        let dom = parse_day_of_month(token(CronField::DayOfMonth))
            .map_err(|reason| invalid(CronField::DayOfMonth, reason))?;
        let dow = parse_day_of_week(token(CronField::DayOfWeek))
            .map_err(|reason| invalid(CronField::DayOfWeek, reason))?;
        match (&dom, &dow) {
            (DayOfMonth::Unspecified, DayOfWeek::Unspecified) => {
                return Err(CronError::DayFields(
                    "'?' can only be used in one of day-of-month and day-of-week",
                ));
            }
            (DayOfMonth::Unspecified, _) | (_, DayOfWeek::Unspecified) => {}
            _ => {
                return Err(CronError::DayFields(
                    "specifying both a day-of-month and a day-of-week is not supported: \
                     put '?' in one of them (e.g. `0 0 12 * * ?` or `0 0 12 ? * MON`)",
                ));
            }
        }
        let last_offset = match dom {
            DayOfMonth::LastOffset { offset, nearest_weekday } => Some((offset, nearest_weekday)),
            _ => None,
        };
        let pattern =
            format!("{seconds} {minutes} {hours} {} {month} {} {year}", dom.to_croner(), dow.to_croner());
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .year(Year::Required)
            .alternative_weekdays(true)
            .build()
            .parse(&pattern)
            .map_err(|e| CronError::Engine { pattern: pattern.clone(), reason: e.to_string() })?;
        Ok(Self { source: text.trim().to_owned(), cron, last_offset })
    }

    /// The expression as given (trimmed).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The first wall-clock time strictly after `after` (whole seconds) that matches, or
    /// `None` when there is none up to [`LAST_YEAR`].
    pub fn next_local_after(&self, after: NaiveDateTime) -> Option<NaiveDateTime> {
        let mut cursor = after.with_nanosecond(0)?;
        loop {
            let candidate = self.cron.find_next_occurrence(&cursor, false).ok()?;
            if candidate.year() > LAST_YEAR {
                return None;
            }
            let Some((offset, nearest_weekday)) = self.last_offset else {
                return Some(candidate);
            };
            let date = candidate.date();
            let target = last_offset_day(date.year(), date.month(), offset, nearest_weekday);
            // Otherwise jump to the end of the day before the next possible day, where
            // croner's next search starts: this month's target if still ahead, else the
            // next month (also when the offset does not fit this month at all).
            let next_day = match target {
                Some(day) if day == date.day() => return Some(candidate),
                Some(day) if day > date.day() => date.with_day(day)?,
                _ => first_of_next_month(date)?,
            };
            cursor = next_day.and_hms_opt(0, 0, 0)? - Duration::seconds(1);
        }
    }

    /// The first instant strictly after `after_ms` (epoch ms) at which the expression fires in
    /// `tz`, applying the DST rules in the module documentation.
    pub fn next_after(&self, tz: Tz, after_ms: i64) -> Option<DateTime<Tz>> {
        let after = tz.timestamp_millis_opt(after_ms).single()?;
        let mut local = after.naive_local();
        loop {
            local = self.next_local_after(local)?;
            // Gap: skipped (None). Overlap: the later, standard-time instant.
            if let Some(instant) = tz.from_local_datetime(&local).latest() {
                return Some(instant);
            }
        }
    }
}

impl fmt::Display for CronExpression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Day of `L-n` (or `L-nW`) in a month; `None` if the offset leaves the month.
fn last_offset_day(year: i32, month: u32, offset: u32, nearest_weekday: bool) -> Option<u32> {
    let last = first_of_next_month(NaiveDate::from_ymd_opt(year, month, 1)?)?.pred_opt()?.day();
    let day = last.checked_sub(offset).filter(|day| *day >= 1)?;
    if !nearest_weekday {
        return Some(day);
    }
    // Quartz's `W`: Saturday → Friday (Monday when that leaves the month), Sunday → Monday
    // (Friday when that leaves the month).
    let weekday = NaiveDate::from_ymd_opt(year, month, day)?.weekday();
    Some(match weekday {
        Weekday::Sat if day == 1 => day + 2,
        Weekday::Sat => day - 1,
        Weekday::Sun if day == last => day - 2,
        Weekday::Sun => day + 1,
        _ => day,
    })
}

fn first_of_next_month(date: NaiveDate) -> Option<NaiveDate> {
    let (year, month) =
        if date.month() == 12 { (date.year() + 1, 1) } else { (date.year(), date.month() + 1) };
    NaiveDate::from_ymd_opt(year, month, 1)
}
