//! Calendars and exclusion windows without a database: the next fire time under day rules
//! across year boundaries, leap days and DST changes, FIX_RATE resuming after a window, and
//! reading `.ics` files.

use std::sync::Arc;

use chrono::{DateTime, TimeZone};
use jobwheel_admin::calendar::{CalendarDays, DayRules, DaySet, next_fires, parse_windows, read_ics};
use jobwheel_admin::cron::{ScheduleType, Tz};

fn set(days: serde_json::Value) -> Arc<DaySet> {
    let days: CalendarDays = serde_json::from_value(days).expect("calendar days");
    Arc::new(days.normalize().expect("valid days").1)
}

fn windows(texts: &[&str]) -> Vec<jobwheel_admin::calendar::Window> {
    parse_windows(texts).expect("valid windows")
}

/// The next `n` fire times after `from` (local time in `tz`), as local `YYYY-MM-DD HH:MM:SS`
/// with the offset.
fn next(kind: ScheduleType, conf: &str, tz: Tz, rules: &DayRules, from: &str, n: usize) -> Vec<String> {
    let from = DateTime::parse_from_rfc3339(from).expect("instant").timestamp_millis();
    next_fires(kind, conf, tz, rules, from, n)
        .expect("valid schedule")
        .into_iter()
        .map(|ms| tz.timestamp_millis_opt(ms).unwrap().format("%Y-%m-%d %H:%M:%S %:z").to_string())
        .collect()
}

#[test]
fn only_on_business_days_across_the_year_boundary() {
    let rest = set(serde_json::json!({"weekdays": ["SAT", "SUN"], "dates": ["2026-12-25", "2027-01-01"]}));
    let rules = DayRules::new(Vec::new(), vec![rest], Vec::new());
    let tz: Tz = "Europe/Berlin".parse().unwrap();
    let got = next(ScheduleType::Cron, "0 0 18 * * ?", tz, &rules, "2026-12-23T00:00:00Z", 4);
    assert_eq!(
        got,
        [
            "2026-12-23 18:00:00 +01:00",
            "2026-12-24 18:00:00 +01:00",
            "2026-12-28 18:00:00 +01:00",
            "2026-12-29 18:00:00 +01:00"
        ]
    );
    let got = next(ScheduleType::Cron, "0 0 18 * * ?", tz, &rules, "2026-12-31T12:00:00Z", 2);
    assert_eq!(got, ["2026-12-31 18:00:00 +01:00", "2027-01-04 18:00:00 +01:00"]);
}

#[test]
fn only_on_a_yearly_leap_day_finds_the_next_leap_year() {
    let leap = set(serde_json::json!({"yearly": ["02-29"]}));
    let rules = DayRules::new(vec![leap], Vec::new(), Vec::new());
    // Every second: each excluded day is skipped whole, so four years is cheap.
    let got = next(ScheduleType::Cron, "* * * * * ?", Tz::UTC, &rules, "2024-03-01T00:00:00Z", 1);
    assert_eq!(got, ["2028-02-29 00:00:00 +00:00"]);
}

#[test]
fn overnight_window_spans_new_year() {
    let rules = DayRules::new(Vec::new(), Vec::new(), windows(&["23:00-01:00"]));
    let got = next(ScheduleType::Cron, "0 0 * * * ?", Tz::Asia__Shanghai, &rules, "2026-12-31T13:30:00Z", 3);
    // 22:00 on the 31st, then nothing until 01:00 on the 1st (the end is not excluded).
    assert_eq!(
        got,
        ["2026-12-31 22:00:00 +08:00", "2027-01-01 01:00:00 +08:00", "2027-01-01 02:00:00 +08:00"]
    );
}

