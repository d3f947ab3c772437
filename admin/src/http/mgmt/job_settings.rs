//! [`JobSettings`]: the fields a user sets on a job, typed, in the API's names — the one shape
//! the job's read view (`JobView`), its add/edit form (`JobInput`) and its export entry
//! (`JobEntry`) flatten into themselves.
//!
//! The stored job (`store::Job`) is the source: [`JobSettings::of`] reads the settings off a
//! stored row and [`JobSettings::apply`] writes them back, so a new setting is one field here,
//! its line in each of those two functions, and its column in the store. Strategies and types
//! are [`Named`] values: a read shows whatever is stored, and an input's name is judged by the
//! form's `check`, which refuses an unknown one (and a known one that is not allowed).

use serde::{Deserialize, Serialize};

use super::job_retry::RetryForm;
use crate::domain::{BlockStrategy, ExecutorRouteStrategy, GlueType, MisfireStrategy, Named, ScheduleType};
use crate::store::{Job, JobRow};

/// What a user sets on a job (upstream's `XxlJobInfo` names), plus its time zone and retry
/// backoff.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobSettings {
    /// xxl-job 3.5's job OpenAPI calls it `name`.
    #[serde(default, alias = "name")]
    pub(crate) job_desc: String,
    #[serde(default)]
    pub(crate) author: Option<String>,
    #[serde(default)]
    pub(crate) alarm_email: Option<String>,
    #[serde(default = "unnamed")]
    pub(crate) schedule_type: Named<ScheduleType>,
    #[serde(default)]
    pub(crate) schedule_conf: Option<String>,
    /// jobwheel: the job's IANA zone (none: the admin's). Null in the job list.
    #[serde(default)]
    pub(crate) time_zone: Option<String>,
    #[serde(default = "default_misfire")]
    pub(crate) misfire_strategy: Named<MisfireStrategy>,
    #[serde(default = "default_route")]
    pub(crate) executor_route_strategy: Option<Named<ExecutorRouteStrategy>>,
    #[serde(default)]
    pub(crate) executor_handler: Option<String>,
    #[serde(default)]
    pub(crate) executor_param: Option<String>,
    #[serde(default = "default_block")]
    pub(crate) executor_block_strategy: Option<Named<BlockStrategy>>,
    #[serde(default)]
    pub(crate) executor_timeout: i32,
    #[serde(default)]
    pub(crate) executor_fail_retry_count: i32,
    /// jobwheel: the retry backoff; absent or null uses the admin's `--retry-backoff*`. Only
    /// single-job reads fill it (null in the list).
    #[serde(flatten)]
    pub(crate) retry: RetryForm,
    #[serde(default = "unnamed")]
    pub(crate) glue_type: Named<GlueType>,
    #[serde(default)]
    pub(crate) glue_remark: Option<String>,
}

/// A required name left out: the form's check refuses it in its words ("required" is not
/// serde's "missing field").
fn unnamed<T>() -> Named<T> {
    Named::Unknown(String::new())
}
fn default_misfire() -> Named<MisfireStrategy> {
    MisfireStrategy::DoNothing.into()
}
fn default_route() -> Option<Named<ExecutorRouteStrategy>> {
    Some(ExecutorRouteStrategy::First.into())
}
fn default_block() -> Option<Named<BlockStrategy>> {
    Some(BlockStrategy::SerialExecution.into())
}

/// A text field as stored: trimmed, and absent when empty.
pub(crate) fn trimmed(value: Option<&str>) -> Option<String> {
    value.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned)
}

impl JobSettings {
    /// The settings of a stored job. The retry backoff is kept in its own table and left at
    /// "the admin's" here; single-job reads and exports fill it in.
    pub(crate) fn of(row: &JobRow) -> Self {
        let j = &row.job;
        Self {
            job_desc: j.job_desc.clone(),
            author: j.author.clone(),
            alarm_email: j.alarm_email.clone(),
            schedule_type: j.schedule_type.clone(),
            schedule_conf: j.schedule_conf.clone(),
            time_zone: row.time_zone.clone(),
            misfire_strategy: j.misfire_strategy.clone(),
            executor_route_strategy: j.executor_route_strategy.clone(),
            executor_handler: j.executor_handler.clone(),
            executor_param: j.executor_param.clone(),
            executor_block_strategy: j.executor_block_strategy.clone(),
            executor_timeout: j.executor_timeout,
            executor_fail_retry_count: j.executor_fail_retry_count,
            retry: RetryForm::default(),
            glue_type: j.glue_type.clone(),
            glue_remark: j.glue_remark.clone(),
        }
    }

    /// Keeps `current`'s jobwheel settings, for a client that cannot say them (xxl-job 3.5's
    /// job OpenAPI): its zone and its retry backoff (`retry`, read from its table).
    pub(crate) fn keep_jobwheel_settings(&mut self, current: &JobRow, retry: RetryForm) {
        self.time_zone.clone_from(&current.time_zone);
        self.retry = retry;
    }

    /// Writes checked settings into the job's columns, normalized as upstream stores them.
    /// The GLUE type and remark, the group, trigger state and times are the caller's; the
    /// zone and the backoff live in their own tables.
    pub(crate) fn apply(&self, schedule_type: ScheduleType, job: &mut Job) {
        job.job_desc = self.job_desc.trim().to_owned();
        job.author = trimmed(self.author.as_deref());
        job.alarm_email = trimmed(self.alarm_email.as_deref());
        job.schedule_type = schedule_type.into();
        job.schedule_conf =
            if schedule_type == ScheduleType::None { None } else { trimmed(self.schedule_conf.as_deref()) };
        job.misfire_strategy = self.misfire_strategy.clone();
        job.executor_route_strategy =
            Some(self.executor_route_strategy.clone().unwrap_or(ExecutorRouteStrategy::First.into()));
        job.executor_handler = trimmed(self.executor_handler.as_deref());
        job.executor_param = self.executor_param.clone().filter(|p| !p.is_empty());
        job.executor_block_strategy =
            Some(self.executor_block_strategy.clone().unwrap_or(BlockStrategy::SerialExecution.into()));
        job.executor_timeout = self.executor_timeout;
        job.executor_fail_retry_count = self.executor_fail_retry_count;
    }
}
