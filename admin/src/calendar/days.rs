//! A named calendar's days: weekdays, yearly dates, single dates and date ranges, in the form
//! the API takes and the store keeps ([`CalendarDays`]) and compiled for lookups ([`DaySet`]).
//!
//! A calendar is a set of *local dates*; whose local time is the job's business (the job's
//! zone, see `rules.rs`), so one "holidays" calendar serves jobs in Shanghai and in Berlin.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDate, Weekday};
use serde::{Deserialize, Serialize};

use super::CalendarError;

/// Most single dates one calendar holds (a century of holidays fits).
pub const MAX_DATES: usize = 10_000;
/// Most date ranges one calendar holds.
pub const MAX_RANGES: usize = 1_000;

/// Weekday names in the order the API writes them.
const WEEKDAYS: [&str; 7] = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];

/// An inclusive range of dates (`YYYY-MM-DD`), `from` ≤ `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct DateRange {
    /// First date of the range.
    pub from: String,
    /// Last date of the range (included).
    pub to: String,
}

/// The days of a calendar as the API and the store spell them. A date belongs to the calendar
/// when any of the four lists names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CalendarDays {
    /// Every such weekday: `MON` … `SUN`.
    #[serde(default)]
    pub weekdays: Vec<String>,
    /// The same date every year, `MM-DD` (`02-29` matches in leap years only).
    #[serde(default)]
    pub yearly: Vec<String>,
    /// Single dates, `YYYY-MM-DD`.
    #[serde(default)]
    pub dates: Vec<String>,
    /// Inclusive date ranges.
    #[serde(default)]
    pub ranges: Vec<DateRange>,
}

impl CalendarDays {
    /// Checks every entry and returns the normalized form (upper-case weekdays in week order,
    /// everything sorted and without duplicates) with its compiled set. The error names the
    /// first bad entry.
    pub fn normalize(&self) -> Result<(CalendarDays, DaySet), CalendarError> {
        let mut weekdays = BTreeSet::new();
        for name in &self.weekdays {
            // chrono reads `Mon` and `Monday` in any case.
            let weekday = name.trim().parse::<Weekday>().map_err(|_| CalendarError::Weekday(name.clone()))?;
            let position = weekday.num_days_from_monday() as usize;
            weekdays.insert(position);
        }
        let mut yearly = BTreeSet::new();
        for text in &self.yearly {
            yearly.insert(parse_month_day(text)?);
        }
        if self.dates.len() > MAX_DATES {
            return Err(CalendarError::TooMany { what: "dates", max: MAX_DATES });
        }
        if self.ranges.len() > MAX_RANGES {
            return Err(CalendarError::TooMany { what: "ranges", max: MAX_RANGES });
        }
        let dates: BTreeSet<NaiveDate> =
            self.dates.iter().map(|d| parse_date("dates", d)).collect::<Result<_, _>>()?;
        let mut ranges = BTreeSet::new();
        for range in &self.ranges {
            let (from, to) = (parse_date("ranges", &range.from)?, parse_date("ranges", &range.to)?);
            if from > to {
                return Err(CalendarError::Range(format!("{from} … {to}")));
            }
            ranges.insert((from, to));
        }
        let normalized = CalendarDays {
            weekdays: weekdays.iter().map(|i| WEEKDAYS[*i].to_owned()).collect(),
            yearly: yearly.iter().map(|(m, d)| format!("{m:02}-{d:02}")).collect(),
            dates: dates.iter().map(ToString::to_string).collect(),
            ranges: ranges
                .iter()
                .map(|(from, to)| DateRange { from: from.to_string(), to: to.to_string() })
                .collect(),
        };
        let set = DaySet {
            weekdays: weekdays.iter().fold(0u8, |mask, i| mask | (1 << i)),
            yearly,
            dates,
            ranges: ranges.into_iter().collect(),
        };
        Ok((normalized, set))
    }

