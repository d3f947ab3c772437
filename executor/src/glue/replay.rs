//! `POST /replay` (docs/replay.md): a jobwheel admin asks for a recorded Wasm run to be run
//! again from its journal — the original's module or a candidate version's — and gets back
//! what the replay produced, to compare with what the original did.
//!
//! A replay is not a run of the job: no job thread, no log file, no callback, no fire journal
//! entry. Its guest lines go to memory only (the first [`REPLAY_LINES_KEPT`] are sent back),
//! the network is off (every request is answered from the journal), and a secret is handed to
//! the guest only when its digest still matches the recorded one. One replay runs at a time;
//! another is refused at once, so replays never crowd out the executor's real runs.

use std::sync::Arc;
use std::time::Duration;

use jobwheel_protocol::flight::{REPLAY_LINES_KEPT, ReplayReply, ReplayRequest};
use jobwheel_wasm::{FlightRecord, FlightReport, GuestLines, LogSink, summarize};
use tokio_util::sync::CancellationToken;

use super::is_sha256_hex;
use super::wasm::WasmGlue;

/// The longest a replay may run, whatever the admin asks.
const MAX_REPLAY: Duration = Duration::from_secs(600);

impl WasmGlue {
    /// Runs `request`'s module from its journal; `Err` says why it could not be replayed.
    pub(crate) async fn replay(&self, request: ReplayRequest) -> Result<ReplayReply, String> {
        if !is_sha256_hex(&request.module.digest) {
            return Err(format!(
                "invalid module digest {:?}: expected 64 hex characters",
                request.module.digest
            ));
        }
        let Ok(_turn) = self.replays.try_acquire() else {
            return Err("this executor is replaying another run; try again when it is done".to_owned());
        };
        let record: FlightRecord = serde_json::from_str(&request.record)
            .map_err(|e| format!("the flight record cannot be read: {e}"))?;
        let key = hex::decode(&request.digest_key).map_err(|_| "the digest key is not hex".to_owned())?;
        let secrets: Vec<(String, String)> = request.secrets.into_iter().collect();
        let journal = Arc::new(record.journal);
        let mut input = journal.replay_input(&key, &secrets)?;
        input.timeout = Some(Duration::from_millis(request.timeout_ms).min(MAX_REPLAY));
        let load = self
            .runtime
            .module(&request.module.digest, || self.fetch(&request.module))
            .await
            .map_err(|e| format!("cannot load wasm module {}: {e}", request.module.digest))?;
        let discard: Arc<dyn LogSink> = Arc::new(|_: &str| {});
        let lines = GuestLines::new(discard, REPLAY_LINES_KEPT);
        let report = self.runtime.run(&load.module, input, lines.clone(), CancellationToken::new()).await;
        let unanswered = match &report.flight {
            Some(FlightReport::Replayed { unanswered }) => unanswered.clone(),
            _ => Vec::new(),
        };
        let summary = serde_json::to_value(summarize(&report, &lines)).unwrap_or_default();
        tracing::info!(log_id = journal.inputs.log_id, module = %request.module.digest, "replayed a recorded run");
        Ok(ReplayReply { summary, lines: lines.kept(), unanswered })
    }
}
