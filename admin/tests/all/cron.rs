//! Quartz's own CronTrigger tutorial examples, plus `W`/`LW`, with fire times worked out by
//! hand from a calendar (in UTC, so no DST is involved; see `cron_dst.rs` for that).

use chrono::{DateTime, NaiveDateTime, TimeZone};
use jobwheel_admin::cron::{CronExpression, Tz};

/// The first `n` fire times after `from` (`YYYY-MM-DD HH:MM:SS`, UTC), chained.
fn fires(expression: &str, from: &str, n: usize) -> Vec<String> {
    let cron = CronExpression::parse(expression).expect("expression parses");
    let naive = NaiveDateTime::parse_from_str(from, "%Y-%m-%d %H:%M:%S").expect("test time");
    let mut at: DateTime<Tz> = Tz::UTC.from_utc_datetime(&naive);
    let mut out = Vec::new();
    for _ in 0..n {
        match cron.next_after(Tz::UTC, at.timestamp_millis()) {
            Some(next) => {
                out.push(next.format("%Y-%m-%d %H:%M:%S").to_string());
                at = next;
            }
            None => break,
        }
    }
    out
}

#[test]
fn every_day_at_noon() {
    // "Fire at 12pm (noon) every day"
    assert_eq!(
        fires("0 0 12 * * ?", "2024-01-01 00:00:00", 2),
        ["2024-01-01 12:00:00", "2024-01-02 12:00:00"]
    );
    // Strictly after: from exactly noon, the next is tomorrow.
    assert_eq!(fires("0 0 12 * * ?", "2024-01-01 12:00:00", 1), ["2024-01-02 12:00:00"]);
    assert_eq!(fires("0 0 12 * * ?", "2024-01-01 11:59:59", 1), ["2024-01-01 12:00:00"]);
}

#[test]
fn every_day_at_10_15() {
    // "0 15 10 ? * *" and "0 15 10 * * ?" are the same schedule.
    let expected = ["2024-01-01 10:15:00", "2024-01-02 10:15:00"];
    assert_eq!(fires("0 15 10 ? * *", "2024-01-01 00:00:00", 2), expected);
    assert_eq!(fires("0 15 10 * * ?", "2024-01-01 00:00:00", 2), expected);
    assert_eq!(fires("0 15 10 * * ? *", "2024-01-01 00:00:00", 2), expected);
}

#[test]
fn only_during_2005() {
    // "Fire at 10:15am every day during the year 2005"
    assert_eq!(
        fires("0 15 10 * * ? 2005", "2005-12-30 00:00:00", 5),
        ["2005-12-30 10:15:00", "2005-12-31 10:15:00"]
    );
    assert_eq!(fires("0 15 10 * * ? 2005", "2024-01-01 00:00:00", 1), Vec::<String>::new());
}

#[test]
fn every_5_minutes_from_2pm() {
    // "Fire every 5 minutes starting at 2pm and ending at 2:55pm, every day"
    let got = fires("0 0/5 14 * * ?", "2024-01-01 00:00:00", 13);
    assert_eq!(got[0], "2024-01-01 14:00:00");
    assert_eq!(got[1], "2024-01-01 14:05:00");
    assert_eq!(got[11], "2024-01-01 14:55:00");
    assert_eq!(got[12], "2024-01-02 14:00:00");
}

#[test]
fn every_5_minutes_at_2pm_and_6pm() {
    let got = fires("0 0/5 14,18 * * ?", "2024-01-01 14:50:00", 4);
    assert_eq!(
        got,
        ["2024-01-01 14:55:00", "2024-01-01 18:00:00", "2024-01-01 18:05:00", "2024-01-01 18:10:00"]
    );
}

#[test]
fn every_minute_from_2pm_to_2_05pm() {
    let got = fires("0 0-5 14 * * ?", "2024-01-01 00:00:00", 7);
    assert_eq!(
        got,
        [
            "2024-01-01 14:00:00",
            "2024-01-01 14:01:00",
            "2024-01-01 14:02:00",
            "2024-01-01 14:03:00",
            "2024-01-01 14:04:00",
            "2024-01-01 14:05:00",
            "2024-01-02 14:00:00"
        ]
    );
}

