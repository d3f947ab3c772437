//! The fail monitor (upstream `JobFailMonitorHelper`, upstream-xxl-job.md §5.5): every failed
//! log is taken once (`alarm_status` 0 → −1, so only one admin handles it), retried while it
//! has retries left, and alarmed; its `alarm_status` then records the alarm's outcome.
//!
//! jobwheel extension: with a non-zero retry backoff (the job's own `retryBackoff`, else the
//! admin's `retry_backoff`), a failed log is left untouched until that long after its result
//! (or trigger) time. The wait lives in the database — the log
//! simply stays `alarm_status = 0` — so it survives an admin restart.

use std::sync::Arc;

use super::i18n::{TriggerType, separator, texts};
use super::trigger::TriggerRequest;
use super::{Engine, EngineError};
use crate::alarm::AlarmEvent;
use crate::store::{LogId, LogRow, LogTriggerUpdate};

/// Upstream's batch size of `findFailJobLogIds`.
pub const FAIL_BATCH: u32 = 1000;

/// `alarm_status` values written after handling (upstream).
mod alarm_status {
    /// The job no longer exists: no alarm needed.
    pub(super) const NOT_NEEDED: i16 = 1;
    /// Every channel delivered.
    pub(super) const SENT: i16 = 2;
    /// A channel failed (or none is configured).
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

impl Engine {
    /// One fail monitor pass at `now_ms`.
    pub async fn handle_failures(self: &Arc<Self>, now_ms: i64) -> Result<Vec<FailHandled>, EngineError> {
        let mut handled = Vec::new();
        for log_id in self.store.failed_log_ids(FAIL_BATCH).await? {
            // Read once: a failed log's trigger and result no longer change, only its
            // `alarm_status`, which the claim below decides on in the database.
            let Some(log) = self.store.load_log(log_id).await? else { continue };
            if !self.backoff_over(&log, now_ms).await? {
                continue;
            }
            if !self.store.claim_alarm(log_id).await? {
                continue; // another admin took it
            }
            handled.push(self.handle_failure(log).await?);
        }
        Ok(handled)
    }

    /// Whether the job's retry backoff (its own, else `retry_backoff`) has passed since the
    /// log's result (or trigger, if it never ran).
    async fn backoff_over(&self, log: &LogRow, now_ms: i64) -> Result<bool, EngineError> {
        let backoff_ms = match self.store.job_retry_backoff(log.job_id).await? {
            Some(secs) => i64::from(secs) * 1000,
            None => i64::try_from(self.config.retry_backoff.as_millis()).unwrap_or(i64::MAX),
        };
        if backoff_ms == 0 {
            return Ok(true);
        }
        let since = log.handle_time.or(log.trigger_time).map_or(0, |t| t.timestamp_millis());
        Ok(now_ms.saturating_sub(since) >= backoff_ms)
    }

    async fn handle_failure(self: &Arc<Self>, log: LogRow) -> Result<FailHandled, EngineError> {
        let job = self.store.load_job(log.job_id).await?;
        let retried = log.executor_fail_retry_count > 0;
        if retried {
            self.submit_trigger(TriggerRequest {
                fail_retry_count: Some(log.executor_fail_retry_count - 1),
                sharding_param: log.executor_sharding_param.clone(),
                executor_param: log.executor_param.clone(),
                ..TriggerRequest::new(log.job_id, TriggerType::Retry)
            });
            let trigger_msg = format!(
                "{}{}",
                log.trigger_msg.as_deref().unwrap_or("null"),
                separator(texts(self.config.lang).retry_run)
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
                let event = AlarmEvent { job, group, log: log.clone() };
                let delivered = self.alarmer.alarm(&event).await;
                self.config.metrics.alarm(delivered);
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
