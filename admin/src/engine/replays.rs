//! Replaying a recorded Wasm run (docs/replay.md, `POST /api/v1/logs/{id}/replay`): the run's
//! flight record is opened, the secrets it used are checked against their recorded digests
//! here — a changed one is refused before anything leaves the admin — and the record goes to
//! an executor of the job's group (`/replay`), which runs the module with every host call
//! answered from the journal. What it produced is compared with what the original did.
//!
//! A replay is not a fire: no log row, no trigger, no callback, so no run history, child job,
//! workflow step or alarm can come of it.

use std::time::Duration;

use jobwheel_protocol::flight::{ReplayRequest, RunSummary, secret_digest};
use serde::Serialize;

use super::grant::wasm_grant;
use super::shard::module_ref;
use super::{Engine, EngineError};
use crate::replay::{Comparison, guest_lines, open_record};
use crate::store::LogId;

/// How long a replay may run when the job sets no `executorTimeout`.
const DEFAULT_REPLAY_RUN: Duration = Duration::from_secs(60);
/// The longest a replay may run.
const MAX_REPLAY_RUN: Duration = Duration::from_secs(600);
/// What an executor is given on top of the run's time to fetch and compile the module (a
/// 15–19 MB Python or JavaScript component compiles for tens of seconds on a small box).
const LOAD_ALLOWANCE: Duration = Duration::from_secs(300);
/// The most log lines read from the original's log to find the first difference.
const ORIGINAL_LINES_READ: usize = 20_000;

/// The result of a replay.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplayOutcome {
    /// The original run.
    pub log_id: i64,
    /// The module replayed (the original's, or the version asked for).
    pub module: String,
    /// Whether that is the module the original ran.
    pub same_module: bool,
    /// The executor that ran the replay.
    pub executor: String,
    /// What the original produced.
    pub original: RunSummary,
    /// What the replay produced.
    pub replay: RunSummary,
    /// How they compare.
    pub comparison: Comparison,
    /// The host calls the journal could not answer (a changed module asking for more).
    pub unanswered: Vec<String>,
    /// Why the original's log could not be read to find the first differing line, if it could not.
    pub original_log: Option<String>,
}

/// The most recorded runs one what-if replays.
pub const MAX_WHAT_IF_RUNS: u32 = 50;

/// One row of a what-if: a recorded run replayed against the version, or why it was not.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WhatIfRow {
    /// The recorded run.
    pub log_id: i64,
    /// When it was triggered, epoch ms.
    pub trigger_time: i64,
    /// The replay against the version, when there was one.
    pub replay: Option<ReplayOutcome>,
    /// Why the run was not replayed (not replayable, a changed secret, no executor).
    pub error: Option<String>,
}

impl Engine {
    /// Replays the job's last `runs` recorded runs, newest first, against its module version
    /// `version` (docs/replay.md, "What-if"), one after another.
    pub async fn what_if(
        &self,
        job: crate::store::JobId,
        version: i64,
        runs: u32,
    ) -> Result<Vec<WhatIfRow>, EngineError> {
        let versions = self.store.list_wasm_versions(job).await?;
        if !versions.iter().any(|v| v.id == version) {
            return Err(EngineError::Refused(format!("job {} has no module version {version}", job.0)));
        }
        let mut rows = Vec::new();
        for (log_id, trigger_time) in self.store.job_flights(job, runs.clamp(1, MAX_WHAT_IF_RUNS)).await? {
            let (replay, error) = match self.replay(log_id, Some(version)).await {
                Ok(outcome) => (Some(outcome), None),
                Err(EngineError::Store(e)) => return Err(EngineError::Store(e)),
                Err(e) => (None, Some(e.to_string())),
            };
            rows.push(WhatIfRow { log_id: log_id.0, trigger_time, replay, error });
        }
        Ok(rows)
    }

