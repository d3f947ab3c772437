//! Request and response bodies of the executor API (`/run`, `/idleBeat`, `/kill`, `/log`).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::lenient;

/// Paths of the executor API, relative to the executor's base address.
pub mod paths {
    pub const BEAT: &str = "/beat";
    pub const IDLE_BEAT: &str = "/idleBeat";
    pub const RUN: &str = "/run";
    /// Gen C's (xxl-job 3.5) name for [`RUN`].
    pub const TRIGGER: &str = "/trigger";
    pub const KILL: &str = "/kill";
    pub const LOG: &str = "/log";
    /// jobwheel extension: "compile this module now", sent by a jobwheel admin after an upload
    /// so the first trigger does not pay a cold compile. Body: a `WasmModuleRef`.
    pub const WASM_PREPARE: &str = "/wasmPrepare";
    /// jobwheel extension: what the executor is doing — run slots and job queues — for the
    /// admin's executor page. No body; the answer's payload is an [`ExecutorStatus`](super::ExecutorStatus).
    pub const STATUS: &str = "/status";
    /// jobwheel extension: "which of these runs do you still owe a result for?" Body: an
    /// [`OutstandingQuery`](super::OutstandingQuery); the payload an
    /// [`OutstandingRuns`](super::OutstandingRuns). Sent by an admin after a restart of the
    /// executor on the same address (a new `incarnation` in its registry beat).
    pub const OUTSTANDING: &str = "/outstanding";
    /// jobwheel extension: several triggers in one request. Body: a JSON array of
    /// [`TriggerParam`](super::TriggerParam); the reply a JSON array of `{code, msg}`
    /// envelopes, one per trigger in order, each what `/run` would have answered. Offered by
    /// an executor through [`RUN_BATCH_HEADER`](crate::RUN_BATCH_HEADER) on its `/run` replies.
    pub const RUN_BATCH: &str = "/runBatch";
    /// jobwheel extension: run a recorded Wasm run again from its journal. Body: a
    /// [`ReplayRequest`](crate::flight::ReplayRequest); the payload a
    /// [`ReplayReply`](crate::flight::ReplayReply). No job thread, log file or callback.
    pub const REPLAY: &str = "/replay";
}

/// Body of `/outstanding` (jobwheel only): log ids an admin has as running on this executor.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutstandingQuery {
    #[serde(default)]
    pub log_ids: Vec<i64>,
}

/// Payload of `/outstanding` (jobwheel only).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutstandingRuns {
    /// The answering process's incarnation (as in its registry beats).
    #[serde(default)]
    pub incarnation: String,
    /// Those of the asked log ids this process accepted and has not had a result of stored by
    /// an admin: queued, running, or finished with the result still journaled or spooled
    /// (results a killed predecessor journaled included). Every other asked id is unknown here.
    #[serde(default)]
    pub log_ids: Vec<i64>,
}

/// The payload of `/status` (jobwheel only).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutorStatus {
    /// Job threads executing a run now.
    #[serde(default)]
    pub running: usize,
    /// Triggers accepted and not started yet, over all jobs (including runs waiting for a slot).
    #[serde(default)]
    pub queued: usize,
    /// `--max-concurrent-runs`, if set.
    #[serde(default)]
    pub cap: Option<usize>,
    /// Runs waiting for a slot under the cap.
    #[serde(default)]
    pub waiting_for_slot: usize,
    /// `false` when the executor runs BEAN handlers only (`--glue-enabled=false`, xxl-job 3.5's
    /// `glueenabled`); an executor that does not say runs GLUE.
    #[serde(default = "glue_enabled_by_default")]
    pub glue_enabled: bool,
}

fn glue_enabled_by_default() -> bool {
    true
}

