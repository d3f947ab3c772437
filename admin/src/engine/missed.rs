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

use super::i18n::texts;
use crate::lang::MessageLang;
use crate::metrics::AdminMetrics;
use crate::store::{JobId, JobRow, MissedFire};

/// Describes missed-fire rows; the pre-read and claim recovery each have one. The row goes in
/// with the transaction that skips (a crash between the two would lose the alarm), and so has
/// no retries to schedule: a missed fire is reported, never retried — retrying would be the
/// `FIRE_ONCE_NOW` the job's owner did not choose.
#[derive(Clone)]
pub(crate) struct MissedFires {
    metrics: Arc<AdminMetrics>,
    lang: MessageLang,
}

impl MissedFires {
    pub(crate) fn new(metrics: Arc<AdminMetrics>, lang: MessageLang) -> Self {
        Self { metrics, lang }
    }

    /// The missed-fire row for `job` skipping `count` fire time(s), the first due at
    /// `missed_ms`, seen at `now_ms`. The caller stores it in the transaction that skips.
    pub(crate) fn row(&self, job: &JobRow, missed_ms: i64, count: usize, now_ms: i64) -> MissedFire {
        let late_s = (now_ms - missed_ms).max(0) / 1000;
        let trigger_msg = texts(self.lang)
            .missed_fire
            .replace("{count}", &count.to_string())
            .replace("{late}", &late_s.to_string())
            .replace("{strategy}", job.job.misfire_strategy.as_str());
        MissedFire {
            job_group: job.job.job_group,
            job_id: job.id,
            trigger_time: super::fire::to_datetime(missed_ms),
            trigger_msg,
            executor_handler: job.job.executor_handler.clone(),
            executor_param: job.job.executor_param.clone(),
        }
    }

    /// Counts and logs a skip once its row is committed.
    pub(crate) fn recorded(&self, job_id: JobId, count: usize) {
        self.metrics.misfire("DO_NOTHING", count);
        tracing::warn!(job_id = job_id.0, count, "missed fire recorded");
    }
}
