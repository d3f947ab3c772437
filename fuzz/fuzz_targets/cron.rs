//! Cron expressions and schedules: any text either parses or is refused with a message, and
//! every next fire time is strictly after the time it was computed from.
#![no_main]

use jobwheel_fuzz::admin::cron::{Schedule, ScheduleType, Tz};
use libfuzzer_sys::fuzz_target;

/// Zones with DST gaps/overlaps, half-hour offsets and none at all.
const ZONES: [Tz; 5] =
    [Tz::UTC, Tz::America__New_York, Tz::Europe__Berlin, Tz::Australia__Lord_Howe, Tz::Asia__Kolkata];

fuzz_target!(|data: &[u8]| {
    // 1 byte of zone and schedule type, 8 bytes of start time, the rest is the expression.
    let Some((&selector, rest)) = data.split_first() else { return };
    let Some((start, text)) = rest.split_first_chunk::<8>() else { return };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let tz = ZONES[usize::from(selector & 0x0f) % ZONES.len()];
    let schedule_type = ScheduleType::ALL[usize::from(selector >> 4) % ScheduleType::ALL.len()];
    // Keep the start within the years the scheduler can meet (chrono refuses the extremes).
    let from = i64::from_le_bytes(*start).rem_euclid(40_000_000_000_000) - 5_000_000_000_000;

    let Ok(schedule) = Schedule::parse(schedule_type, text) else { return };
    let mut previous = from;
    for _ in 0..5 {
        let Some(next) = schedule.next_after(tz, previous) else { break };
        assert!(next > previous, "{text:?} in {tz}: next {next} is not after {previous}");
        previous = next;
    }
});
