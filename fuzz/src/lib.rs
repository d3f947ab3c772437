//! The admin's pure, dependency-light modules, compiled from the admin's own source files so
//! the fuzz build does not pull in (and instrument) the admin's database and server stack.

/// `admin/src/cron` and `admin/src/wasm_check.rs`, exactly as the admin compiles them.
#[path = "../../admin/src"]
#[allow(dead_code, unreachable_pub, reason = "only the parts the targets call are used")]
pub mod admin {
    pub mod cron;
    pub mod wasm_check;
}
