//! Schedule types, validation messages and upstream's `generateNextTriggerTime` rules for
//! NONE, FIX_RATE and jobwheel's FIX_DELAY.

use jobwheel_admin::cron::{
    CronError, CronField, ScheduleError, ScheduleType, Tz, next_trigger_time, parse_time_zone, validate,
};
use jobwheel_admin::domain::UnknownScheduleType;

/// The next `count` fire times of a schedule without calendars or windows.
pub(crate) fn next_n(
    kind: ScheduleType,
    conf: &str,
    tz: Tz,
    from_ms: i64,
    count: usize,
) -> Result<Vec<i64>, jobwheel_admin::cron::ScheduleError> {
    jobwheel_admin::calendar::next_fires(
        kind,
        conf,
        tz,
        &jobwheel_admin::calendar::DayRules::default(),
        from_ms,
        count,
    )
}

fn cron_error(expression: &str) -> String {
    validate(ScheduleType::Cron, expression).expect_err("invalid").to_string()
}

#[test]
fn schedule_type_names_titles_and_order() {
    let names: Vec<_> = ScheduleType::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["NONE", "CRON", "FIX_RATE", "FIX_DELAY"]);
    assert_eq!("FIX_RATE".parse::<ScheduleType>(), Ok(ScheduleType::FixRate));
    assert_eq!("fix_rate".parse::<ScheduleType>(), Err(UnknownScheduleType("fix_rate".to_owned())));
    assert_eq!(ScheduleType::FixRate.title_en(), "Fix rate");
    assert_eq!(ScheduleType::FixRate.title_zh(), "固定速度");
    assert_eq!(ScheduleType::None.title_zh(), "无");
    assert!(ScheduleType::FixDelay.waits_for_completion());
    assert!(!ScheduleType::FixRate.waits_for_completion());
}

#[test]
fn none_has_no_next_time() {
    assert_eq!(next_trigger_time(ScheduleType::None, "", Tz::UTC, 0), Ok(None));
    assert_eq!(next_n(ScheduleType::None, "", Tz::UTC, 0, 5), Ok(vec![]));
}

#[test]
fn fix_rate_adds_seconds_and_rounds_up_to_a_whole_second() {
    let next = |conf, from| next_trigger_time(ScheduleType::FixRate, conf, Tz::UTC, from);
    assert_eq!(next("5", 1_000), Ok(Some(6_000)));
    assert_eq!(next("5", 1_234), Ok(Some(7_000)));
    assert_eq!(next("1", 999), Ok(Some(2_000)));
    // Upstream 3.1.0 fixed the int overflow of conf * 1000.
    assert_eq!(next("2147483647", 0), Ok(Some(2_147_483_647_000)));
    // Integer.valueOf accepts a plus sign.
    assert_eq!(next("+3", 0), Ok(Some(3_000)));
    assert_eq!(next_n(ScheduleType::FixRate, "30", Tz::UTC, 10_500, 3), Ok(vec![41_000, 71_000, 101_000]));
}

#[test]
fn fix_rate_and_fix_delay_need_whole_seconds_of_at_least_one() {
    for conf in ["0", "-1", "", " 5", "1.5", "abc", "2147483648"] {
        let err = validate(ScheduleType::FixRate, conf).expect_err(conf);
        assert_eq!(err.to_string(), format!("FIX_RATE needs a whole number of seconds >= 1, got `{conf}`"));
        assert!(validate(ScheduleType::FixDelay, conf).is_err(), "{conf}");
    }
}

#[test]
fn fix_delay_counts_from_completion() {
    // The scheduler calls this with the completion time of the previous run.
    let completed_at = 1_700_000_012_345;
    assert_eq!(
        next_trigger_time(ScheduleType::FixDelay, "60", Tz::UTC, completed_at),
        Ok(Some(1_700_000_073_000))
    );
}

#[test]
fn cron_next_five_from_now() {
    let from = 1_704_067_200_000; // 2024-01-01T00:00:00Z
    let times = next_n(ScheduleType::Cron, "0 0 12 ? * MON", Tz::UTC, from, 5).expect("valid");
    let day = 86_400_000;
    // 2024-01-01 is a Monday.
    let first = from + 12 * 3_600_000;
    assert_eq!(times, [first, first + 7 * day, first + 14 * day, first + 21 * day, first + 28 * day]);
}

