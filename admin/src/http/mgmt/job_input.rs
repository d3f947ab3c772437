//! The job add/edit form (`JobInput`) and upstream's server-side validation of it
//! (`JobServiceImpl.add/update`), each violation a 400 naming the field.

use std::str::FromStr;

use jobwheel_protocol::{BlockStrategy, GlueType};
use serde::Deserialize;

use super::auth::Principal;
use super::job_days::{self, CheckedDays, DaysForm};
use super::job_retry::RetryForm;
use crate::cron::{Schedule, ScheduleType, parse_time_zone};
use crate::engine::MisfireStrategy;
use crate::http::{ApiError, HttpState};
use crate::routing::ExecutorRouteStrategy;
use crate::store::{GroupId, Job, JobId, RetryBackoff};

/// Upstream's form limits (characters).
const DESC_MAX: usize = 50;
const AUTHOR_MAX: usize = 50;
const ALARM_EMAIL_MAX: usize = 100;
const HANDLER_MAX: usize = 100;
pub(crate) const PARAM_MAX: usize = 2048;
const CHILD_IDS_MAX: usize = 100;
const TIMEOUT_MAX: i32 = 999_999;
const RETRY_MAX: i32 = 9_999;
const ZONE_MAX: usize = 64;
/// A GLUE source is stored in a `mediumtext` (16 MiB); a UI edit is far below.
pub(crate) const GLUE_SOURCE_MAX: usize = 1024 * 1024;

/// The add/edit form, in upstream's `XxlJobInfo` property names.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobInput {
    pub(crate) job_group: i32,
    pub(crate) job_desc: String,
    pub(crate) author: String,
    #[serde(default)]
    pub(crate) alarm_email: Option<String>,
    pub(crate) schedule_type: String,
    #[serde(default)]
    pub(crate) schedule_conf: Option<String>,
    #[serde(default)]
    pub(crate) time_zone: Option<String>,
    #[serde(default = "default_misfire")]
    pub(crate) misfire_strategy: String,
    #[serde(default = "default_route")]
    pub(crate) executor_route_strategy: String,
    #[serde(default)]
    pub(crate) executor_handler: Option<String>,
    #[serde(default)]
    pub(crate) executor_param: Option<String>,
    #[serde(default = "default_block")]
    pub(crate) executor_block_strategy: String,
    #[serde(default)]
    pub(crate) executor_timeout: i32,
    #[serde(default)]
    pub(crate) executor_fail_retry_count: i32,
    /// jobwheel extension: the retry backoff; `retryBackoff` absent or null uses the admin's
    /// `--retry-backoff*`.
    #[serde(flatten)]
    pub(crate) retry: RetryForm,
    pub(crate) glue_type: String,
    #[serde(default)]
    pub(crate) glue_source: Option<String>,
    #[serde(default)]
    pub(crate) glue_remark: Option<String>,
    #[serde(default)]
    pub(crate) child_job_id: Option<String>,
    /// jobwheel extension: the job's tags; absent leaves them as they are, `[]` clears them.
    #[serde(default)]
    pub(crate) tags: Option<Vec<String>>,
    /// jobwheel extension: `HIGH`, `NORMAL` or `LOW`; absent leaves it as it is (new jobs:
    /// normal).
    #[serde(default)]
    pub(crate) priority: Option<String>,
    /// jobwheel extension: ids of the calendars the job fires only on; absent keeps them.
    #[serde(default)]
    pub(crate) only_on: Option<Vec<i64>>,
    /// jobwheel extension: ids of the calendars the job never fires on; absent keeps them.
    #[serde(default)]
    pub(crate) never_on: Option<Vec<i64>>,
    /// jobwheel extension: daily `HH:MM-HH:MM` windows without fires; absent keeps them.
    #[serde(default)]
    pub(crate) exclusion_windows: Option<Vec<String>>,
}

fn default_misfire() -> String {
    MisfireStrategy::DoNothing.name().to_owned()
}
fn default_route() -> String {
    ExecutorRouteStrategy::First.name().to_owned()
}
fn default_block() -> String {
    BlockStrategy::SerialExecution.name().to_owned()
}

/// A checked form: the parsed pieces the handlers need.
pub(crate) struct Checked {
    pub(crate) group: GroupId,
    pub(crate) schedule_type: ScheduleType,
    pub(crate) glue_type: GlueType,
    pub(crate) time_zone: Option<String>,
    pub(crate) retry_backoff: Option<RetryBackoff>,
    /// Normalized tags, if the form named any (`None`: leave them).
    pub(crate) tags: Option<Vec<String>>,
    /// The priority to store, if the form named one: `Some(None)` is normal.
    pub(crate) priority: Option<Option<&'static str>>,
    /// Calendars and windows to store, if the form named any.
    pub(crate) days: Option<CheckedDays>,
}

fn bad(field: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("{field}: {rule}"))
}