#[test]
fn fix_rate_resumes_after_the_window() {
    let rules = DayRules::new(Vec::new(), Vec::new(), windows(&["12:00-13:00"]));
    let got = next(ScheduleType::FixRate, "1200", Tz::UTC, &rules, "2026-05-04T11:30:00Z", 3);
    // 11:50, then 12:10 and 12:30 are excluded; the rate restarts from the window's end.
    assert_eq!(
        got,
        ["2026-05-04 11:50:00 +00:00", "2026-05-04 13:20:00 +00:00", "2026-05-04 13:40:00 +00:00"]
    );
}

#[test]
fn never_on_day_is_the_local_day_of_the_job_zone() {
    // 2027-01-01 00:30 in Shanghai is still 2026-12-31 in UTC: the calendar's date is local.
    let new_year = set(serde_json::json!({"dates": ["2027-01-01"]}));
    let rules = DayRules::new(Vec::new(), vec![new_year], Vec::new());
    let got = next(ScheduleType::Cron, "0 30 0 * * ?", Tz::Asia__Shanghai, &rules, "2026-12-30T12:00:00Z", 2);
    assert_eq!(got, ["2026-12-31 00:30:00 +08:00", "2027-01-02 00:30:00 +08:00"]);
}

#[test]
fn window_in_a_fall_back_hour_excludes_both_passes() {
    let rules = DayRules::new(Vec::new(), Vec::new(), windows(&["01:15-01:45"]));
    let tz: Tz = "Europe/London".parse().unwrap();
    // 2026-10-25: 01:00-02:00 happens in BST, then again in GMT.
    let got = next(ScheduleType::Cron, "0 0/15 * * * ?", tz, &rules, "2026-10-24T23:50:00Z", 5);
    assert!(got.iter().all(|t| !t.contains(" 01:15:") && !t.contains(" 01:30:")), "{got:?}");
    assert!(got.contains(&"2026-10-25 01:45:00 +00:00".to_owned()), "{got:?}");
    assert_eq!(got.len(), 5);
}

const HOLIDAYS_ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nX-WR-CALNAME:Holidays\r\n\
BEGIN:VEVENT\r\nUID:1\r\nSUMMARY:New Year\r\nDTSTART;VALUE=DATE:20270101\r\nDTEND;VALUE=DATE:20270102\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:2\r\nSUMMARY:Spring Festival\r\nDTSTART;VALUE=DATE:20270206\r\nDTEND;VALUE=DATE:20270213\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:3\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:4\r\nSUMMARY:Standup\r\nDTSTART:20261201T090000Z\r\nRRULE:FREQ=WEEKLY;BYDAY=MO\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:5\r\nSUMMARY:Offsite\r\nDTSTART:20261110T220000Z\r\nDTEND:20261111T020000Z\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:6\r\nSUMMARY:Cancelled day\r\nSTATUS:CANCELLED\r\nDTSTART;VALUE=DATE:20261111\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

#[test]
fn ics_all_day_ranges_yearly_and_timed_events() {
    let ics = read_ics(HOLIDAYS_ICS).expect("readable");
    assert_eq!(ics.name.as_deref(), Some("Holidays"));
    assert_eq!(ics.imported, 4);
    assert_eq!(ics.days.dates, ["2027-01-01"]);
    let ranges: Vec<String> = ics.days.ranges.iter().map(|r| format!("{}..{}", r.from, r.to)).collect();
    assert_eq!(ranges, ["2027-02-06..2027-02-12", "2026-11-10..2026-11-11"]);
    assert_eq!(ics.days.yearly, ["12-25"]);
    assert_eq!(ics.skipped.len(), 2, "{:?}", ics.skipped);
    assert!(
        ics.skipped[0].starts_with("Standup") && ics.skipped[0].contains("FREQ=WEEKLY"),
        "{:?}",
        ics.skipped
    );
    assert!(ics.skipped[1].contains("cancelled"), "{:?}", ics.skipped);
}

#[test]
fn ics_that_is_not_a_calendar_is_refused_with_a_reason() {
    let error = read_ics("hello, world").expect_err("refused").to_string();
    assert!(error.contains("iCalendar"), "{error}");
}