#[test]
fn cron_ends_when_the_years_run_out() {
    let from = 7_258_118_400_000; // 2200-01-01T00:00:00Z
    assert_eq!(next_trigger_time(ScheduleType::Cron, "0 0 0 1 1 ? 2199", Tz::UTC, from), Ok(None));
    assert_eq!(next_n(ScheduleType::Cron, "0 0 0 1 1 ? 2198-2199", Tz::UTC, 0, 5).map(|t| t.len()), Ok(2));
    // Never-matching days do not hang: February 30th.
    assert_eq!(next_trigger_time(ScheduleType::Cron, "0 0 0 30 2 ?", Tz::UTC, 0), Ok(None));
}

#[test]
fn invalid_cron_messages_name_the_field_and_the_reason() {
    assert_eq!(cron_error(""), "invalid cron expression: the cron expression is empty");
    assert_eq!(
        cron_error("0 0 12 * *"),
        "invalid cron expression: the cron expression has 5 fields; Quartz needs 6 or 7: \
         seconds minutes hours day-of-month month day-of-week [year]"
    );
    assert_eq!(
        cron_error("60 * * * * ?"),
        "invalid cron expression: seconds field `60`: 60 is out of range 0-59"
    );
    assert_eq!(
        cron_error("0 0/60 * * * ?"),
        "invalid cron expression: minutes field `0/60`: increment 60 is larger than 59"
    );
    assert_eq!(
        cron_error("0 0 24 * * ?"),
        "invalid cron expression: hours field `24`: 24 is out of range 0-23"
    );
    assert_eq!(
        cron_error("0 0 12 ? FOO *"),
        "invalid cron expression: month field `FOO`: `FOO` is neither a number nor a name (JAN..DEC)"
    );
    assert_eq!(
        cron_error("0 0 12 * * MON"),
        "invalid cron expression: specifying both a day-of-month and a day-of-week is not supported: \
         put '?' in one of them (e.g. `0 0 12 * * ?` or `0 0 12 ? * MON`)"
    );
    assert_eq!(
        cron_error("0 0 12 ? * ?"),
        "invalid cron expression: '?' can only be used in one of day-of-month and day-of-week"
    );
    assert_eq!(
        cron_error("0 0 ? * * ?"),
        "invalid cron expression: hours field `?`: '?' is only allowed in day-of-month or day-of-week"
    );
    assert_eq!(
        cron_error("0 0 12 L-31 * ?"),
        "invalid cron expression: day-of-month field `L-31`: offset from the last day must be at most 30"
    );
    assert_eq!(
        cron_error("0 0 12 ? * 6#6"),
        "invalid cron expression: day-of-week field `6#6`: '#' must be followed by 1-5, got `6`"
    );
    assert_eq!(
        cron_error("0 0 12 ? * 8"),
        "invalid cron expression: day-of-week field `8`: 8 is out of range 1-7"
    );
    assert_eq!(
        cron_error("0 0 12 * * ? 1969"),
        "invalid cron expression: year field `1969`: 1969 is out of range 1970-2199"
    );
    assert_eq!(
        cron_error("0 0 12 * * ? 2024 extra"),
        "invalid cron expression: the cron expression has 8 fields; Quartz needs 6 or 7: \
         seconds minutes hours day-of-month month day-of-week [year]"
    );
}

#[test]
fn cron_errors_are_matchable() {
    let err = validate(ScheduleType::Cron, "0 0 25 * * ?").expect_err("invalid");
    match err {
        ScheduleError::Cron(CronError::Field { field, .. }) => assert_eq!(field, CronField::Hours),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn time_zones_by_name() {
    assert_eq!(parse_time_zone("Europe/Berlin"), Ok(Tz::Europe__Berlin));
    assert_eq!(parse_time_zone("UTC"), Ok(Tz::UTC));
    assert_eq!(
        parse_time_zone("Mars/Olympus").map_err(|e| e.to_string()),
        Err("unknown time zone `Mars/Olympus` (expected an IANA name such as `Europe/Berlin`)".to_owned())
    );
}
