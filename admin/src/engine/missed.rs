//! Missed fires made visible (jobwheel; upstream only writes a warning on the admin): a trigger
//! that the misfire strategy skips — `DO_NOTHING` in the pre-read, or claim recovery discarding
//! the late claims of a stopped admin — becomes a log row of its own: trigger code 500, trigger
//! time the missed fire time, a message saying how late and why, no retries left. The fail
//! monitor then raises the job's alarm (mail, webhook) for that row exactly once, as for any
//! failed trigger: its `alarm_status` claim decides which admin sends it.
//!
//! A skip is one row however many fire times it covers (a job stopped for an hour is one
//! missed-fire alarm, not 3 600). `FIRE_ONCE_NOW` fires instead of skipping and records nothing
//! extra; its late run is in the log list already, marked as a misfire trigger.

use std::sync::Arc;

use super::EngineError;
use super::i18n::texts;
use crate::lang::MessageLang;
use crate::metrics::AdminMetrics;
use crate::store::{JobRow, LogId, LogTriggerUpdate, NewLog, Store};
use jobwheel_protocol::envelope::FAIL_CODE;

/// Writes missed-fire rows; the pre-read and claim recovery each have one.
#[derive(Clone)]
pub(crate) struct MissedFires {
    store: Arc<dyn Store>,
    metrics: Arc<AdminMetrics>,
    lang: MessageLang,
}

impl MissedFires {
    pub(crate) fn new(store: Arc<dyn Store>, metrics: Arc<AdminMetrics>, lang: MessageLang) -> Self {
        Self { store, metrics, lang }
    }

    /// Records that `job` skipped `count` fire time(s), the first due at `missed_ms`, seen at
    /// `now_ms`; the new log row.
    pub(crate) async fn record(
        &self,
        job: &JobRow,
        missed_ms: i64,
        count: usize,
        now_ms: i64,
    ) -> Result<LogId, EngineError> {
        self.metrics.misfire("DO_NOTHING", count);
        let trigger_time = super::trigger::to_datetime(missed_ms);
        let log_id = self
            .store
            .insert_log(&NewLog { job_group: job.job.job_group, job_id: job.id, trigger_time })
            .await?;
        let t = texts(self.lang);
        let late_s = (now_ms - missed_ms).max(0) / 1000;
        let msg = t
            .missed_fire
            .replace("{count}", &count.to_string())
            .replace("{late}", &late_s.to_string())
            .replace("{strategy}", job.job.misfire_strategy.as_str());
        let update = LogTriggerUpdate {
            log_id,
            trigger_time,
            trigger_code: FAIL_CODE,
            trigger_msg: Some(msg),
            executor_address: None,
            executor_handler: job.job.executor_handler.clone(),
            executor_param: job.job.executor_param.clone(),
            executor_sharding_param: None,
            // A missed fire is reported, never retried: retrying would be the FIRE_ONCE_NOW
            // the job's owner did not choose.
            executor_fail_retry_count: 0,
        };
        self.store.update_log_trigger(&update).await?;
        tracing::warn!(job_id = job.id.0, log_id = log_id.0, count, late_s, "missed fire recorded");
        Ok(log_id)
    }
}
