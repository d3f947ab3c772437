//! jobwheel admin: scheduler, web UI and JSON API (in progress; see README "Status").
//!
//! Modules landed so far: `store` (schema and queries on SQLite, PostgreSQL and MySQL),
//! `routing` (the ten upstream routing strategies) and `cron` (Quartz cron and next fire times).
#![forbid(unsafe_code)]

pub mod alarm;
pub mod app;
pub mod config;
pub mod cron;
pub mod demo;
pub mod engine;
pub mod engine_core;
pub mod executor_client;
pub mod http;
pub mod routing;
pub mod secrets;
pub mod store;
pub mod wasm_check;

pub use jobwheel_protocol as protocol;
