//! Results of runs (upstream `JobCompleteHelper` and `XxlJobCompleter`, docs/upstream.md
//! §5.6): executor callbacks, the lost-job monitor and manual kills all store a handle result
//! under the repeat guard and then "complete" the log — trigger child jobs on success, write
//! the final message, and reschedule a FIX_DELAY job.
//!
//! [`Completion`] owns that: it triggers child jobs through the trigger path and unparks
//! FIX_DELAY jobs; `restarts.rs` closes the runs an executor restarted on its address lost.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jobwheel_protocol::HandleCallbackParam;
use jobwheel_protocol::envelope::{FAIL_CODE as FAIL, SUCCESS_CODE as SUCCESS};
use tokio_util::task::TaskTracker;

use super::EngineError;
use super::clients::ExecutorClients;
use super::config::{EngineConfig, EngineServices};
use super::fire::{TriggerRequest, to_datetime};
use super::fix_delay::FixDelay;
use super::i18n::{separator, texts};
use super::next_times::FIX_DELAY_PARKED;
use super::trigger::TriggerPath;
use super::workflows::Workflows;
use crate::clock::Clock;
use crate::domain::TriggerType;
use crate::lang::MessageLang;
use crate::metrics::AdminMetrics;
use crate::store::{HandleOutcome, HandleResult, JobFollowUp, JobId, LogId, Store, StoredResult};

/// Upstream: a running log older than this whose executor is no longer registered is lost.
pub const LOST_AFTER_MS: i64 = 10 * 60 * 1000;

/// Stores runs' results and completes their logs; the lost-job monitor's pass.
pub struct Completion {
    pub(super) store: Arc<dyn Store>,
    /// Child jobs are triggered here; callbacks wait for its sends (`sending.rs`).
    triggers: Arc<TriggerPath>,
    pub(super) clients: Arc<ExecutorClients>,
    fix_delay: Arc<FixDelay>,
    /// Told of every stored result: a workflow node's advances its instance.
    workflows: Arc<Workflows>,
    /// Where `executor_restarted` runs its check in the background.
    pub(super) tracker: TaskTracker,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) metrics: Arc<AdminMetrics>,
    pub(super) lang: MessageLang,
    max_defer: Duration,
    lost_after: Duration,
}

impl Completion {
    pub(super) fn new(
        triggers: Arc<TriggerPath>,
        (fix_delay, workflows): (Arc<FixDelay>, Arc<Workflows>),
        config: &EngineConfig,
        services: &EngineServices,
        tracker: TaskTracker,
    ) -> Self {
        Self {
            store: Arc::clone(&triggers.store),
            clients: Arc::clone(&triggers.clients),
            triggers,
            fix_delay,
            workflows,
            tracker,
            clock: Arc::clone(&services.clock),
            metrics: Arc::clone(&services.metrics),
            lang: config.lang,
            max_defer: config.max_defer,
            lost_after: config.lost_after,
        }
    }

    /// Applies executor callbacks: each result is stored unless the log already has one
    /// (upstream "log repeate callback.", only logged), then the log is completed. The batch
    /// is stored in one go (one transaction where the backend supports it).
    ///
    /// `Ok` once the results are committed; errors are storage failures, and the caller then
    /// answers the executor with a failure so it spools and retries the batch (repeats are
    /// harmless). Completion failures (child triggers, FIX_DELAY) are logged, not returned:
    /// the results are stored, and a resent batch would be ignored as a repeat anyway.
    pub async fn on_callbacks(&self, items: Vec<HandleCallbackParam>) -> Result<(), EngineError> {
        let handle_time = to_datetime(self.clock.now_ms());
        // Workflow outputs go first: an instance advanced on a stored result must find its
        // output. Only node runs on jobwheel executors carry one, so most batches skip this.
        let outputs: Vec<(LogId, &str)> =
            items.iter().filter_map(|i| Some((LogId(i.log_id), i.output.as_deref()?))).collect();
        self.store.store_outputs(&outputs).await?;
        self.store_flights(&items).await?;
        let results: Vec<HandleResult> = items
            .into_iter()
            .map(|item| HandleResult {
                log_id: LogId(item.log_id),
                handle_time,
                handle_code: item.handle_code,
                handle_msg: Some(item.handle_msg),
            })
            .collect();
        // The executor waits for this answer; triggers on their way out go first (`sending.rs`).
        self.triggers.sends().wait_quiet(self.max_defer).await;
        let outcomes = self.store.apply_handle_results(&results).await?;
        crate::fault::pass(crate::fault::FaultPoint::Outcome);
        let mut applied = Vec::with_capacity(outcomes.len());
        for (result, outcome) in results.iter().zip(outcomes) {
            match outcome {
                HandleOutcome::Applied(stored) => {
                    self.metrics.result_stored(stored.handle_code);
                    applied.push(stored);
                }
                HandleOutcome::NotFound => tracing::warn!(log_id = result.log_id.0, "log item not found."),
                HandleOutcome::Repeated => tracing::debug!(log_id = result.log_id.0, "log repeate callback."),
            }
        }
        self.complete_all(applied).await;
        Ok(())
    }

