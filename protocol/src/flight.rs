//! The flight recorder on the wire (docs/replay.md): what a trigger asks an executor to record
//! ([`FlightGrant`], inside the `wasmGrant`), and the `/replay` call a jobwheel admin makes to
//! run a recorded run again ([`ReplayRequest`] → [`ReplayReply`]). The record itself travels
//! with the run's result, as [`HandleCallbackParam::flight`](crate::HandleCallbackParam::flight).
//!
//! A record is JSON text here: its journal's shape belongs to the Wasm runtime
//! (`jobwheel_wasm::FlightRecord`), which this crate does not depend on. What the admin reads
//! of a record — the module, the run's [`RunSummary`], whether it can be replayed and the
//! secrets it used ([`RecordView`]) — and the secrets' digest are defined here, and the
//! runtime uses the same definitions.

use std::collections::BTreeMap;
use std::fmt;

use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::executor_api::WasmModuleRef;

/// A journal's size cap when the job sets none, bytes of JSON.
pub const DEFAULT_JOURNAL_BYTES: u64 = 256 * 1024;
/// The largest cap a job may set: a record travels in a callback batch, and inside a `/replay`
/// request (whose body an executor takes up to 5 MiB).
pub const MAX_JOURNAL_BYTES: u64 = 2 * 1024 * 1024;
/// The smallest cap a job may set.
pub const MIN_JOURNAL_BYTES: u64 = 256;

/// "Record this run": sent in a `GLUE_WASM` trigger's grant by an admin that keeps journals.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlightGrant {
    /// The key secrets' digests are made with (hex): the job's own, derived by the admin, so
    /// the admin can tell at replay time whether a secret changed without storing its value.
    pub digest_key: String,
    /// The most bytes the record may take; past it the run is marked not replayable.
    pub max_bytes: u64,
}

// The digest key stays out of debug logs.
impl fmt::Debug for FlightGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlightGrant").field("max_bytes", &self.max_bytes).finish_non_exhaustive()
    }
}

/// Body of `POST /replay` (jobwheel only): run `module` with every host call answered from
/// `record`'s journal. Nothing of it reaches the job's history: no log file, no callback.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayRequest {
    /// The module to run: the original's, or a candidate version's (a what-if replay).
    pub module: WasmModuleRef,
    /// The original run's flight record (JSON).
    pub record: String,
    /// The digest key the record was made with (hex).
    pub digest_key: String,
    /// The values of the secrets the run used, opened again by the admin; each is used only if
    /// its digest under `digest_key` is the recorded one.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// How long the replay may run, ms.
    pub timeout_ms: u64,
}

impl fmt::Debug for ReplayRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secrets: Vec<&str> = self.secrets.keys().map(String::as_str).collect();
        f.debug_struct("ReplayRequest")
            .field("module", &self.module)
            .field("record_bytes", &self.record.len())
            .field("secrets (names only)", &secrets)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// The payload of a `/replay` reply.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayReply {
    /// What the replay produced (`jobwheel_wasm::RunSummary`, JSON).
    pub summary: serde_json::Value,
    /// The replay's first guest lines (up to [`REPLAY_LINES_KEPT`]), to show where it differs.
    pub lines: Vec<String>,
    /// The host calls the journal could not answer, one line per kind.
    pub unanswered: Vec<String>,
}

/// The most guest lines a replay sends back.
pub const REPLAY_LINES_KEPT: usize = 2000;

/// Prefix of the lines the Wasm runtime itself writes into a job log (its notes, the stats
/// line), so readers can tell them from guest output.
pub const HOST_NOTE_PREFIX: &str = "[jobwheel]";

/// Whether `line` is one of the runtime's own notes rather than guest output.
pub fn is_host_note(line: &str) -> bool {
    line.starts_with(HOST_NOTE_PREFIX)
}

/// What one run produced, as a replay compares it: taken the same way from the original run
/// (kept in its record) and from a replay.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// How it ended, in words: `succeeded`, `succeeded: <message>`, `failed (<kind>): <message>`,
    /// `timed out`, `stopped`.
    pub outcome: String,
    /// Fuel used.
    pub fuel: u64,
    /// Largest linear memory reached, bytes.
    pub peak_memory_bytes: u64,
    /// The guest's log lines (the runtime's notes left out).
    pub lines: u32,
    /// SHA-256 of those lines, each followed by a newline, hex.
    pub lines_sha256: String,
    /// SHA-256 of the workflow output the guest printed, hex; `None` when it printed none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_sha256: Option<String>,
}

/// One variable of a recorded run: a plain value, or a secret by its keyed digest only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvEntry {
    /// A variable and its value.
    Plain {
        /// Its name.
        name: String,
        /// Its value.
        value: String,
    },
    /// A secret: HMAC-SHA256 of its value under the recorder's key, hex.
    Secret {
        /// Its name.
        name: String,
        /// The keyed digest of its value.
        digest: String,
    },
}

/// The keyed digest a journal holds for a secret's `value`.
pub fn secret_digest(key: &[u8], value: &str) -> String {
    // HMAC takes a key of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as hmac::Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("hmac takes any key"));
    mac.update(value.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// What an admin reads of a flight record; the rest it keeps and forwards as it came.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordView {
    /// The module's SHA-256 digest, hex.
    pub module: String,
    /// What the run produced.
    pub summary: RunSummary,
    /// Of its journal.
    pub journal: JournalView,
}

/// What an admin reads of a journal.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalView {
    /// Why the run cannot be replayed, when it cannot.
    pub not_replayable: Option<String>,
    /// Of its inputs.
    pub inputs: InputsView,
}

/// What an admin reads of a journal's inputs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputsView {
    /// The variables and secrets the run was given.
    #[serde(default)]
    pub env: Vec<EnvEntry>,
}

impl RecordView {
    /// The secrets the run used, by name and digest.
    pub fn secrets(&self) -> impl Iterator<Item = (&str, &str)> {
        self.journal.inputs.env.iter().filter_map(|entry| match entry {
            EnvEntry::Secret { name, digest } => Some((name.as_str(), digest.as_str())),
            EnvEntry::Plain { .. } => None,
        })
    }
}
