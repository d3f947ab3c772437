//! Names shared with guests: the documented ABI in `docs/guest-abi.md`, as constants.
//!
//! The guest SDK (`jobwheel-guest-sdk`) repeats these strings because it must not depend on
//! wasmtime; `wasm/tests/abi.rs` checks the two copies agree.

/// Exported function every job module must provide: the WASI command entry point.
pub const ENTRY_EXPORT: &str = "_start";

/// `argv[0]` seen by the guest. `argv[1]` is the job parameter (see [`ENV_PARAM`]).
pub const ARGV0: &str = "jobwheel-job";

/// Environment variable holding the job parameter (`executorParams`), possibly empty.
pub const ENV_PARAM: &str = "JOBWHEEL_PARAM";
/// Environment variable holding the job id as a decimal `i32`.
pub const ENV_JOB_ID: &str = "JOBWHEEL_JOB_ID";
/// Environment variable holding the log (run) id as a decimal `i64`.
pub const ENV_LOG_ID: &str = "JOBWHEEL_LOG_ID";
/// Environment variable holding the shard index (0-based) as a decimal `i32`.
pub const ENV_SHARD_INDEX: &str = "JOBWHEEL_SHARD_INDEX";
/// Environment variable holding the shard total (≥ 1) as a decimal `i32`.
pub const ENV_SHARD_TOTAL: &str = "JOBWHEEL_SHARD_TOTAL";

/// A stdout or stderr line starting with this prefix sets the run's result message instead of
/// being logged. Several marker lines are joined with `\n` (so multi-line messages work).
pub const RESULT_MARKER: &str = "::jobwheel-result::";

/// Prefix of lines the runtime itself writes into the job log (truncation notes and the like),
/// so readers can tell them from guest output.
pub const HOST_NOTE_PREFIX: &str = "[jobwheel]";
