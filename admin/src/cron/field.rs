//! One Quartz cron field: its name, bounds, and the values a list of
//! `value | a-b | a/n | a-b/n | */n` items selects.
//!
//! This is the part of Quartz's syntax that croner does not share: ranges may wrap
//! (`22-2`, `NOV-FEB`, `FRI-MON` — Quartz walks past the field's end and starts over),
//! `a/n` means "from a to the end" and increments are bounded per field. We expand every
//! plain field to an explicit value list so croner only ever sees syntax it agrees on.

use std::collections::BTreeSet;
use std::fmt;

/// The seven fields of a Quartz expression, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CronField {
    /// 0–59.
    Seconds,
    /// 0–59.
    Minutes,
    /// 0–23.
    Hours,
    /// 1–31, plus `? L W`.
    DayOfMonth,
    /// 1–12 or `JAN`–`DEC`.
    Month,
    /// 1–7 (1 = Sunday) or `SUN`–`SAT`, plus `? L #`.
    DayOfWeek,
    /// 1970–2199, optional (missing = every year).
    Year,
}

const MONTH_NAMES: [&str; 12] =
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl CronField {
    /// Fields in expression order.
    pub const ALL: [CronField; 7] = [
        Self::Seconds,
        Self::Minutes,
        Self::Hours,
        Self::DayOfMonth,
        Self::Month,
        Self::DayOfWeek,
        Self::Year,
    ];

    /// The name used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Seconds => "seconds",
            Self::Minutes => "minutes",
            Self::Hours => "hours",
            Self::DayOfMonth => "day-of-month",
            Self::Month => "month",
            Self::DayOfWeek => "day-of-week",
            Self::Year => "year",
        }
    }

    /// Smallest and largest value.
    pub fn bounds(self) -> (u32, u32) {
        match self {
            Self::Seconds | Self::Minutes => (0, 59),
            Self::Hours => (0, 23),
            Self::DayOfMonth => (1, 31),
            Self::Month => (1, 12),
            Self::DayOfWeek => (1, 7),
            Self::Year => (1970, 2199),
        }
    }

    /// Largest increment Quartz accepts (`checkIncrementRange`); years have no limit.
    fn max_increment(self) -> u32 {
        match self {
            Self::Year => u32::MAX,
            other => other.bounds().1,
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            Self::Month => &MONTH_NAMES,
            Self::DayOfWeek => &DAY_NAMES,
            _ => &[],
        }
    }
}

impl fmt::Display for CronField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses one value: a number, or for month/day-of-week a three-letter name
/// (the whole expression is upper-cased before parsing, so names are case-insensitive).
pub(crate) fn parse_value(field: CronField, text: &str) -> Result<u32, String> {
    let (min, max) = field.bounds();
    let value = if let Some(index) = field.names().iter().position(|name| *name == text) {
        index as u32 + 1
    } else if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u32>().map_err(|_| format!("`{text}` is too large"))?
    } else if field.names().is_empty() {
        return Err(format!("`{text}` is not a number"));
    } else {
        let examples = format!("{}..{}", field.names()[0], field.names()[field.names().len() - 1]);
        return Err(format!("`{text}` is neither a number nor a name ({examples})"));
    };
    if !(min..=max).contains(&value) {
        return Err(format!("{value} is out of range {min}-{max}"));
    }
    Ok(value)
}

/// The values selected by a comma list of plain items (no `? L W #`).
pub(crate) fn parse_values(field: CronField, text: &str) -> Result<BTreeSet<u32>, String> {
    let mut values = BTreeSet::new();
    for item in text.split(',') {
        if item.is_empty() {
            return Err("empty item in a comma list".to_owned());
        }
        add_item(field, item, &mut values)?;
    }
    Ok(values)
}

