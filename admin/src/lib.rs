//! jobwheel admin: the scheduler, the web UI, the management API and the API executors call,
//! over one database (SQLite, PostgreSQL or MySQL/MariaDB).
//!
//! `store` (one body, three SQL dialects), `engine` (pre-read, durable ring, trigger path,
//! completion, monitors), `routing` and `cron` (upstream's strategies and schedules), `http`
//! (the edge: executor API, `/api/v1`, UI files), `alarm`, and the ground floor they share:
//! `clock` (injectable time and randomness) and `lang` (the language of produced texts).
//! ARCHITECTURE.md has the code map and the life of a trigger.
#![forbid(unsafe_code)]

pub mod alarm;
pub mod app;
pub mod calendar;
pub mod cli;
pub mod clock;
pub mod config;
pub mod credentials;
pub mod cron;
pub mod demo;
pub mod domain;
pub mod engine;
pub mod engine_core;
pub mod executor_client;
pub mod fault;
pub mod http;
pub mod job_logs;
pub mod lang;
pub mod metrics;
pub mod replay;
pub mod routing;
pub mod sealing;
pub mod secret_key;
pub mod secrets;
pub mod sso;
pub mod store;
pub mod trusted_proxies;
pub mod users;
pub mod wasm_check;
pub mod workflow;

pub use jobwheel_protocol as protocol;