    /// The compiled set of a stored calendar (`jobwheel_calendar.days`, JSON).
    pub fn compile_stored(json: &str) -> Result<DaySet, CalendarError> {
        let days: CalendarDays =
            serde_json::from_str(json).map_err(|e| CalendarError::Stored(e.to_string()))?;
        Ok(days.normalize()?.1)
    }

    /// Whether the calendar names no day at all.
    pub fn is_empty(&self) -> bool {
        self.weekdays.is_empty() && self.yearly.is_empty() && self.dates.is_empty() && self.ranges.is_empty()
    }
}

/// `YYYY-MM-DD` of the list `what`.
fn parse_date(what: &'static str, text: &str) -> Result<NaiveDate, CalendarError> {
    NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| CalendarError::Date { what, text: text.to_owned() })
}

/// `MM-DD` → (month, day), checked against a leap year so that `02-29` is accepted.
fn parse_month_day(text: &str) -> Result<(u32, u32), CalendarError> {
    let bad = || CalendarError::Yearly(text.to_owned());
    let (month, day) = text.trim().split_once('-').ok_or_else(bad)?;
    let (month, day) = (month.parse::<u32>().map_err(|_| bad())?, day.parse::<u32>().map_err(|_| bad())?);
    NaiveDate::from_ymd_opt(2000, month, day).ok_or_else(bad)?;
    Ok((month, day))
}

/// A calendar compiled for [`DaySet::contains`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaySet {
    /// Bit `n` set: weekday `n` days from Monday.
    weekdays: u8,
    yearly: BTreeSet<(u32, u32)>,
    dates: BTreeSet<NaiveDate>,
    ranges: Vec<(NaiveDate, NaiveDate)>,
}

impl DaySet {
    /// Whether `date` is one of the calendar's days.
    pub fn contains(&self, date: NaiveDate) -> bool {
        self.weekdays & (1 << date.weekday().num_days_from_monday()) != 0
            || self.yearly.contains(&(date.month(), date.day()))
            || self.dates.contains(&date)
            || self.ranges.iter().any(|(from, to)| *from <= date && date <= *to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().expect("date")
    }

    #[test]
    fn normalizes_and_matches() {
        let days = CalendarDays {
            weekdays: vec!["sun".into(), "SAT".into(), "Saturday".into()],
            yearly: vec!["12-25".into(), "1-1".into(), "02-29".into()],
            dates: vec!["2026-10-01".into(), "2026-10-01".into()],
            ranges: vec![DateRange { from: "2026-12-24".into(), to: "2027-01-02".into() }],
        };
        let (normalized, set) = days.normalize().expect("valid");
        assert_eq!(normalized.weekdays, ["SAT", "SUN"]);
        assert_eq!(normalized.yearly, ["01-01", "02-29", "12-25"]);
        assert_eq!(normalized.dates.len(), 1);
        assert!(set.contains(day("2026-11-28")), "a Saturday");
        assert!(!set.contains(day("2026-11-27")), "a Friday");
        assert!(set.contains(day("2030-12-25")));
        assert!(set.contains(day("2028-02-29")));
        assert!(set.contains(day("2026-10-01")));
        assert!(set.contains(day("2026-12-31")) && set.contains(day("2027-01-02")));
        assert!(!set.contains(day("2027-01-04")), "a Monday after the range");
    }

    #[test]
    fn refuses_bad_entries_by_name() {
        let bad = |days: CalendarDays| days.normalize().expect_err("refused").to_string();
        assert!(bad(CalendarDays { weekdays: vec!["FUN".into()], ..Default::default() }).contains("FUN"));
        assert!(bad(CalendarDays { yearly: vec!["02-30".into()], ..Default::default() }).contains("02-30"));
        let backwards = DateRange { from: "2026-02-02".into(), to: "2026-02-01".into() };
        assert!(bad(CalendarDays { ranges: vec![backwards], ..Default::default() }).contains("2026-02-02"));
        assert!(
            bad(CalendarDays { dates: vec!["2026-02-30".into()], ..Default::default() })
                .contains("2026-02-30")
        );
    }
}
