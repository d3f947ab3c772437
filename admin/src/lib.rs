//! jobwheel admin: scheduler, web UI and JSON API (in progress; see README "Status").
//!
//! Modules landed so far: `store` (schema and queries on SQLite, PostgreSQL and MySQL),
//! `routing` (the ten upstream routing strategies) and `cron` (Quartz cron and next fire times).
#![forbid(unsafe_code)]

pub mod cron;
pub mod routing;
pub mod store;

pub use jobwheel_protocol as protocol;
