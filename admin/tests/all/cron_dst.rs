//! Cron fire times across daylight-saving changes and in per-job time zones.
//!
//! Rule (Quartz's, see `docs/scheduling.md`): a wall-clock time inside a spring-forward gap
//! is skipped; a wall-clock time that occurs twice fires once, at its second (standard-time)
//! instant, so nothing fires during the first pass of the repeated hour.

use chrono::{DateTime, TimeZone, Utc};
use jobwheel_admin::cron::{ScheduleType, Tz, next_trigger_time};

use crate::cron_schedule::next_n;

const NEW_YORK: Tz = Tz::America__New_York;
const BERLIN: Tz = Tz::Europe__Berlin;

/// Epoch ms of a UTC time `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(text: &str) -> i64 {
    DateTime::parse_from_rfc3339(text).expect("test time").timestamp_millis()
}

/// `count` chained fire times after `from`, shown as local time with zone abbreviation.
fn fires(cron: &str, tz: Tz, from: &str, count: usize) -> Vec<String> {
    next_n(ScheduleType::Cron, cron, tz, utc(from), count)
        .expect("valid cron")
        .into_iter()
        .map(|ms| {
            let at = Utc.timestamp_millis_opt(ms).single().expect("in range").with_timezone(&tz);
            at.format("%Y-%m-%d %H:%M:%S %Z").to_string()
        })
        .collect()
}

#[test]
fn new_york_spring_forward_skips_the_missing_time() {
    // 2024-03-10 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    assert_eq!(
        fires("0 30 2 * * ?", NEW_YORK, "2024-03-09T05:00:00Z", 2),
        ["2024-03-09 02:30:00 EST", "2024-03-11 02:30:00 EDT"]
    );
}

#[test]
fn new_york_spring_forward_interval_job_continues_after_the_gap() {
    assert_eq!(
        fires("0 0/10 * * * ?", NEW_YORK, "2024-03-10T06:40:00Z", 3),
        ["2024-03-10 01:50:00 EST", "2024-03-10 03:00:00 EDT", "2024-03-10 03:10:00 EDT"]
    );
}

#[test]
fn new_york_fall_back_fires_a_repeated_time_once_in_standard_time() {
    // 2024-11-03 02:00 EDT falls back to 01:00 EST: 01:30 happens twice.
    assert_eq!(
        fires("0 30 1 * * ?", NEW_YORK, "2024-11-03T04:00:00Z", 2),
        ["2024-11-03 01:30:00 EST", "2024-11-04 01:30:00 EST"]
    );
    // 01:30 EST is 06:30Z; the first 01:30 (EDT, 05:30Z) is not used.
    assert_eq!(
        next_trigger_time(ScheduleType::Cron, "0 30 1 * * ?", NEW_YORK, utc("2024-11-03T04:00:00Z")),
        Ok(Some(utc("2024-11-03T06:30:00Z")))
    );
}

#[test]
fn new_york_fall_back_interval_job_skips_the_first_pass() {
    assert_eq!(
        fires("0 0/30 * * * ?", NEW_YORK, "2024-11-03T04:30:00Z", 3),
        ["2024-11-03 01:00:00 EST", "2024-11-03 01:30:00 EST", "2024-11-03 02:00:00 EST"]
    );
    // Starting inside the first pass (01:10 EDT) also lands in the second one.
    assert_eq!(fires("0 0/30 * * * ?", NEW_YORK, "2024-11-03T05:10:00Z", 1), ["2024-11-03 01:30:00 EST"]);
}

#[test]
fn berlin_spring_forward_and_fall_back() {
    // 2024-03-31 02:00 CET → 03:00 CEST.
    assert_eq!(
        fires("0 30 2 * * ?", BERLIN, "2024-03-30T12:00:00Z", 2),
        ["2024-04-01 02:30:00 CEST", "2024-04-02 02:30:00 CEST"]
    );
    // 2024-10-27 03:00 CEST → 02:00 CET: 02:30 fires once, in CET (01:30Z).
    assert_eq!(
        fires("0 30 2 * * ?", BERLIN, "2024-10-26T22:00:00Z", 2),
        ["2024-10-27 02:30:00 CET", "2024-10-28 02:30:00 CET"]
    );
    assert_eq!(
        fires("0 0/15 * * * ?", BERLIN, "2024-10-26T23:45:00Z", 2),
        ["2024-10-27 02:00:00 CET", "2024-10-27 02:15:00 CET"]
    );
}

#[test]
fn the_same_expression_in_different_zones() {
    let from = utc("2024-06-01T00:00:00Z");
    let at = |tz| next_trigger_time(ScheduleType::Cron, "0 0 9 * * ?", tz, from);
    assert_eq!(at(Tz::UTC), Ok(Some(utc("2024-06-01T09:00:00Z"))));
    // 00:00Z is 08:00 in Shanghai: 09:00 there is 01:00Z the same day.
    assert_eq!(at(Tz::Asia__Shanghai), Ok(Some(utc("2024-06-01T01:00:00Z"))));
    assert_eq!(at(NEW_YORK), Ok(Some(utc("2024-06-01T13:00:00Z"))));
}
