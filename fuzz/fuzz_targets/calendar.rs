//! The calendar parsers behind `POST /api/v1/calendars/import` (an `.ics` file), the job form's
//! exclusion windows (`HH:MM-HH:MM`) and stored calendar days (JSON): any input is read or
//! refused with a message, never a panic, and what is accepted behaves — an `.ics` file's days
//! normalise, a window ends after any moment inside it, a stored window list reads back as
//! written.
#![no_main]

use chrono::{NaiveDate, NaiveTime};
use jobwheel_fuzz::calendar::days::CalendarDays;
use jobwheel_fuzz::calendar::ics::read_ics;
use jobwheel_fuzz::calendar::window::{join_windows, parse_stored_windows, parse_windows};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the parser; the rest is its input.
    let Some((&selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match selector % 3 {
        0 => {
            if let Ok(read) = read_ics(text) {
                // What an import keeps must be a calendar the admin accepts as it stands.
                let _ = read.days.normalize();
            }
        }
        1 => {
            let entries: Vec<&str> = text.split(',').collect();
            let Ok(windows) = parse_windows(&entries) else { return };
            let stored = join_windows(&windows);
            let again = parse_stored_windows(&stored).expect("a stored window list reads back");
            assert_eq!(again, windows, "{stored:?}");
            let day = NaiveDate::from_ymd_opt(2026, 3, 29).expect("a date");
            for minute in (0..24 * 60).step_by(7) {
                let time = NaiveTime::from_hms_opt(minute / 60, minute % 60, 0).expect("a time");
                for window in windows.iter().filter(|w| w.contains(time)) {
                    let local = day.and_time(time);
                    assert!(window.end_after(local) > local, "{window:?} at {time} ends after it");
                }
            }
        }
        _ => {
            let _ = CalendarDays::compile_stored(text);
        }
    }
});
