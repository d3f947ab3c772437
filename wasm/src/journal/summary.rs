//! What a replay is compared on: a run's `RunSummary` (`jobwheel_protocol::flight`) — its
//! outcome, fuel, peak memory, and the digest and count of the guest's own log lines and of its
//! workflow output — taken the same way from the original run (kept in its [`FlightRecord`])
//! and from a replay.
//!
//! The runtime's `[jobwheel]` notes are not the guest's output: they carry wall times, and a
//! replay's say "replayed from the journal", so [`GuestLines`] leaves them out.

use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use jobwheel_protocol::flight::{RunSummary, is_host_note};

use super::Journal;
use crate::outcome::{Outcome, RunReport};
use crate::output::LogSink;

/// The summary of `report`, whose guest lines `lines` saw.
pub fn summarize(report: &RunReport, lines: &GuestLines) -> RunSummary {
    let outcome = match &report.outcome {
        Outcome::Succeeded { message: None } => "succeeded".to_owned(),
        Outcome::Succeeded { message: Some(message) } => format!("succeeded: {message}"),
        Outcome::Failed { kind, message } => format!("failed ({kind:?}): {message}"),
        Outcome::TimedOut { .. } => "timed out".to_owned(),
        Outcome::Cancelled => "stopped".to_owned(),
    };
    let (count, digest) = lines.digest();
    RunSummary {
        outcome,
        fuel: report.stats.fuel_used,
        peak_memory_bytes: u64::try_from(report.stats.peak_memory_bytes).unwrap_or(u64::MAX),
        lines: count,
        lines_sha256: digest,
        output_sha256: report.workflow_output.as_deref().map(|o| hex::encode(Sha256::digest(o))),
    }
}

/// A recorded run as it travels to the admin and is stored: the module it ran, what it
/// produced, and its journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlightRecord {
    /// The module's SHA-256 digest, hex.
    pub module: String,
    /// What the run produced.
    pub summary: RunSummary,
    /// Its journal.
    pub journal: Journal,
}

impl FlightRecord {
    /// The record as JSON, or — when that is longer than `cap` bytes — a record whose journal
    /// keeps only the run's ids and says why it cannot be replayed.
    pub fn to_json_capped(&self, cap: usize) -> String {
        // Serializing plain data into a String cannot fail.
        let json = serde_json::to_string(self).unwrap_or_default();
        if json.len() <= cap {
            return json;
        }
        let why = format!("its journal is {} bytes, over the job's cap of {cap} bytes", json.len());
        let mut journal = Journal::empty(self.journal.inputs.job_id, self.journal.inputs.log_id);
        journal.not_replayable = Some(why);
        let stub = FlightRecord { module: self.module.clone(), summary: self.summary.clone(), journal };
        serde_json::to_string(&stub).unwrap_or_default()
    }
}

/// A [`LogSink`] in front of another that counts and digests the guest's lines, and keeps up
/// to a number of them (a replay's, to show where it differs).
pub struct GuestLines {
    next: Arc<dyn LogSink>,
    state: Mutex<LinesState>,
    keep: usize,
}

struct LinesState {
    count: u32,
    hasher: Sha256,
    kept: Vec<String>,
}

impl GuestLines {
    /// Forwards every line to `next`; keeps the first `keep` guest lines.
    pub fn new(next: Arc<dyn LogSink>, keep: usize) -> Arc<GuestLines> {
        let state = LinesState { count: 0, hasher: Sha256::new(), kept: Vec::new() };
        Arc::new(GuestLines { next, state: Mutex::new(state), keep })
    }

    /// How many guest lines passed and their digest, hex.
    pub fn digest(&self) -> (u32, String) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (state.count, hex::encode(state.hasher.clone().finalize()))
    }

    /// The guest lines kept.
    pub fn kept(&self) -> Vec<String> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).kept.clone()
    }
}

impl LogSink for GuestLines {
    fn line(&self, line: &str) {
        if !is_host_note(line) {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.count = state.count.saturating_add(1);
            state.hasher.update(line.as_bytes());
            state.hasher.update(b"\n");
            if state.kept.len() < self.keep {
                state.kept.push(line.to_owned());
            }
        }
        self.next.line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_left_out_and_lines_digested_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let forward = Arc::clone(&seen);
        let next: Arc<dyn LogSink> =
            Arc::new(move |line: &str| forward.lock().unwrap().push(line.to_owned()));
        let lines = GuestLines::new(next, 1);
        for line in ["a", "[jobwheel] fuel used 1", "b"] {
            lines.line(line);
        }
        assert_eq!(seen.lock().unwrap().len(), 3, "every line goes on");
        let (count, digest) = lines.digest();
        assert_eq!(count, 2);
        assert_eq!(digest, hex::encode(Sha256::digest(b"a\nb\n")));
        assert_eq!(lines.kept(), vec!["a".to_owned()]);
    }
}
