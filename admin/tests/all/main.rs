//! The admin's integration tests, one binary (wasmtime's `tests/all` shape): a test binary
//! links the admin, sqlx and, through the executor dev-dependency, wasmtime, so one link
//! instead of nine is most of the build time of `cargo test -p jobwheel-admin`.
//!
//! Run one area with a filter: `cargo test -p jobwheel-admin --test all store::`.

mod calendar;
mod cron;
mod cron_dst;
mod cron_schedule;
mod engine;
mod http;
mod routing;
mod routing_hash;
mod store;
mod wasm_check;