fn trimmed(value: &Option<String>) -> Option<String> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned)
}

fn max_chars(field: &str, value: Option<&str>, max: usize) -> Result<(), ApiError> {
    match value {
        Some(v) if v.chars().count() > max => Err(bad(field, format!("at most {max} characters"))),
        _ => Ok(()),
    }
}

impl JobInput {
    /// Upstream's checks, in its order, plus the caller's permission on the group and on every
    /// child job. `this` is the job being edited (a job may not be its own child).
    pub(crate) async fn check(
        &self,
        state: &HttpState,
        principal: &Principal,
        this: Option<JobId>,
    ) -> Result<Checked, ApiError> {
        let group = GroupId(self.job_group);
        principal.require_group(group)?;
        if state.store.load_group(group).await?.is_none() {
            return Err(bad("jobGroup", format!("executor group {group} does not exist")));
        }
        if self.job_desc.trim().is_empty() {
            return Err(bad("jobDesc", "required"));
        }
        max_chars("jobDesc", Some(&self.job_desc), DESC_MAX)?;
        if self.author.trim().is_empty() {
            return Err(bad("author", "required"));
        }
        max_chars("author", Some(&self.author), AUTHOR_MAX)?;
        max_chars("alarmEmail", self.alarm_email.as_deref(), ALARM_EMAIL_MAX)?;
        if let Some(emails) = trimmed(&self.alarm_email)
            && let Some(bad_one) =
                emails.split(',').map(str::trim).find(|e| !e.is_empty() && !e.contains('@'))
        {
            return Err(bad("alarmEmail", format!("{bad_one:?} is not a mail address")));
        }

        let schedule_type = ScheduleType::from_str(&self.schedule_type)
            .map_err(|_| bad("scheduleType", "must be NONE, CRON, FIX_RATE or FIX_DELAY"))?;
        if schedule_type != ScheduleType::None {
            let conf = trimmed(&self.schedule_conf).ok_or_else(|| bad("scheduleConf", "required"))?;
            Schedule::parse(schedule_type, &conf).map_err(|e| bad("scheduleConf", e))?;
        }
        let time_zone = trimmed(&self.time_zone);
        if let Some(zone) = &time_zone {
            if zone.len() > ZONE_MAX {
                return Err(bad("timeZone", format!("at most {ZONE_MAX} characters")));
            }
            parse_time_zone(zone).map_err(|e| bad("timeZone", e))?;
        }

        let glue_type =
            GlueType::from_str(&self.glue_type).ok().filter(|g| *g != GlueType::GlueGroovy).ok_or_else(
                || bad("glueType", "unknown GLUE type (GLUE_GROOVY needs a JVM executor and is not offered)"),
            )?;
        max_chars("executorHandler", self.executor_handler.as_deref(), HANDLER_MAX)?;
        if glue_type == GlueType::Bean && trimmed(&self.executor_handler).is_none() {
            return Err(bad("executorHandler", "required for BEAN jobs"));
        }
        max_chars("executorParam", self.executor_param.as_deref(), PARAM_MAX)?;
        if ExecutorRouteStrategy::from_str(&self.executor_route_strategy).is_err() {
            return Err(bad("executorRouteStrategy", "unknown route strategy"));
        }
        if MisfireStrategy::from_str(&self.misfire_strategy).is_err() {
            return Err(bad("misfireStrategy", "must be DO_NOTHING or FIRE_ONCE_NOW"));
        }
        if !BlockStrategy::ALL.iter().any(|b| b.name() == self.executor_block_strategy) {
            return Err(bad("executorBlockStrategy", "unknown block strategy"));
        }
        if !(0..=TIMEOUT_MAX).contains(&self.executor_timeout) {
            return Err(bad("executorTimeout", format!("must be 0 to {TIMEOUT_MAX} seconds")));
        }
        if !(0..=RETRY_MAX).contains(&self.executor_fail_retry_count) {
            return Err(bad("executorFailRetryCount", format!("must be 0 to {RETRY_MAX}")));
        }
        let retry_backoff = self.retry.check()?;
        if self.glue_source.as_ref().is_some_and(|s| s.len() > GLUE_SOURCE_MAX) {
            return Err(bad("glueSource", format!("at most {GLUE_SOURCE_MAX} bytes")));
        }
        max_chars("glueRemark", self.glue_remark.as_deref(), 128)?;
        self.check_children(state, principal, this).await?;
        let tags = self.tags.as_deref().map(super::job_tags::normalize).transpose()?;
        let priority = match self.priority.as_deref().map(str::trim) {
            None => None,
            Some(p) if p.eq_ignore_ascii_case("HIGH") => Some(Some("HIGH")),
            Some(p) if p.eq_ignore_ascii_case("LOW") => Some(Some("LOW")),
            Some(p) if p.eq_ignore_ascii_case("NORMAL") || p.is_empty() => Some(None),
            Some(_) => return Err(bad("priority", "must be HIGH, NORMAL or LOW")),
        };
        let form = DaysForm {
            only_on: self.only_on.as_deref(),
            never_on: self.never_on.as_deref(),
            exclusion_windows: self.exclusion_windows.as_deref(),
        };
        let days = job_days::check(state, &form, this).await?;
        Ok(Checked { group, schedule_type, glue_type, time_zone, retry_backoff, tags, priority, days })
    }

