//! The jobwheel guest ABI names (see `docs/guest-abi.md`), for jobs that want to read the
//! environment themselves. The host runtime (`jobwheel_wasm::abi`) re-exports these, so host
//! and guest share one definition.

/// `argv[0]` the runtime passes; `argv[1]` is the job parameter.
pub const ARGV0: &str = "jobwheel-job";
/// Environment variable holding the job parameter, possibly empty.
pub const ENV_PARAM: &str = "JOBWHEEL_PARAM";
/// Environment variable holding the job id (decimal `i32`).
pub const ENV_JOB_ID: &str = "JOBWHEEL_JOB_ID";
/// Environment variable holding the log (run) id (decimal `i64`).
pub const ENV_LOG_ID: &str = "JOBWHEEL_LOG_ID";
/// Environment variable holding the 0-based shard index (decimal `i32`).
pub const ENV_SHARD_INDEX: &str = "JOBWHEEL_SHARD_INDEX";
/// Environment variable holding the shard total, at least 1 (decimal `i32`).
pub const ENV_SHARD_TOTAL: &str = "JOBWHEEL_SHARD_TOTAL";
/// Environment variable holding the fire's key: the same when the same fire is delivered
/// again, different for a retry or a manual run (`job:<id>@<ms>[#i/n]`, `node:…`, `log:<id>`).
pub const ENV_FIRE_KEY: &str = "JOBWHEEL_FIRE_KEY";
/// Environment variable holding when the fire was scheduled for (decimal epoch ms `i64`).
pub const ENV_SCHEDULED_TIME: &str = "JOBWHEEL_SCHEDULED_TIME";
/// Prefix of a stdout/stderr line that sets (appends a line to) the run's result message.
pub const RESULT_MARKER: &str = "::jobwheel-result::";
/// Environment variable holding the workflow instance's context (a JSON object) when the run
/// is a workflow node; absent otherwise.
pub const ENV_WORKFLOW_CONTEXT: &str = "JOBWHEEL_WORKFLOW_CONTEXT";
/// Environment variable holding the item (JSON) when the run is one item of a workflow map
/// node; absent otherwise (an item's run gets no context).
pub const ENV_WORKFLOW_ITEM: &str = "JOBWHEEL_WORKFLOW_ITEM";
/// Prefix of a stdout/stderr line carrying (a piece of) the run's workflow output: the pieces
/// of every such line are concatenated, in order, without separators.
pub const OUTPUT_MARKER: &str = "::jobwheel-output::";
/// The largest workflow output a run may produce, in bytes.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