/// Body of `POST /run` (upstream `TriggerParam`, 3.x `TriggerRequest`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TriggerParam {
    #[serde(default, deserialize_with = "lenient::int")]
    pub job_id: i32,
    /// BEAN handler name.
    #[serde(default, deserialize_with = "lenient::string")]
    pub executor_handler: String,
    /// The job parameter (plural on the wire; the DB column is `executor_param`).
    #[serde(default, deserialize_with = "lenient::string")]
    pub executor_params: String,
    #[serde(default, deserialize_with = "lenient::string")]
    pub executor_block_strategy: String,
    /// Seconds; > 0 enables the timeout.
    #[serde(default, deserialize_with = "lenient::int")]
    pub executor_timeout: i32,
    #[serde(default, deserialize_with = "lenient::int")]
    pub log_id: i64,
    /// Epoch milliseconds of the log's trigger time; picks the log file's date directory.
    #[serde(default, deserialize_with = "lenient::int")]
    pub log_date_time: i64,
    #[serde(default, deserialize_with = "lenient::string")]
    pub glue_type: String,
    #[serde(default, deserialize_with = "lenient::string")]
    pub glue_source: String,
    /// Epoch milliseconds of the last GLUE change; the only key for reloading GLUE code.
    #[serde(default, deserialize_with = "lenient::int")]
    pub glue_updatetime: i64,
    #[serde(default, deserialize_with = "lenient::int")]
    pub broadcast_index: i32,
    #[serde(default, deserialize_with = "lenient::int")]
    pub broadcast_total: i32,
    /// jobwheel extension for `GLUE_WASM`: which module to run and where to fetch it.
    /// Absent for every other glue type, so upstream peers never see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm_module: Option<WasmModuleRef>,
    /// jobwheel extension for `GLUE_WASM`: what the job is granted beyond computing (network
    /// policy, variables, secrets, limits). Absent when the job has no grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm_grant: Option<WasmGrant>,
    /// jobwheel extension: the job's priority, `HIGH` or `LOW` (absent: normal). An executor
    /// with `--max-concurrent-runs` starts waiting runs highest priority first; upstream
    /// executors ignore the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
    /// jobwheel extension: the context of the workflow instance this run is a node of (a JSON
    /// object: the start input and each finished node's output under its name). Absent for a
    /// run that is not a workflow node; upstream executors ignore the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_context: Option<serde_json::Value>,
    /// jobwheel extension: the item a map node's run is for (one element of the array the node
    /// maps over, as JSON). Absent for any other run; upstream executors ignore the field (the
    /// item is their `executorParams` when the node sets no parameter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_item: Option<serde_json::Value>,
    /// jobwheel extension: the fire's key, fixed by what was scheduled (docs/engine.md, "The
    /// per-fire key"): the same when the same fire is sent again, different for a retry, a
    /// manual run or any other fire of its own. Upstream executors ignore the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fire_key: Option<String>,
    /// jobwheel extension: the time the fire was scheduled for (epoch ms) — the scheduled
    /// second of a schedule's fire, the trigger time of any other. Upstream executors ignore
    /// the field (their `logDateTime` is the same time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_time: Option<i64>,
    /// jobwheel extension: [`EXACTLY_ONCE`] asks a jobwheel executor to run `fire_key` at most
    /// once, however often it is sent (its fire journal); absent is upstream's at most once per
    /// send. Upstream executors ignore the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_mode: Option<String>,
}

/// `TriggerParam::delivery_mode` of a fire the executor must run at most once per key.
pub const EXACTLY_ONCE: &str = "EXACTLY_ONCE";

/// A Wasm job's grants as the admin sends them with each trigger. The executor enforces them;
/// its own flags cap every limit and its allow-list bounds every policy.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmGrant {
    /// Network policy entries (see [`crate::net_policy`]); empty = no network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_allow: Vec<String>,
    /// Requests per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_max_requests: Option<u32>,
    /// Response body bytes per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_max_response_bytes: Option<u64>,
    /// Cap on each wait of one request, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_timeout_ms: Option<u64>,
    /// Variables (group's merged with the job's, the job's winning), as environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vars: BTreeMap<String, String>,
    /// Secret values, decrypted by the admin for this trigger only; environment variables too,
    /// masked in the job log. Never printed by `Debug`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, String>,
    /// Fuel budget of a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// Memory limit of a run in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Record the run's journal (docs/replay.md); absent: not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flight: Option<crate::flight::FlightGrant>,
}

