//! The flight recorder (docs/replay.md): a run's journal holds its inputs and the answer of
//! every nondeterministic host call it made — wall and monotonic clock reads, secure and
//! insecure random bytes, the insecure seed — so the same module can be run again with every
//! such call answered from the journal and come out the same, byte for byte.
//!
//! Recording wraps the clocks and generators a run's WASI context is built with; each answer is
//! appended to one shared tape as the guest asks. Replaying hands the guest the tape's answers
//! in the same order; a call past the tape (a changed module asking for more) gets a fixed
//! answer — the last clock reading, zero bytes — and is listed in the replay's report as a call
//! the journal could not answer. Secrets are recorded by name and a keyed digest, never by value.

mod http;
mod readiness;
mod summary;
mod tape;

use std::sync::Arc;

pub use jobwheel_protocol::flight::{EnvEntry, secret_digest};
use serde::{Deserialize, Serialize};

use crate::run::RunInput;
pub use http::{HttpAnswer, HttpExchange, WireError};
pub(crate) use http::{RecordingBody, ReplayBody, decode_fields};
pub(crate) use readiness::{Journaled, add_to_linker};
pub use summary::{FlightRecord, GuestLines, summarize};
use tape::{Player, Tape, fresh_seed};

/// The journal format this runtime writes. Format 2 added readiness (`polls`), response body
/// reads (`reads`) and trailers; a format-1 journal still replays, its polls and reads made
/// as a fresh run's would be.
pub const JOURNAL_VERSION: u32 = 2;
/// The oldest journal format this runtime replays.
pub const OLDEST_JOURNAL_VERSION: u32 = 1;

/// One run's recorded inputs and host-call answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// [`JOURNAL_VERSION`] of the runtime that wrote it.
    pub version: u32,
    /// What the guest was given.
    pub inputs: JournalInputs,
    // Empty parts are left out of the JSON: a record is kept for every run.
    /// Wall-clock reads, nanoseconds since the epoch, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wall: Vec<u64>,
    /// Monotonic-clock reads, nanoseconds, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub monotonic: Vec<u64>,
    /// Bytes handed out by the secure generator, in order.
    #[serde(default, with = "hex_bytes", skip_serializing_if = "Vec::is_empty")]
    pub random: Vec<u8>,
    /// Bytes handed out by the insecure generator, in order.
    #[serde(default, with = "hex_bytes", skip_serializing_if = "Vec::is_empty")]
    pub insecure: Vec<u8>,
    /// `wasi:random/insecure-seed`'s answer, hex.
    pub insecure_seed: String,
    /// Every outbound HTTP request, in order, with its answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<HttpExchange>,
    /// Which pollables each `wasi:io/poll.poll` call (and each `pollable.ready`, as a poll of
    /// one) found ready, in order: the indices it answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub polls: Vec<Vec<u32>>,
    /// What each read of a response body's stream gave, in order: its byte count (0 when
    /// nothing had arrived yet), or -1 for the stream's end (closed or failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<i64>,
    /// Why the run cannot be replayed exactly, when it cannot (a host call that is not
    /// recorded yet, a journal past its cap); `None` when it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_replayable: Option<String>,
}

/// The inputs of a recorded run, as the guest saw them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalInputs {
    /// The job id.
    pub job_id: i32,
    /// The original run's log id.
    pub log_id: i64,
    /// The job parameter.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub param: String,
    /// Shard index and total.
    pub shard: (i32, i32),
    /// The original fire's key.
    pub fire_key: String,
    /// The original fire's scheduled time, epoch ms.
    pub scheduled_time: i64,
    /// The workflow context, when the run was a workflow node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_context: Option<String>,
    /// The map item, when the run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow_item: Option<String>,
    /// The job's variables and secrets, in the order they were set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvEntry>,
    /// The job's fuel budget, when it set one (a replay runs under the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
    /// The job's memory limit in bytes, when it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_bytes: Option<u64>,
}