fn add_item(field: CronField, item: &str, values: &mut BTreeSet<u32>) -> Result<(), String> {
    let (min, max) = field.bounds();
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => (range, Some(parse_step(field, step)?)),
        None => (item, None),
    };
    let (start, end) = match (range, step) {
        // `*/n`, and Quartz's `/n`, start at the field's minimum.
        ("*" | "", _) => (min, max),
        _ => match range.split_once('-') {
            Some((a, b)) => (parse_value(field, a)?, parse_value(field, b)?),
            // `a/n` runs from `a` to the end of the field; a lone `a` is just `a`.
            None => {
                let start = parse_value(field, range)?;
                (start, if step.is_some() { max } else { start })
            }
        },
    };
    if start > end && field == CronField::Year {
        return Err(format!("range {start}-{end} runs backwards"));
    }
    let step = step.unwrap_or(1);
    // A wrapping range (`22-2`) continues past `max` and starts over at `min`, keeping the
    // stride across the wrap like Quartz's `addToSet`.
    let size = max - min + 1;
    let last = if start > end { end + size } else { end };
    let mut i = start;
    while i <= last {
        values.insert(min + (i - min) % size);
        i = match i.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(())
}

fn parse_step(field: CronField, text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("'/' must be followed by a whole number, got `{text}`"));
    }
    let step: u32 = text.parse().map_err(|_| format!("increment `{text}` is too large"))?;
    if step == 0 {
        return Err("increment must be at least 1".to_owned());
    }
    if step > field.max_increment() {
        return Err(format!("increment {step} is larger than {}", field.max_increment()));
    }
    Ok(step)
}

/// A value list in croner's syntax: `*` when every value is selected, else `a,b,c`.
pub(crate) fn to_croner_list(field: CronField, values: &BTreeSet<u32>) -> String {
    let (min, max) = field.bounds();
    if values.len() as u32 == max - min + 1 {
        return "*".to_owned();
    }
    values.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(field: CronField, text: &str) -> Vec<u32> {
        parse_values(field, text).expect("parses").into_iter().collect()
    }

    #[test]
    fn ranges_steps_and_names() {
        assert_eq!(values(CronField::Minutes, "0/15"), [0, 15, 30, 45]);
        assert_eq!(values(CronField::Minutes, "*/20"), [0, 20, 40]);
        assert_eq!(values(CronField::Minutes, "/20"), [0, 20, 40]);
        assert_eq!(values(CronField::Minutes, "5-20/5,59"), [5, 10, 15, 20, 59]);
        assert_eq!(values(CronField::DayOfMonth, "1/5"), [1, 6, 11, 16, 21, 26, 31]);
        assert_eq!(values(CronField::DayOfWeek, "MON-FRI"), [2, 3, 4, 5, 6]);
        assert_eq!(values(CronField::Month, "JAN,MAR"), [1, 3]);
    }

    #[test]
    fn wrapping_ranges() {
        assert_eq!(values(CronField::Hours, "22-2"), [0, 1, 2, 22, 23]);
        assert_eq!(values(CronField::Month, "NOV-FEB"), [1, 2, 11, 12]);
        assert_eq!(values(CronField::DayOfWeek, "FRI-MON"), [1, 2, 6, 7]);
        // The stride carries across the wrap: 50, 55, 0, 5, 10.
        assert_eq!(values(CronField::Minutes, "50-10/5"), [0, 5, 10, 50, 55]);
    }

    #[test]
    fn rejections_say_why() {
        let err = |field, text| parse_values(field, text).expect_err("rejected");
        assert_eq!(err(CronField::Seconds, "60"), "60 is out of range 0-59");
        assert_eq!(err(CronField::Seconds, "0/60"), "increment 60 is larger than 59");
        assert_eq!(err(CronField::Hours, "*/0"), "increment must be at least 1");
        assert_eq!(err(CronField::Month, "FOO"), "`FOO` is neither a number nor a name (JAN..DEC)");
        assert_eq!(err(CronField::Minutes, "1,,2"), "empty item in a comma list");
        assert_eq!(err(CronField::Year, "2010-2005"), "range 2010-2005 runs backwards");
        assert_eq!(err(CronField::Year, "1969"), "1969 is out of range 1970-2199");
    }
}