#[test]
fn wednesdays_in_march_at_2_10pm_and_2_44pm() {
    // March 2024 Wednesdays: 6, 13, 20, 27.
    let got = fires("0 10,44 14 ? 3 WED", "2024-01-01 00:00:00", 9);
    assert_eq!(
        got,
        [
            "2024-03-06 14:10:00",
            "2024-03-06 14:44:00",
            "2024-03-13 14:10:00",
            "2024-03-13 14:44:00",
            "2024-03-20 14:10:00",
            "2024-03-20 14:44:00",
            "2024-03-27 14:10:00",
            "2024-03-27 14:44:00",
            "2025-03-05 14:10:00"
        ]
    );
}

#[test]
fn weekdays_at_10_15() {
    // 2024-01-05 is a Friday: after its 10:15 comes Monday's.
    assert_eq!(
        fires("0 15 10 ? * MON-FRI", "2024-01-05 11:00:00", 2),
        ["2024-01-08 10:15:00", "2024-01-09 10:15:00"]
    );
    // Numbers mean the same (1 = SUN): 2-6 = MON-FRI. Names are case-insensitive.
    assert_eq!(fires("0 15 10 ? * 2-6", "2024-01-05 11:00:00", 1), ["2024-01-08 10:15:00"]);
    assert_eq!(fires("0 15 10 ? * mon-fri", "2024-01-05 11:00:00", 1), ["2024-01-08 10:15:00"]);
}

#[test]
fn the_15th_of_every_month() {
    assert_eq!(
        fires("0 15 10 15 * ?", "2024-01-15 10:15:00", 2),
        ["2024-02-15 10:15:00", "2024-03-15 10:15:00"]
    );
}

#[test]
fn last_day_of_every_month() {
    // 2024 is a leap year.
    assert_eq!(
        fires("0 15 10 L * ?", "2024-01-01 00:00:00", 4),
        ["2024-01-31 10:15:00", "2024-02-29 10:15:00", "2024-03-31 10:15:00", "2024-04-30 10:15:00"]
    );
    assert_eq!(fires("0 15 10 L 2 ?", "2025-01-01 00:00:00", 1), ["2025-02-28 10:15:00"]);
}

#[test]
fn second_to_last_day_of_every_month() {
    // "L-2": two days before the last day.
    assert_eq!(
        fires("0 15 10 L-2 * ?", "2024-01-01 00:00:00", 4),
        ["2024-01-29 10:15:00", "2024-02-27 10:15:00", "2024-03-29 10:15:00", "2024-04-28 10:15:00"]
    );
    // Later the same day the next one is next month's.
    assert_eq!(fires("0 15 10 L-2 * ?", "2024-01-29 10:15:00", 1), ["2024-02-27 10:15:00"]);
    // An offset that does not fit a month skips that month: L-30 exists only in 31-day months.
    assert_eq!(
        fires("0 0 0 L-30 * ?", "2024-01-02 00:00:00", 2),
        ["2024-03-01 00:00:00", "2024-05-01 00:00:00"]
    );
}

#[test]
fn last_friday_of_every_month() {
    assert_eq!(
        fires("0 15 10 ? * 6L", "2024-01-01 00:00:00", 3),
        ["2024-01-26 10:15:00", "2024-02-23 10:15:00", "2024-03-29 10:15:00"]
    );
    assert_eq!(fires("0 15 10 ? * FRIL", "2024-01-01 00:00:00", 1), ["2024-01-26 10:15:00"]);
}

#[test]
fn last_friday_2002_to_2005() {
    assert_eq!(
        fires("0 15 10 ? * 6L 2002-2005", "2002-01-01 00:00:00", 2),
        ["2002-01-25 10:15:00", "2002-02-22 10:15:00"]
    );
    assert_eq!(fires("0 15 10 ? * 6L 2002-2005", "2005-12-01 00:00:00", 5), ["2005-12-30 10:15:00"]);
    assert_eq!(fires("0 15 10 ? * 6L 2002-2005", "2024-01-01 00:00:00", 1), Vec::<String>::new());
}

#[test]
fn third_friday_of_every_month() {
    assert_eq!(
        fires("0 15 10 ? * 6#3", "2024-01-01 00:00:00", 3),
        ["2024-01-19 10:15:00", "2024-02-16 10:15:00", "2024-03-15 10:15:00"]
    );
    // A fifth Monday exists only in some months: 2024-01-29, 2024-04-29, 2024-07-29.
    assert_eq!(
        fires("0 0 9 ? * 2#5", "2024-01-01 00:00:00", 3),
        ["2024-01-29 09:00:00", "2024-04-29 09:00:00", "2024-07-29 09:00:00"]
    );
}