    /// Child job ids: numeric, existing, permitted, not the job itself (CVE-2024-42681 was
    /// upstream missing the permission part).
    async fn check_children(
        &self,
        state: &HttpState,
        principal: &Principal,
        this: Option<JobId>,
    ) -> Result<(), ApiError> {
        let Some(ids) = trimmed(&self.child_job_id) else { return Ok(()) };
        max_chars("childJobId", Some(&ids), CHILD_IDS_MAX)?;
        for raw in ids.split(',') {
            let id = raw
                .trim()
                .parse::<i32>()
                .map(JobId)
                .map_err(|_| bad("childJobId", format!("{:?} is not a job id", raw.trim())))?;
            if Some(id) == this {
                return Err(bad("childJobId", "a job cannot be its own child"));
            }
            let child = state
                .store
                .load_job(id)
                .await?
                .ok_or_else(|| bad("childJobId", format!("job {id} does not exist")))?;
            if !principal.may_use(child.job.job_group) {
                return Err(ApiError::Forbidden(format!("childJobId: you have no permission on job {id}")));
            }
        }
        Ok(())
    }

    /// The stored row's columns from this form (trigger state and times are the caller's).
    pub(crate) fn apply(&self, checked: &Checked, job: &mut Job) {
        job.job_group = checked.group;
        job.job_desc = self.job_desc.trim().to_owned();
        job.author = Some(self.author.trim().to_owned());
        job.alarm_email = trimmed(&self.alarm_email);
        job.schedule_type = checked.schedule_type.name().to_owned();
        job.schedule_conf =
            if checked.schedule_type == ScheduleType::None { None } else { trimmed(&self.schedule_conf) };
        job.misfire_strategy = self.misfire_strategy.clone();
        job.executor_route_strategy = Some(self.executor_route_strategy.clone());
        job.executor_handler = trimmed(&self.executor_handler);
        job.executor_param = self.executor_param.clone().filter(|p| !p.is_empty());
        job.executor_block_strategy = Some(self.executor_block_strategy.clone());
        job.executor_timeout = self.executor_timeout;
        job.executor_fail_retry_count = self.executor_fail_retry_count;
        job.child_jobid = trimmed(&self.child_job_id)
            .map(|ids| ids.split(',').map(str::trim).collect::<Vec<_>>().join(","));
    }
}

/// The source a new script job starts with when none is given (upstream pre-fills a script
/// that prints its arguments).
pub(crate) fn glue_template(glue_type: GlueType) -> Option<&'static str> {
    Some(match glue_type {
        GlueType::GlueShell => {
            "#!/bin/bash\necho \"jobwheel: hello shell\"\necho \"script: $0\"\necho \"param: $1\"\necho \"shard index: $2\"\necho \"shard total: $3\"\nexit 0\n"
        }
        GlueType::GluePython | GlueType::GluePython2 => {
            "#!/usr/bin/env python\nimport sys\nprint(\"jobwheel: hello python\")\nprint(\"script:\", sys.argv[0])\nprint(\"param:\", sys.argv[1])\nprint(\"shard index:\", sys.argv[2])\nprint(\"shard total:\", sys.argv[3])\n"
        }
        GlueType::GlueNodejs => {
            "#!/usr/bin/env node\nconsole.log(\"jobwheel: hello nodejs\");\nconsole.log(\"script:\", process.argv[1]);\nconsole.log(\"param:\", process.argv[2]);\nconsole.log(\"shard index:\", process.argv[3]);\nconsole.log(\"shard total:\", process.argv[4]);\nprocess.exit(0);\n"
        }
        GlueType::GluePhp => {
            "<?php\necho \"jobwheel: hello php\\n\";\necho \"script: $argv[0]\\n\";\necho \"param: $argv[1]\\n\";\necho \"shard index: $argv[2]\\n\";\necho \"shard total: $argv[3]\\n\";\nexit(0);\n?>\n"
        }
        GlueType::GluePowershell => {
            "Write-Host \"jobwheel: hello powershell\"\nWrite-Host \"script: $($MyInvocation.MyCommand.Path)\"\nWrite-Host \"param: $($args[0])\"\nWrite-Host \"shard index: $($args[1])\"\nWrite-Host \"shard total: $($args[2])\"\nexit 0\n"
        }
        GlueType::Bean | GlueType::GlueGroovy | GlueType::GlueWasm => return None,
    })
}
