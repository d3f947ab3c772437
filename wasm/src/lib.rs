//! jobwheel's sandboxed WebAssembly GLUE runtime: one wasmtime engine, a digest-keyed module
//! cache (memory + disk), and fuel-metered, cancellable runs in a fresh WASI preview1 store.
//!
//! The crate knows nothing about HTTP or xxl-job: the executor fetches module bytes, hands in a
//! [`RunInput`] and a [`LogSink`], and maps the returned [`RunReport`] to its own protocol.
//! Guest failures (traps, non-zero exits, OOM, fuel exhaustion) are *data* in
//! [`Outcome`]; only infrastructure problems (bad digest, uncompilable module, engine setup)
//! are [`WasmError`]s.
//!
//! The guest-facing contract (environment variables, exit codes, the result-marker line) is in
//! `docs/guest-abi.md` and its names are the constants in [`abi`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
mod config;
mod disk_cache;
mod error;
mod limiter;
mod loader;
mod memory_cache;
mod outcome;
mod output;
mod run;
mod runtime;
mod ticker;

pub use config::{Metering, RuntimeConfig};
pub use error::WasmError;
pub use loader::{LoadSource, LoadedModule, ModuleLoad};
pub use outcome::{FailureKind, Outcome, RunReport, RunStats};
pub use output::LogSink;
pub use run::RunInput;
pub use runtime::Runtime;