#[test]
fn every_5_days_from_the_first() {
    // Days 1, 6, 11, 16, 21, 26, 31 of each month.
    let got = fires("0 0 12 1/5 * ?", "2024-01-01 00:00:00", 8);
    assert_eq!(got[0], "2024-01-01 12:00:00");
    assert_eq!(got[1], "2024-01-06 12:00:00");
    assert_eq!(got[6], "2024-01-31 12:00:00");
    assert_eq!(got[7], "2024-02-01 12:00:00");
}

#[test]
fn every_november_11th_at_11_11() {
    assert_eq!(
        fires("0 11 11 11 11 ?", "2024-01-01 00:00:00", 2),
        ["2024-11-11 11:11:00", "2025-11-11 11:11:00"]
    );
}

#[test]
fn nearest_weekday() {
    // 2024-06-15 is a Saturday → Friday the 14th; 2024-09-15 a Sunday → Monday the 16th.
    assert_eq!(fires("0 0 12 15W * ?", "2024-06-01 00:00:00", 1), ["2024-06-14 12:00:00"]);
    assert_eq!(fires("0 0 12 15W * ?", "2024-09-01 00:00:00", 1), ["2024-09-16 12:00:00"]);
    // W never leaves the month: 2024-06-01 (Saturday) → Monday the 3rd, not May 31st;
    // 2024-03-31 (Sunday) with 31W → Friday the 29th, not April 1st.
    assert_eq!(fires("0 0 12 1W * ?", "2024-05-31 13:00:00", 1), ["2024-06-03 12:00:00"]);
    assert_eq!(fires("0 0 12 31W * ?", "2024-03-01 00:00:00", 1), ["2024-03-29 12:00:00"]);
}

#[test]
fn last_weekday_of_the_month() {
    // 2024-03-31 is a Sunday → 29th; 2024-08-31 a Saturday → 30th; 2024-07-31 a Wednesday.
    assert_eq!(fires("0 0 18 LW * ?", "2024-03-01 00:00:00", 1), ["2024-03-29 18:00:00"]);
    assert_eq!(
        fires("0 0 18 LW * ?", "2024-07-01 00:00:00", 2),
        ["2024-07-31 18:00:00", "2024-08-30 18:00:00"]
    );
    // L-nW: the weekday nearest to 2 days before the end. 2024-08-29 is a Thursday;
    // 2024-09-28 (L-2 of September) is a Saturday → Friday the 27th.
    assert_eq!(
        fires("0 0 18 L-2W * ?", "2024-08-01 00:00:00", 2),
        ["2024-08-29 18:00:00", "2024-09-27 18:00:00"]
    );
}

#[test]
fn wrapping_ranges_and_seconds() {
    assert_eq!(
        fires("0 0 22-1 * * ?", "2024-01-01 12:00:00", 4),
        ["2024-01-01 22:00:00", "2024-01-01 23:00:00", "2024-01-02 00:00:00", "2024-01-02 01:00:00"]
    );
    assert_eq!(
        fires("0 0 0 1 NOV-FEB ?", "2024-03-01 00:00:00", 2),
        ["2024-11-01 00:00:00", "2024-12-01 00:00:00"]
    );
    assert_eq!(
        fires("*/20 * * * * ?", "2024-01-01 00:00:00", 3),
        ["2024-01-01 00:00:20", "2024-01-01 00:00:40", "2024-01-01 00:01:00"]
    );
    // `L` alone in day-of-week is Saturday: 2024-01-06.
    assert_eq!(fires("0 0 8 ? * L", "2024-01-01 00:00:00", 1), ["2024-01-06 08:00:00"]);
}

#[test]
fn fractional_from_is_truncated_to_the_second() {
    let cron = CronExpression::parse("* * * * * ?").expect("parses");
    // 12:00:00.500 → 12:00:01.000 (Quartz: +1 s, then drop the milliseconds).
    let from =
        Tz::UTC.with_ymd_and_hms(2024, 1, 1, 12, 0, 0).single().expect("valid").timestamp_millis() + 500;
    let next = cron.next_after(Tz::UTC, from).expect("fires");
    assert_eq!(next.timestamp_millis(), from + 500);
}
