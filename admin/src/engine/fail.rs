//! The fail monitor (upstream `JobFailMonitorHelper`, docs/upstream.md §5.5): every failed
//! log is taken once (`alarm_status` 0 → −1, so only one admin handles it), retried while it
//! has retries left, and alarmed on the alarm desk; its `alarm_status` then records whether the
//! alarm counted as sent (`AlarmOutcome::counted_as_sent`).
//!
//! jobwheel extension: the retry backoff (the job's own `retryBackoff*`, else the admin's
//! `--retry-backoff*`): fixed, or doubling per attempt up to a ceiling, with optional jitter
//! (`store::RetryBackoff`). A failed log that has retries left and whose wait has not passed is
//! parked at once (`alarm_status` 0 → −2, a `jobwheel_retry_due` row at its due time, one
//! transaction), so the scan of new failures never meets it again; each pass then reads only
//! the parked logs whose due time has come, through an index on it. Waiting failures, however
//! many, never delay a new one. The wait lives in the database, so it survives an admin
//! restart, and the due time (jitter included) is drawn once, by the admin that parks the log.
//! A log without retries left is alarmed at once: there is nothing to wait for.

use std::sync::Arc;

use super::EngineError;
use super::alarm_desk::{AlarmDesk, classify};
use super::fire::TriggerRequest;
use super::i18n::{separator, texts};
use super::trigger::TriggerPath;
use crate::alarm::{Alarm, JobEvent};
use crate::domain::TriggerType;
use crate::lang::MessageLang;
use crate::metrics::AdminMetrics;
use crate::store::{BackoffStrategy, LogId, LogRow, LogTriggerUpdate, RetryBackoff, Store};

/// Upstream's batch size of `findFailJobLogIds`.
pub const FAIL_BATCH: u32 = 1000;

/// `alarm_status` values written after handling (upstream).
mod alarm_status {
    /// The job no longer exists: no alarm needed.
    pub(super) const NOT_NEEDED: i16 = 1;
    /// The alarm counted as sent.
    pub(super) const SENT: i16 = 2;
    /// It did not: a channel refused it, or none is configured.
    pub(super) const FAILED: i16 = 3;
}

/// What the fail monitor did with one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailHandled {
    /// The failed log.
    pub log_id: LogId,
    /// Whether a retry was triggered.
    pub retried: bool,
    /// The `alarm_status` written (1, 2 or 3).
    pub alarm_status: i16,
}

/// The fail monitor: retries through the trigger path, alarms on the alarm desk.
pub struct FailMonitor {
    store: Arc<dyn Store>,
    triggers: Arc<TriggerPath>,
    desk: Arc<AlarmDesk>,
    /// The admin's `--retry-backoff*`, for jobs without their own.
    retry_backoff: RetryBackoff,
    metrics: Arc<AdminMetrics>,
    lang: MessageLang,
}

impl FailMonitor {
    pub(super) fn new(
        triggers: Arc<TriggerPath>,
        desk: Arc<AlarmDesk>,
        retry_backoff: RetryBackoff,
        lang: MessageLang,
    ) -> Self {
        Self {
            store: Arc::clone(&triggers.store),
            metrics: Arc::clone(&triggers.metrics),
            triggers,
            desk,
            retry_backoff,
            lang,
        }
    }

    /// One fail monitor pass at `now_ms`: new failures (handled, or parked until their retry is
    /// due), then the parked ones that are due.
    pub async fn handle_failures(&self, now_ms: i64) -> Result<Vec<FailHandled>, EngineError> {
        let mut handled = Vec::new();
        for log_id in self.store.failed_log_ids(FAIL_BATCH).await? {
            // Read once: a failed log's trigger and result no longer change, only its
            // `alarm_status`, which the claims below decide on in the database.
            let Some(log) = self.store.load_log(log_id).await? else { continue };
            let due_ms = self.retry_due_ms(&log).await?;
            if due_ms > now_ms {
                if self.store.defer_failure(log_id, due_ms).await? {
                    tracing::debug!(
                        log_id = log_id.0,
                        wait_ms = due_ms - now_ms,
                        "failed log waits for its retry"
                    );
                }
                continue;
            }
            if !self.store.claim_alarm(log_id).await? {
                continue; // another admin took it
            }
            handled.push(self.handle_failure(log, now_ms).await?);
        }
        for log_id in self.store.due_failure_ids(now_ms, FAIL_BATCH).await? {
            if !self.store.claim_due_failure(log_id).await? {
                continue; // another admin took it, or the log was deleted
            }
            match self.store.load_log(log_id).await? {
                Some(log) => handled.push(self.handle_failure(log, now_ms).await?),
                None => continue,
            }
        }
        Ok(handled)
    }

