//! Write jobwheel `GLUE_WASM` jobs in Rust: read the run's [`Context`], log lines with
//! [`log!`], and return `Ok`/`Err` to report success or failure with a message.
//!
//! ```no_run
//! use jobwheel_guest_sdk::log;
//!
//! jobwheel_guest_sdk::main!(|ctx| {
//!     log!("hello, {}!", ctx.param());
//!     if ctx.param().is_empty() {
//!         return Err("give me a parameter");
//!     }
//!     Ok(())
//! });
//! ```
//!
//! Build with `cargo build --target wasm32-wasip1 --release` (a preview1 module) or
//! `--target wasm32-wasip2` (a WASI 0.2 component, needed for outbound HTTP through [`http`])
//! and upload `target/<target>/release/<name>.wasm`. Everything here is plain WASI
//! (environment variables, stdout/stderr, exit code, `wasi:http`), described in
//! `docs/guest-abi.md`, so the same job also runs under `wasmtime run` for local testing, and
//! the crate compiles for the host so job logic can be unit-tested natively.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
mod context;
#[cfg(all(target_os = "wasi", target_env = "p2"))]
pub mod http;
mod report;

pub use context::{Context, ContextError, Shard};
pub use report::{JobResult, report, run, set_output};

/// Writes one line to the job log (guest stdout), `format!`-style.
///
/// Write errors are ignored: logging must never make a job fail.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::__log_line(::std::format_args!($($arg)*))
    };
}

/// Defines `fn main` for a job: `jobwheel_guest_sdk::main!(|ctx| { ...; Ok(()) });`.
///
/// The closure receives `&Context` and returns `()` or `Result<(), E>` with `E: Display`;
/// see [`run`].
#[macro_export]
macro_rules! main {
    ($job:expr) => {
        fn main() -> ::std::process::ExitCode {
            $crate::run($job)
        }
    };
}

#[doc(hidden)]
pub fn __log_line(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{args}");
}
