//! jobwheel's sandboxed WebAssembly GLUE runtime: one wasmtime engine, a digest-keyed cache
//! (memory + disk), and fuel-metered, cancellable runs of WASI preview1 modules and WASI 0.2
//! command components in a fresh store each. Components may make outbound HTTP requests
//! through `wasi:http` under a network policy ([`NetGrant`], [`RuntimeConfig::http_allow`]).
//!
//! The crate knows nothing about xxl-job: the executor fetches module bytes, hands in a
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
mod component;
mod config;
mod disk_cache;
mod error;
mod journal;
mod limiter;
mod loader;
mod memory_cache;
mod net;
mod outcome;
mod output;
mod pool;
mod run;
mod runtime;
mod ticker;

pub use config::{Allocation, Metering, RuntimeConfig};
pub use error::WasmError;
pub use jobwheel_protocol::flight::{RunSummary, is_host_note};
pub use journal::{
    EnvEntry, Flight, FlightRecord, FlightReport, GuestLines, HttpAnswer, HttpExchange, JOURNAL_VERSION,
    Journal, JournalInputs, OLDEST_JOURNAL_VERSION, WireError, secret_digest, summarize,
};
pub use loader::{LoadSource, LoadedModule, ModuleLoad};
pub use net::{NetGrant, NetLimits, NetPolicy, PolicyError};
pub use outcome::{FailureKind, Outcome, RunReport, RunStats};
pub use output::LogSink;
pub use run::RunInput;
pub use runtime::Runtime;