/// A run's recorder in action, from its [`Flight`]: the tape it writes, the journal it plays,
/// or neither. The WASI context's clocks and generators and the HTTP hooks share it.
#[derive(Clone)]
pub(crate) enum Recorder {
    Off,
    Record(Tape),
    Replay(Player),
}

impl Recorder {
    /// The recorder `input.flight` asks for, its clocks and generators installed in `wasi`.
    pub(crate) fn start(input: &RunInput, wasi: &mut wasmtime_wasi::WasiCtxBuilder) -> Recorder {
        match &input.flight {
            Flight::Off => Recorder::Off,
            Flight::Record { secret_key, max_body_bytes } => {
                let tape = Tape::new(JournalInputs::of(input, secret_key), fresh_seed(), *max_body_bytes);
                tape.install(wasi);
                Recorder::Record(tape)
            }
            Flight::Replay(journal) => {
                let player = Player::new(Arc::clone(journal));
                player.install(wasi);
                Recorder::Replay(player)
            }
        }
    }

    /// Whether the run is a replay (which reaches no network).
    pub(crate) fn is_replay(&self) -> bool {
        matches!(self, Recorder::Replay(_))
    }

    /// What the run's report says of it, once the run is over.
    pub(crate) fn report(&self) -> Option<FlightReport> {
        match self {
            Recorder::Off => None,
            Recorder::Record(tape) => Some(FlightReport::Recorded(Box::new(tape.journal()))),
            Recorder::Replay(player) => Some(FlightReport::Replayed { unanswered: player.unanswered() }),
        }
    }
}

/// Whether and how a run is journaled ([`crate::RunInput::flight`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Flight {
    /// Not journaled.
    #[default]
    Off,
    /// Recorded; secrets' digests are keyed with `secret_key`.
    Record {
        /// The digest key (the executor's own, never stored in a journal).
        secret_key: Vec<u8>,
        /// The most response-body bytes the journal keeps; a run whose responses bring more
        /// is marked not replayable, with the reason.
        max_body_bytes: u64,
    },
    /// Replayed: every nondeterministic call is answered from the journal, and the network is
    /// off.
    Replay(Arc<Journal>),
}

/// What the flight recorder made of a run ([`crate::RunReport::flight`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlightReport {
    /// The run's journal.
    Recorded(Box<Journal>),
    /// A replay: the calls the journal could not answer (empty when it answered all).
    Replayed {
        /// One line per kind of call past the journal, e.g. "wall clock: 2 reads past the 3 recorded".
        unanswered: Vec<String>,
    },
}

impl JournalInputs {
    /// The inputs of `input` as a journal holds them: the variables whose value is masked (the
    /// secrets) by their digest under `key`.
    pub(crate) fn of(input: &RunInput, key: &[u8]) -> JournalInputs {
        let env = input
            .env
            .iter()
            .map(|(name, value)| match input.masked.contains(value) {
                true => EnvEntry::Secret { name: name.clone(), digest: secret_digest(key, value) },
                false => EnvEntry::Plain { name: name.clone(), value: value.clone() },
            })
            .collect();
        JournalInputs {
            job_id: input.job_id,
            log_id: input.log_id,
            param: input.param.clone(),
            shard: (input.shard_index, input.shard_total),
            fire_key: input.fire_key.clone(),
            scheduled_time: input.scheduled_time,
            workflow_context: input.workflow_context.clone(),
            workflow_item: input.workflow_item.clone(),
            env,
            fuel: input.fuel,
            max_memory_bytes: input.max_memory_bytes.map(|m| u64::try_from(m).unwrap_or(u64::MAX)),
        }
    }
}

