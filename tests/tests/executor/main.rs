//! Executor tests through its real HTTP API: one binary, one module per area.

mod api;
mod blocking;
mod builtin;
mod command;
mod concurrency;
mod config;
mod daemon;
mod delivery;
mod fire_key;
mod health;
mod http_handler;
mod limits;
mod logs;
mod metrics;
mod process_tree;
mod sandbox;
mod scripts;
mod shipped_logs;
mod support;
mod wasm;
mod workflow_data;
