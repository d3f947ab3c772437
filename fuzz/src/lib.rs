//! The admin's pure, dependency-light modules, compiled from the admin's own source files so
//! the fuzz build does not pull in (and instrument) the admin's database and server stack.

/// `admin/src/cron` and `admin/src/wasm_check.rs`, exactly as the admin compiles them.
#[path = "../../admin/src"]
#[allow(dead_code, unreachable_pub, reason = "only the parts the targets call are used")]
pub mod admin {
    pub mod cron;
    pub mod wasm_check;
}

/// The schedule type `admin/src/cron` uses, from the admin's domain vocabulary
/// (`admin/src/domain/schedule_type.rs`), where the cron module finds it as `crate::domain`.
#[path = "../../admin/src/domain"]
#[allow(dead_code, unreachable_pub, reason = "only the parts the targets call are used")]
pub mod domain {
    mod schedule_type;

    pub use schedule_type::ScheduleType;
}

/// The modules section of an import (`admin/src/http/mgmt/import_modules.rs`), which calls
/// the upload check as `crate::wasm_check`.
#[path = "../../admin/src/http/mgmt/import_modules.rs"]
pub mod import_modules;
pub use admin::wasm_check;

/// The admin's calendar parsers (`admin/src/calendar/`): days, exclusion windows and `.ics`
/// files, without the scheduling rules (which need the store).
#[path = "../../admin/src/calendar"]
#[allow(dead_code, unreachable_pub, reason = "only the parts the targets call are used")]
pub mod calendar {
    pub mod days;
    mod error;
    pub mod ics;
    pub mod window;

    pub use error::CalendarError;
}
