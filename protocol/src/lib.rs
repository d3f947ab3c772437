//! Wire types that cross process boundaries between the jobwheel admin, executors and tests.
//!
//! Everything here speaks xxl-job's JSON protocol: generation A (`{code,msg,content}`, 2.x) and
//! generation B (`{code,msg,data}`, 3.3+). Deserialization is as lenient as upstream's Gson
//! (missing or `null` numbers become 0, missing strings become empty) so that any upstream peer
//! can talk to us; serialization emits exactly the shapes upstream peers read.
//!
//! This crate deliberately depends on nothing but serde, `ip_network` (the address classes of
//! network policies), flate2 (shipped log batches) and hmac/sha2/hex (flight records' secret
//! digests), so the admin can use it without pulling in the executor's runtime (wasmtime,
//! process control).
#![forbid(unsafe_code)]

pub mod admin_api;
pub mod dial;
pub mod enums;
pub mod envelope;
pub mod executor_api;
pub mod flight;
mod lenient;
pub mod log_ship;
pub mod net_policy;
pub mod request;

pub use admin_api::{CallbackBody, HandleCallbackParam, MAX_WORKFLOW_OUTPUT, RegistryParam};
pub use enums::{BlockStrategy, GlueType, HandleCode, REGISTRY_GROUP_EXECUTOR};
pub use envelope::Envelope;
pub use executor_api::{
    EXACTLY_ONCE, ExecutorStatus, IdleBeatParam, KillParam, LogParam, LogResult, OutstandingQuery,
    OutstandingRuns, TriggerParam, WasmGrant, WasmModuleRef,
};
pub use flight::{FlightGrant, ReplayReply, ReplayRequest};
pub use request::{AdminRequest, AdminRequestError, ExecutorRequest, ExecutorRequestError};

/// Header carrying the shared access token on every admin↔executor request.
pub const ACCESS_TOKEN_HEADER: &str = "XXL-JOB-ACCESS-TOKEN";

/// Header naming the caller's or callee's AppName (Gen C, xxl-job 3.5): sent with a group's own
/// access token, which is checked against that AppName's group.
pub const APPNAME_HEADER: &str = "XXL-JOB-APPNAME";

/// Response header of a jobwheel executor's `/run` reply (value `1`): it also takes
/// `/runBatch`. A header, not a reply field, so upstream's reply body stays byte for byte.
pub const RUN_BATCH_HEADER: &str = "X-Jobwheel-Run-Batch";

/// Seconds between executor registry heartbeats (upstream `BEAT_TIMEOUT`).
pub const BEAT_TIMEOUT_SECS: u64 = 30;

/// Seconds after which the admin considers an executor dead (upstream `DEAD_TIMEOUT`).
pub const DEAD_TIMEOUT_SECS: u64 = BEAT_TIMEOUT_SECS * 3;
