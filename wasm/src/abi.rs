//! Names shared with guests: the documented ABI in `docs/guest-abi.md`, as constants.
//!
//! The names a guest reads or writes are defined once, in the dependency-free guest SDK, and
//! re-exported here so host and guest cannot drift apart; the two below are host-only.

pub use jobwheel_guest_sdk::abi::{
    ARGV0, ENV_FIRE_KEY, ENV_JOB_ID, ENV_LOG_ID, ENV_PARAM, ENV_SCHEDULED_TIME, ENV_SHARD_INDEX,
    ENV_SHARD_TOTAL, ENV_WORKFLOW_CONTEXT, ENV_WORKFLOW_ITEM, MAX_OUTPUT_BYTES, OUTPUT_MARKER, RESULT_MARKER,
};

/// Exported function every job module must provide: the WASI command entry point.
pub const ENTRY_EXPORT: &str = "_start";

/// Prefix of lines the runtime itself writes into the job log (truncation notes and the like),
/// so readers can tell them from guest output (defined with the flight records that skip them).
pub use jobwheel_protocol::flight::HOST_NOTE_PREFIX;

/// Whether `name` is one of the variables the runtime itself sets (the job's own variables
/// cannot replace them, so a guest can trust `JOBWHEEL_*`).
pub fn is_reserved_env(name: &str) -> bool {
    name.starts_with("JOBWHEEL_")
}
