//! Shared helpers for jobwheel's system tests and benchmarks: a fake admin that records what
//! executors send, an in-process executor harness on a free port, real admin and executor
//! processes with a management-API client, and condition waits.
#![forbid(unsafe_code)]

pub mod api;
pub mod chaos;
pub mod cluster;
pub mod databases;
pub mod executor_harness;
pub mod fake_admin;
pub mod fixtures;
mod house;
pub mod openmetrics;
pub mod outcomes;
pub mod procs;
pub mod sample_jobs;
pub mod sso_servers;
pub mod wait;

pub use executor_harness::{TOKEN, TestExecutor, now_ms, test_config, trigger, wasm_trigger};
pub use fake_admin::FakeAdmin;
pub use wait::{wait_until, wait_until_async};