impl fmt::Debug for WasmGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Triggers are logged at debug level; secret values must not be.
        let secrets: Vec<&str> = self.secrets.keys().map(String::as_str).collect();
        f.debug_struct("WasmGrant")
            .field("http_allow", &self.http_allow)
            .field("http_max_requests", &self.http_max_requests)
            .field("http_max_response_bytes", &self.http_max_response_bytes)
            .field("http_timeout_ms", &self.http_timeout_ms)
            .field("vars", &self.vars)
            .field("secrets (names only)", &secrets)
            .field("fuel", &self.fuel)
            .field("memory_bytes", &self.memory_bytes)
            .field("flight", &self.flight)
            .finish()
    }
}

/// Where an executor fetches a `GLUE_WASM` module: the admin serves the bytes at `url` to
/// requests carrying the access token, and the executor checks them against `digest`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmModuleRef {
    /// Lower-case hex SHA-256 of the module bytes.
    pub digest: String,
    /// Absolute URL of the module bytes.
    pub url: String,
    /// Size of the module in bytes (lets the executor refuse oversized downloads early).
    #[serde(default)]
    pub size: u64,
}

/// Body of `POST /idleBeat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleBeatParam {
    #[serde(default, deserialize_with = "lenient::int")]
    pub job_id: i32,
}

/// Body of `POST /kill`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KillParam {
    #[serde(default, deserialize_with = "lenient::int")]
    pub job_id: i32,
}

/// Body of `POST /log`. Gen A/B spell the date field `logDateTim`, Gen C `logDateTime`; both are
/// accepted (folded into `log_date_tim` on decoding) and `logDateTim` is what we send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "LogParamWire")]
pub struct LogParam {
    #[serde(rename = "logDateTim")]
    pub log_date_tim: i64,
    pub log_id: i64,
    pub from_line_num: i32,
}

impl LogParam {
    pub fn new(log_date_tim: i64, log_id: i64, from_line_num: i32) -> Self {
        Self { log_date_tim, log_id, from_line_num }
    }

    /// The log's trigger time, from whichever spelling the peer used.
    pub fn log_date_time(&self) -> i64 {
        self.log_date_tim
    }
}

/// `LogParam` as received: either spelling of the date, decoded leniently.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogParamWire {
    #[serde(rename = "logDateTim", default, deserialize_with = "lenient::int")]
    log_date_tim: i64,
    #[serde(rename = "logDateTime", default, deserialize_with = "lenient::opt_int")]
    log_date_time_gen_c: Option<i64>,
    #[serde(default, deserialize_with = "lenient::int")]
    log_id: i64,
    #[serde(default, deserialize_with = "lenient::int")]
    from_line_num: i32,
}

impl From<LogParamWire> for LogParam {
    fn from(wire: LogParamWire) -> Self {
        let log_date_tim = match wire.log_date_time_gen_c {
            Some(t) if wire.log_date_tim == 0 => t,
            _ => wire.log_date_tim,
        };
        Self { log_date_tim, log_id: wire.log_id, from_line_num: wire.from_line_num }
    }
}

/// Payload of a `/log` reply (upstream `LogResult`). The JSON key is literally `isEnd`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogResult {
    #[serde(default, deserialize_with = "lenient::int")]
    pub from_line_num: i32,
    #[serde(default, deserialize_with = "lenient::int")]
    pub to_line_num: i32,
    #[serde(default, deserialize_with = "lenient::string")]
    pub log_content: String,
    #[serde(rename = "isEnd", default, deserialize_with = "lenient::boolean")]
    pub is_end: bool,
}