    /// Seals and stores the flight records of recorded Wasm runs (docs/replay.md) beside their
    /// logs, before the results: a resent batch stores a record again, never loses it. Without
    /// a secret key there is nothing to seal them with; the engine asks for none then.
    async fn store_flights(&self, items: &[HandleCallbackParam]) -> Result<(), EngineError> {
        let Some(seal) = self.triggers.secrets.as_deref() else { return Ok(()) };
        let logs: Vec<LogId> = items.iter().filter(|i| i.flight.is_some()).map(|i| LogId(i.log_id)).collect();
        if logs.is_empty() {
            return Ok(());
        }
        let owners = self.store.log_owners(&logs).await?;
        let rows = crate::replay::flight_rows(items, &owners, seal);
        self.metrics.flights_stored(rows.iter().map(|r| r.body.len()));
        self.store.put_flights(&rows).await?;
        Ok(())
    }

    /// Stores one result under the repeat guard and completes the log; false if the log was
    /// missing or already had a result.
    pub(crate) async fn apply_and_complete(&self, result: HandleResult) -> Result<bool, EngineError> {
        match self.store.apply_handle_result(&result).await? {
            HandleOutcome::Applied(stored) => {
                self.metrics.result_stored(stored.handle_code);
                let job = self.store.follow_ups(&[stored.job_id]).await?.pop();
                self.workflows.on_results(vec![stored.id]);
                self.complete(stored, job.as_ref()).await?;
                Ok(true)
            }
            HandleOutcome::NotFound => {
                tracing::warn!(log_id = result.log_id.0, "log item not found.");
                Ok(false)
            }
            HandleOutcome::Repeated => {
                tracing::debug!(log_id = result.log_id.0, "log repeate callback.");
                Ok(false)
            }
        }
    }

    /// Completes logs whose results were just stored, reading what their jobs need in one
    /// query. Every failure is logged here; the results themselves are stored either way.
    async fn complete_all(&self, logs: Vec<StoredResult>) {
        if logs.is_empty() {
            return;
        }
        self.workflows.on_results(logs.iter().map(|log| log.id).collect());
        let mut ids: Vec<JobId> = logs.iter().map(|log| log.job_id).collect();
        ids.sort_unstable_by_key(|id| id.0);
        ids.dedup();
        let jobs: HashMap<JobId, JobFollowUp> = match self.store.follow_ups(&ids).await {
            Ok(jobs) => jobs.into_iter().map(|job| (job.id, job)).collect(),
            Err(error) => {
                tracing::error!(%error, count = logs.len(), "results stored, but their jobs cannot be read to complete them");
                return;
            }
        };
        for log in logs {
            let log_id = log.id;
            let job = jobs.get(&log.job_id);
            if let Err(e) = self.complete(log, job).await {
                tracing::error!(log_id = log_id.0, error = %e, "completing the log failed");
            }
        }
    }

    /// Upstream `XxlJobCompleter.complete`, for a log whose result was just stored: child jobs
    /// on success (their report appended to the message), then FIX_DELAY rescheduling.
    async fn complete(&self, log: StoredResult, job: Option<&JobFollowUp>) -> Result<(), EngineError> {
        if log.handle_code == SUCCESS
            && let Some(children) = job.and_then(|j| j.child_jobid.as_deref())
            && !children.trim().is_empty()
        {
            let report = self.trigger_children(log.job_id, children);
            let completed = HandleResult {
                log_id: log.id,
                handle_time: log.handle_time,
                handle_code: log.handle_code,
                handle_msg: Some(format!("{}{report}", log.handle_msg)),
            };
            self.store.complete_log(&completed).await?;
        }
        if job.is_some_and(|j| j.trigger_next_time == FIX_DELAY_PARKED) {
            self.fix_delay.unpark(log.job_id, self.clock.now_ms()).await?;
        }
        Ok(())
    }