    /// When the log's retry is due, epoch ms: its result (or trigger, if it never ran) time plus
    /// the backoff of this attempt. Attempt `n` is the job's `n`-th retry, counted from the
    /// retries the log has left. A log without retries left is due at once.
    async fn retry_due_ms(&self, log: &LogRow) -> Result<i64, EngineError> {
        if log.executor_fail_retry_count <= 0 {
            return Ok(i64::MIN);
        }
        let backoff = self.store.job_retry_backoff(log.job_id).await?.unwrap_or(self.retry_backoff);
        if backoff.base_secs == 0 {
            return Ok(i64::MIN);
        }
        let attempt = match backoff.strategy {
            BackoffStrategy::Fixed => 0,
            BackoffStrategy::Exponential => {
                let configured =
                    self.store.load_job(log.job_id).await?.map_or(0, |j| j.job.executor_fail_retry_count);
                u32::try_from(configured.saturating_sub(log.executor_fail_retry_count)).unwrap_or(0)
            }
        };
        let since = log.handle_time.or(log.trigger_time).map_or(0, |t| t.timestamp_millis());
        Ok(since.saturating_add(backoff.wait_ms(attempt, rand::random::<f64>())))
    }

    async fn handle_failure(&self, log: LogRow, now_ms: i64) -> Result<FailHandled, EngineError> {
        let job = self.store.load_job(log.job_id).await?;
        let retried = log.executor_fail_retry_count > 0;
        if retried {
            self.triggers.submit(TriggerRequest {
                fail_retry_count: Some(log.executor_fail_retry_count - 1),
                sharding_param: log.executor_sharding_param.clone(),
                executor_param: log.executor_param.clone(),
                ..TriggerRequest::new(log.job_id, TriggerType::Retry)
            });
            let trigger_msg = format!(
                "{}{}",
                log.trigger_msg.as_deref().unwrap_or("null"),
                separator(texts(self.lang).retry_run)
            );
            self.store
                .update_log_trigger(&LogTriggerUpdate {
                    log_id: log.id,
                    trigger_time: log.trigger_time.unwrap_or_default(),
                    trigger_code: log.trigger_code,
                    trigger_msg: Some(trigger_msg),
                    executor_address: log.executor_address.clone(),
                    executor_handler: log.executor_handler.clone(),
                    executor_param: log.executor_param.clone(),
                    executor_sharding_param: log.executor_sharding_param.clone(),
                    executor_fail_retry_count: log.executor_fail_retry_count,
                })
                .await?;
        }
        let status = match job {
            Some(job) => {
                let group = self.store.load_group(job.job.job_group).await?;
                let alarm = Alarm::Job {
                    kind: classify(&log),
                    event: JobEvent { job, group, log: log.clone() },
                    retrying: retried,
                    within_secs: None,
                };
                let delivered = self.desk.alarm(&alarm, now_ms).await?.counted_as_sent();
                self.metrics.alarm(delivered);
                if delivered { alarm_status::SENT } else { alarm_status::FAILED }
            }
            None => alarm_status::NOT_NEEDED,
        };
        self.store.finish_alarm(log.id, status).await?;
        tracing::info!(
            log_id = log.id.0,
            job_id = log.job_id.0,
            retried,
            alarm_status = status,
            "failed log handled"
        );
        Ok(FailHandled { log_id: log.id, retried, alarm_status: status })
    }
}