    /// Replays the recorded run `log_id` with its own module, or with the job's module version
    /// `version` (a what-if replay).
    pub async fn replay(&self, log_id: LogId, version: Option<i64>) -> Result<ReplayOutcome, EngineError> {
        let Some(seal) = self.triggers.secrets.as_deref() else {
            return Err(EngineError::Refused(
                "this admin has no secret key, so it records no runs and replays none (docs/replay.md)"
                    .to_owned(),
            ));
        };
        let log = self.store.load_log(log_id).await?.ok_or(EngineError::LogNotFound(log_id))?;
        let row = self.store.flight(log_id).await?.ok_or_else(|| {
            EngineError::Refused(format!(
                "log {log_id} has no flight record: only GLUE_WASM runs of jobs that record them (the default) \
                 and that ended are recorded"
            ))
        })?;
        if !row.replayable {
            let why = row.reason.as_deref().unwrap_or("no reason recorded");
            return Err(EngineError::Refused(format!("log {log_id} cannot be replayed: {why}")));
        }
        let (record, json) = open_record(&row, seal).map_err(EngineError::Refused)?;
        let job = self.store.load_job(log.job_id).await?.ok_or(EngineError::JobNotFound(log.job_id))?;
        let digest = match version {
            None => record.module.clone(),
            Some(version) => {
                let versions = self.store.list_wasm_versions(job.id).await?;
                let found = versions.into_iter().find(|v| v.id == version);
                found.map(|v| v.digest).ok_or_else(|| {
                    EngineError::Refused(format!("job {} has no module version {version}", job.id.0))
                })?
            }
        };
        let module = module_ref(&*self.store, &digest).await?.ok_or_else(|| {
            EngineError::Refused(format!("the module {digest} is no longer stored on this admin"))
        })?;
        // The secrets the run used, as the job would get them now; each must still digest to
        // what the run recorded, or it is not opened for the replay.
        let key = seal.journal_digest_key(job.id);
        let grant = wasm_grant(&*self.store, Some(seal), &job).await?.map_err(EngineError::Refused)?;
        let current = grant.map(|g| g.secrets).unwrap_or_default();
        let mut secrets = std::collections::BTreeMap::new();
        for (name, digest) in record.secrets() {
            let value = current.get(name).ok_or_else(|| {
                EngineError::Refused(format!(
                    "the secret {name} the run used is gone; the run cannot be replayed"
                ))
            })?;
            if secret_digest(&key, value) != digest {
                return Err(EngineError::Refused(format!(
                    "the secret {name} changed since the run (its digest differs); it is not opened for a replay"
                )));
            }
            secrets.insert(name.to_owned(), value.clone());
        }
        let run = u64::try_from(job.job.executor_timeout)
            .ok()
            .filter(|s| *s > 0)
            .map_or(DEFAULT_REPLAY_RUN, Duration::from_secs)
            .min(MAX_REPLAY_RUN);
        let request = ReplayRequest {
            module,
            record: json,
            digest_key: hex::encode(key),
            secrets,
            timeout_ms: u64::try_from(run.as_millis()).unwrap_or(u64::MAX),
        };
        let (executor, reply) =
            self.replay_somewhere(&job, log.executor_address.as_deref(), &request, run).await?;
        let replay: RunSummary = serde_json::from_value(reply.summary).map_err(|e| {
            EngineError::Executor { code: 500, msg: Some(format!("unreadable replay summary: {e}")) }
        })?;
        let (original_lines, original_log) = match self.original_lines(log_id).await {
            Ok(lines) => (Some(lines), None),
            Err(why) => (None, Some(why)),
        };
        let comparison = Comparison::of(&record.summary, &replay, original_lines.as_deref(), &reply.lines);
        tracing::info!(
            log_id = log_id.0,
            executor,
            identical = comparison.identical,
            "replayed a recorded run"
        );
        Ok(ReplayOutcome {
            log_id: log_id.0,
            same_module: request.module.digest == record.module,
            module: request.module.digest,
            executor,
            original: record.summary,
            replay,
            comparison,
            unanswered: reply.unanswered,
            original_log,
        })
    }

    /// Sends `request` to the executors of `job`'s group, the one that ran the original first,
    /// until one replays it.
    async fn replay_somewhere(
        &self,
        job: &crate::store::JobRow,
        ran_on: Option<&str>,
        request: &ReplayRequest,
        run: Duration,
    ) -> Result<(String, jobwheel_protocol::ReplayReply), EngineError> {
        let group = self.store.load_group(job.job.job_group).await?;
        let listed = group.and_then(|g| g.group.address_list).unwrap_or_default();
        let mut addresses: Vec<&str> = listed.split(',').map(str::trim).filter(|a| !a.is_empty()).collect();
        if let Some(at) = ran_on.and_then(|ran| addresses.iter().position(|a| *a == ran)) {
            addresses[..=at].rotate_right(1);
        }
        if addresses.is_empty() {
            return Err(EngineError::Refused(format!(
                "executor group {} has no executor online to replay the run on",
                job.job.job_group.0
            )));
        }
        let client = self.clients.for_group(job.job.job_group).await;
        let mut refusals = Vec::new();
        for address in addresses {
            match client.replay(address, request, run + LOAD_ALLOWANCE).await {
                Ok(reply) => return Ok((address.to_owned(), reply)),
                Err(msg) => refusals.push(format!("{address}: {msg}")),
            }
        }
        Err(EngineError::Executor {
            code: 500,
            msg: Some(format!("no executor replayed the run: {}", refusals.join("; "))),
        })
    }

    /// The guest lines of the original run's log, read whole (bounded).
    async fn original_lines(&self, log_id: LogId) -> Result<Vec<String>, String> {
        let mut text = String::new();
        let mut from = 1;
        loop {
            let page = self.read_log(log_id, from).await.map_err(|e| e.to_string())?;
            text.push_str(&page.log_content);
            if page.to_line_num < from || page.is_end || text.lines().count() >= ORIGINAL_LINES_READ {
                break;
            }
            from = page.to_line_num + 1;
        }
        Ok(guest_lines(&text))
    }
}
