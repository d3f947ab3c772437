//! The day-of-month and day-of-week fields, whose special characters (`? L W #`) carry
//! Quartz's meaning, and their translation to croner.
//!
//! croner understands `L`, `LW`, `nW`, `nL` and `n#k` with Quartz's meaning once it runs in
//! "alternative weekdays" mode (1 = Sunday). What it lacks is `L-n` / `L-nW` (n days before
//! the last day); those become a day filter applied on top of croner's matches
//! (see `expression.rs`).

use std::collections::BTreeSet;

use super::field::{CronField, parse_value, parse_values, to_croner_list};

/// The largest `n` in `L-n` (Quartz: "Offset from last day must be <= 30").
const MAX_LAST_DAY_OFFSET: u32 = 30;

/// A parsed day-of-month field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DayOfMonth {
    /// `?`: the day-of-week field decides.
    Unspecified,
    /// Plain days and `nW` days (either set may be empty, not both).
    Days { days: BTreeSet<u32>, nearest_weekday: BTreeSet<u32> },
    /// `L`.
    Last,
    /// `LW`: the last weekday (Mon–Fri) of the month.
    LastWeekday,
    /// `L-n`, or `L-nW` with `nearest_weekday`: `n` days before the last day.
    LastOffset { offset: u32, nearest_weekday: bool },
}

/// A parsed day-of-week field (1 = Sunday … 7 = Saturday).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DayOfWeek {
    /// `?`: the day-of-month field decides.
    Unspecified,
    /// A set of weekdays (`*` selects all seven).
    Days(BTreeSet<u32>),
    /// `nL`: the last weekday `n` of the month.
    LastOfMonth(u32),
    /// `n#k`: the `k`-th weekday `n` of the month.
    Nth { day: u32, nth: u32 },
}

pub(crate) fn parse_day_of_month(text: &str) -> Result<DayOfMonth, String> {
    const FIELD: CronField = CronField::DayOfMonth;
    if text == "?" {
        return Ok(DayOfMonth::Unspecified);
    }
    if text.starts_with('L') {
        return parse_last_day(text);
    }
    if text.contains('L') {
        return Err("'L' must stand alone (`L`, `LW`, `L-n`, `L-nW`)".to_owned());
    }
    let mut days = BTreeSet::new();
    let mut nearest_weekday = BTreeSet::new();
    for item in text.split(',') {
        match item.strip_suffix('W') {
            Some(day) => {
                if day.contains(['-', '/', '*']) || day.is_empty() {
                    return Err(format!("'W' needs a single day before it, got `{item}`"));
                }
                nearest_weekday.insert(parse_value(FIELD, day)?);
            }
            None => days.extend(parse_values(FIELD, item)?),
        }
    }
    Ok(DayOfMonth::Days { days, nearest_weekday })
}

fn parse_last_day(text: &str) -> Result<DayOfMonth, String> {
    let rest = &text[1..];
    let (rest, nearest_weekday) = match rest.strip_suffix('W') {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    if rest.is_empty() {
        return Ok(if nearest_weekday { DayOfMonth::LastWeekday } else { DayOfMonth::Last });
    }
    let offset = rest
        .strip_prefix('-')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or_else(|| format!("`{text}` is not `L`, `LW`, `L-n` or `L-nW`"))?;
    if offset > MAX_LAST_DAY_OFFSET {
        return Err(format!("offset from the last day must be at most {MAX_LAST_DAY_OFFSET}"));
    }
    Ok(DayOfMonth::LastOffset { offset, nearest_weekday })
}

pub(crate) fn parse_day_of_week(text: &str) -> Result<DayOfWeek, String> {
    const FIELD: CronField = CronField::DayOfWeek;
    if text == "?" {
        return Ok(DayOfWeek::Unspecified);
    }
    // `L` alone is Saturday, the last day of the week.
    if text == "L" {
        return Ok(DayOfWeek::Days(BTreeSet::from([7])));
    }
    let special = text.contains(['L', '#']);
    if special && text.contains([',', '-', '/', '*']) {
        return Err("'L' and '#' take a single weekday and no list or range".to_owned());
    }
    if let Some(day) = text.strip_suffix('L') {
        return Ok(DayOfWeek::LastOfMonth(parse_value(FIELD, day)?));
    }
    if let Some((day, nth)) = text.split_once('#') {
        let nth = nth
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=5).contains(n))
            .ok_or_else(|| format!("'#' must be followed by 1-5, got `{nth}`"))?;
        return Ok(DayOfWeek::Nth { day: parse_value(FIELD, day)?, nth });
    }
    Ok(DayOfWeek::Days(parse_values(FIELD, text)?))
}

impl DayOfMonth {
    /// croner's form of this field; `L-n` becomes `*` and is filtered afterwards.
    pub(crate) fn to_croner(&self) -> String {
        match self {
            Self::Unspecified | Self::LastOffset { .. } => "*".to_owned(),
            Self::Last => "L".to_owned(),
            Self::LastWeekday => "LW".to_owned(),
            Self::Days { days, nearest_weekday } => {
                let mut items: Vec<String> = Vec::new();
                if !days.is_empty() {
                    items.push(to_croner_list(CronField::DayOfMonth, days));
                }
                items.extend(nearest_weekday.iter().map(|day| format!("{day}W")));
                items.join(",")
            }
        }
    }
}

impl DayOfWeek {
    /// croner's form of this field (Quartz numbering; the parser runs with
    /// `alternative_weekdays`).
    pub(crate) fn to_croner(&self) -> String {
        match self {
            Self::Unspecified => "*".to_owned(),
            Self::Days(days) => to_croner_list(CronField::DayOfWeek, days),
            Self::LastOfMonth(day) => format!("{day}L"),
            Self::Nth { day, nth } => format!("{day}#{nth}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_of_month_forms() {
        assert_eq!(parse_day_of_month("L"), Ok(DayOfMonth::Last));
        assert_eq!(parse_day_of_month("LW"), Ok(DayOfMonth::LastWeekday));
        assert_eq!(
            parse_day_of_month("L-3W"),
            Ok(DayOfMonth::LastOffset { offset: 3, nearest_weekday: true })
        );
        let days = parse_day_of_month("1,15W").expect("parses");
        assert_eq!(days.to_croner(), "1,15W");
        assert!(parse_day_of_month("L-31").is_err());
        assert!(parse_day_of_month("5L").is_err());
        assert!(parse_day_of_month("1-5W").is_err());
    }

    #[test]
    fn day_of_week_forms() {
        assert_eq!(parse_day_of_week("6L"), Ok(DayOfWeek::LastOfMonth(6)));
        assert_eq!(parse_day_of_week("FRIL"), Ok(DayOfWeek::LastOfMonth(6)));
        assert_eq!(parse_day_of_week("6#3"), Ok(DayOfWeek::Nth { day: 6, nth: 3 }));
        assert_eq!(parse_day_of_week("L").map(|d| d.to_croner()), Ok("7".to_owned()));
        assert!(parse_day_of_week("6#6").is_err());
        assert!(parse_day_of_week("2#1,3#1").is_err());
        assert!(parse_day_of_week("MON-FRIL").is_err());
    }
}