impl Journal {
    /// A journal of the run `log_id` of `job_id` that holds nothing else (what is kept of a
    /// journal past its cap).
    pub fn empty(job_id: i32, log_id: i64) -> Journal {
        Journal {
            version: JOURNAL_VERSION,
            inputs: JournalInputs {
                job_id,
                log_id,
                param: String::new(),
                shard: (0, 1),
                fire_key: String::new(),
                scheduled_time: 0,
                workflow_context: None,
                workflow_item: None,
                env: Vec::new(),
                fuel: None,
                max_memory_bytes: None,
            },
            wall: Vec::new(),
            monotonic: Vec::new(),
            random: Vec::new(),
            insecure: Vec::new(),
            insecure_seed: "0".to_owned(),
            http: Vec::new(),
            polls: Vec::new(),
            reads: Vec::new(),
            not_replayable: None,
        }
    }

    /// Whether it recorded readiness and body reads (format 2 on); a format-1 journal's replay
    /// polls and reads as a fresh run would.
    pub(crate) fn scripts_readiness(&self) -> bool {
        self.version >= 2
    }

    /// The names of the secrets the run used (a replay must be given each again).
    pub fn secret_names(&self) -> Vec<&str> {
        self.inputs
            .env
            .iter()
            .filter_map(|entry| match entry {
                EnvEntry::Secret { name, .. } => Some(name.as_str()),
                EnvEntry::Plain { .. } => None,
            })
            .collect()
    }

    /// The input that replays this journal: the original's inputs, each secret's value taken
    /// from `secrets` (name, value) only when its digest under `key` is still the recorded one.
    /// Refused with the reason when the journal is not replayable, was written by another
    /// format, or a secret is missing or changed; the refusal names the secret, never a value.
    pub fn replay_input(
        self: &Arc<Self>,
        key: &[u8],
        secrets: &[(String, String)],
    ) -> Result<RunInput, String> {
        if !(OLDEST_JOURNAL_VERSION..=JOURNAL_VERSION).contains(&self.version) {
            return Err(format!(
                "journal format {} is not one this runtime replays ({OLDEST_JOURNAL_VERSION} to {JOURNAL_VERSION})",
                self.version
            ));
        }
        if let Some(why) = &self.not_replayable {
            return Err(format!("the run is not replayable: {why}"));
        }
        u128::from_str_radix(&self.insecure_seed, 16)
            .map_err(|e| format!("the journal's seed is not hex: {e}"))?;
        let inputs = &self.inputs;
        let mut env = Vec::with_capacity(inputs.env.len());
        let mut masked = Vec::new();
        for entry in &inputs.env {
            match entry {
                EnvEntry::Plain { name, value } => env.push((name.clone(), value.clone())),
                EnvEntry::Secret { name, digest } => {
                    let value = secrets
                        .iter()
                        .find(|(given, _)| given == name)
                        .map(|(_, value)| value)
                        .ok_or_else(|| format!("the secret {name} the run used is gone"))?;
                    if secret_digest(key, value) != *digest {
                        return Err(format!(
                            "the secret {name} changed since the run (its digest differs); not opened"
                        ));
                    }
                    env.push((name.clone(), value.clone()));
                    masked.push(value.clone());
                }
            }
        }
        Ok(RunInput {
            job_id: inputs.job_id,
            log_id: inputs.log_id,
            param: inputs.param.clone(),
            shard_index: inputs.shard.0,
            shard_total: inputs.shard.1,
            timeout: None,
            env,
            masked,
            network: None,
            fuel: inputs.fuel,
            max_memory_bytes: inputs.max_memory_bytes.map(|m| usize::try_from(m).unwrap_or(usize::MAX)),
            workflow_context: inputs.workflow_context.clone(),
            workflow_item: inputs.workflow_item.clone(),
            fire_key: inputs.fire_key.clone(),
            scheduled_time: inputs.scheduled_time,
            flight: Flight::Replay(Arc::clone(self)),
        })
    }
}

/// Byte strings as hex in the journal's JSON.
mod hex_bytes {
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        hex::decode(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