    fn trigger_children(&self, parent: JobId, children: &str) -> String {
        let t = texts(self.lang);
        let mut msg = separator(t.child_run);
        let ids: Vec<&str> = children.split(',').collect();
        let total = ids.len();
        for (position, raw) in ids.iter().enumerate() {
            let child = raw.trim().parse::<i32>().ok().filter(|id| *id > 0);
            let line = match child {
                // Upstream ≥ 2.5.0 skips a job listed as its own child, without a message.
                Some(id) if id == parent.0 => {
                    tracing::info!(job_id = id, "child job is the job itself, skipped");
                    continue;
                }
                Some(id) => {
                    // Asynchronous, so upstream always reports success with a null message.
                    self.triggers.submit(TriggerRequest::new(JobId(id), TriggerType::Parent));
                    t.child_msg_ok.replace("{result}", t.success).replace("{msg}", "null")
                }
                None => t.child_msg_bad_id.to_owned(),
            };
            msg.push_str(
                &line
                    .replace("{i}", &(position + 1).to_string())
                    .replace("{n}", &total.to_string())
                    .replace("{id}", raw),
            );
        }
        msg
    }

    /// The lost-job monitor's pass: running logs older than 10 min whose executor address is
    /// not registered any more are failed with upstream's "job result lost" and completed.
    /// Returns the logs it failed.
    pub async fn mark_lost_jobs(&self, now_ms: i64) -> Result<Vec<LogId>, EngineError> {
        let lost_after = i64::try_from(self.lost_after.as_millis()).unwrap_or(LOST_AFTER_MS);
        let before = to_datetime(now_ms - lost_after);
        let t = texts(self.lang);
        // Upstream's lost runs, then (jobwheel) triggers that never got an executor's answer
        // because their admin stopped in between: both would otherwise stay open forever.
        let lost = self.store.lost_log_ids(before).await?.into_iter().map(|id| (id, t.lost_fail));
        let stalled = self.store.stalled_log_ids(before).await?.into_iter().map(|id| (id, t.trigger_stalled));
        let mut marked = Vec::new();
        for (log_id, note) in lost.chain(stalled).collect::<Vec<_>>() {
            let result = HandleResult {
                log_id,
                handle_time: to_datetime(now_ms),
                handle_code: FAIL,
                handle_msg: Some(note.to_owned()),
            };
            if self.apply_and_complete(result).await? {
                tracing::warn!(log_id = log_id.0, note, "job result lost, marked as failure");
                marked.push(log_id);
            }
        }
        self.metrics.lost(marked.len());
        Ok(marked)
    }

    /// Manual kill (upstream `/joblog/logKill`): only for a log whose trigger succeeded;
    /// POSTs `/kill` to its executor, and on 200 fails the log with upstream's "killed by
    /// operator" text and completes it. Returns the executor's message.
    pub async fn kill(&self, log_id: LogId) -> Result<Option<String>, EngineError> {
        let log = self.store.load_log(log_id).await?.ok_or(EngineError::LogNotFound(log_id))?;
        let t = texts(self.lang);
        let address = match (&log.executor_address, log.trigger_code) {
            (Some(address), SUCCESS) => address.clone(),
            _ => return Err(EngineError::Refused(t.kill_refused.to_owned())),
        };
        let reply = self.clients.for_group(log.job_group).await.kill(&address, log.job_id.0).await;
        if reply.code != SUCCESS {
            return Err(EngineError::Executor { code: reply.code, msg: reply.msg });
        }
        let result = HandleResult {
            log_id,
            handle_time: to_datetime(self.clock.now_ms()),
            handle_code: FAIL,
            handle_msg: Some(format!("{}:{}", t.killed_by_man, reply.msg.as_deref().unwrap_or(""))),
        };
        self.apply_and_complete(result).await?;
        Ok(reply.msg)
    }
}
