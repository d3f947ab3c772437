//! The job add/edit form (`JobInput`: the job's settings and what only a form sets) and
//! upstream's server-side validation of it (`JobServiceImpl.add/update`), each violation a 400
//! naming the field.

use serde::Deserialize;

use super::alarm_routes::{AlarmForm, CheckedAlarm};
use super::auth::Principal;
use super::job_days::{self, CheckedDays, DaysForm};
use super::job_settings::{JobSettings, trimmed};
use crate::cron::{Schedule, parse_time_zone};
use crate::domain::{DeliveryMode, GlueType, Priority, ScheduleType};
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, Job, JobId, RetryBackoff, Store, route_scope};

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

/// The add/edit form, in upstream's `XxlJobInfo` property names: the job's settings, plus what
/// only a form sets.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobInput {
    pub(crate) job_group: i32,
    #[serde(flatten)]
    pub(crate) settings: JobSettings,
    #[serde(default)]
    pub(crate) glue_source: Option<String>,
    #[serde(default)]
    pub(crate) child_job_id: Option<String>,
    /// jobwheel extension: the job's tags; absent leaves them as they are, `[]` clears them.
    #[serde(default)]
    pub(crate) tags: Option<Vec<String>>,
    /// jobwheel extension: `HIGH`, `NORMAL` or `LOW` (any case); absent leaves it as it is
    /// (new jobs: normal).
    #[serde(default)]
    pub(crate) priority: Option<String>,
    /// jobwheel extension: `AT_MOST_ONCE` or `EXACTLY_ONCE` (any case, docs/engine.md
    /// "Delivery guarantee"); absent leaves it as it is (new jobs: at most once).
    #[serde(default)]
    pub(crate) delivery_mode: Option<String>,
    /// jobwheel extension: ids of the calendars the job fires only on; absent keeps them.
    #[serde(default)]
    pub(crate) only_on: Option<Vec<i64>>,
    /// jobwheel extension: ids of the calendars the job never fires on; absent keeps them.
    #[serde(default)]
    pub(crate) never_on: Option<Vec<i64>>,
    /// jobwheel extension: daily `HH:MM-HH:MM` windows without fires; absent keeps them.
    #[serde(default)]
    pub(crate) exclusion_windows: Option<Vec<String>>,
    /// jobwheel extension: `alarmChannels` and `doneWithin` (docs/alarms.md); absent keeps them.
    #[serde(flatten)]
    pub(crate) alarms: AlarmForm,
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
    /// The priority to store, if the form named one.
    pub(crate) priority: Option<Priority>,
    /// The delivery mode to store, if the form named one.
    pub(crate) delivery: Option<DeliveryMode>,
    /// Calendars and windows to store, if the form named any.
    pub(crate) days: Option<CheckedDays>,
    /// Alarm channels and duration to store, if the form named them.
    pub(crate) alarms: CheckedAlarm,
}

impl Checked {
    /// Stores what a form sets beside the job's `xxl_job_info` row, in jobwheel's side tables:
    /// its zone and retry backoff always; tags, priority and calendars only when the form named
    /// them (absent leaves the job's as they are, so a client that does not know them keeps them).
    pub(crate) async fn store_beside(&self, store: &dyn Store, id: JobId) -> Result<(), ApiError> {
        store.set_job_time_zone(id, self.time_zone.as_deref()).await?;
        store.set_job_retry_backoff(id, self.retry_backoff).await?;
        if let Some(tags) = &self.tags {
            store.set_job_tags(id, tags).await?;
        }
        if let Some(priority) = self.priority {
            store.set_job_priority(id, priority.stored()).await?;
        }
        if let Some(delivery) = self.delivery {
            store.set_job_delivery(id, delivery.stored()).await?;
        }
        if let Some(days) = &self.days {
            store.set_job_days(id, &days.days).await?;
        }
        self.alarms.store(store, route_scope::JOB, i64::from(id.0)).await
    }
}

/// Checks `alarmEmail` (a job's or a workflow's): at most `max` characters of comma-separated
/// addresses, each with an `@`.
pub(crate) fn check_alarm_email(value: Option<&str>, max: usize) -> Result<(), ApiError> {
    max_chars("alarmEmail", value, max)?;
    if let Some(emails) = trimmed(value)
        && let Some(bad_one) = emails.split(',').map(str::trim).find(|e| !e.is_empty() && !e.contains('@'))
    {
        return Err(bad("alarmEmail", format!("{bad_one:?} is not a mail address")));
    }
    Ok(())
}

fn bad(field: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("{field}: {rule}"))
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
        state: &MgmtState,
        principal: &Principal,
        this: Option<JobId>,
    ) -> Result<Checked, ApiError> {
        let group = GroupId(self.job_group);
        let settings = &self.settings;
        principal.require_group(group)?;
        if state.store.load_group(group).await?.is_none() {
            return Err(bad("jobGroup", format!("executor group {group} does not exist")));
        }
        if settings.job_desc.trim().is_empty() {
            return Err(bad("jobDesc", "required"));
        }
        max_chars("jobDesc", Some(&settings.job_desc), DESC_MAX)?;
        let author = trimmed(settings.author.as_deref()).ok_or_else(|| bad("author", "required"))?;
        max_chars("author", Some(&author), AUTHOR_MAX)?;
        check_alarm_email(settings.alarm_email.as_deref(), ALARM_EMAIL_MAX)?;

        let schedule_type = settings
            .schedule_type
            .known()
            .ok_or_else(|| bad("scheduleType", "must be NONE, CRON, FIX_RATE or FIX_DELAY"))?;
        if schedule_type != ScheduleType::None {
            let conf =
                trimmed(settings.schedule_conf.as_deref()).ok_or_else(|| bad("scheduleConf", "required"))?;
            Schedule::parse(schedule_type, &conf).map_err(|e| bad("scheduleConf", e))?;
        }
        let time_zone = trimmed(settings.time_zone.as_deref());
        if let Some(zone) = &time_zone {
            if zone.len() > ZONE_MAX {
                return Err(bad("timeZone", format!("at most {ZONE_MAX} characters")));
            }
            parse_time_zone(zone).map_err(|e| bad("timeZone", e))?;
        }

        let glue_type = settings.glue_type.known().ok_or_else(|| {
            bad(
                "glueType",
                "unknown GLUE type: BEAN, GLUE_WASM, GLUE_GROOVY or a script type (GLUE_SHELL, …)",
            )
        })?;
        max_chars("executorHandler", settings.executor_handler.as_deref(), HANDLER_MAX)?;
        if glue_type == GlueType::Bean && trimmed(settings.executor_handler.as_deref()).is_none() {
            return Err(bad("executorHandler", "required for BEAN jobs"));
        }
        max_chars("executorParam", settings.executor_param.as_deref(), PARAM_MAX)?;
        if settings.executor_route_strategy.as_ref().is_some_and(|r| r.known().is_none()) {
            return Err(bad("executorRouteStrategy", "unknown route strategy"));
        }
        if settings.misfire_strategy.known().is_none() {
            return Err(bad("misfireStrategy", "must be DO_NOTHING or FIRE_ONCE_NOW"));
        }
        if settings.executor_block_strategy.as_ref().is_some_and(|b| b.known().is_none()) {
            return Err(bad("executorBlockStrategy", "unknown block strategy"));
        }
        if !(0..=TIMEOUT_MAX).contains(&settings.executor_timeout) {
            return Err(bad("executorTimeout", format!("must be 0 to {TIMEOUT_MAX} seconds")));
        }
        if !(0..=RETRY_MAX).contains(&settings.executor_fail_retry_count) {
            return Err(bad("executorFailRetryCount", format!("must be 0 to {RETRY_MAX}")));
        }
        let retry_backoff = settings.retry.check()?;
        if self.glue_source.as_ref().is_some_and(|s| s.len() > GLUE_SOURCE_MAX) {
            return Err(bad("glueSource", format!("at most {GLUE_SOURCE_MAX} bytes")));
        }
        max_chars("glueRemark", settings.glue_remark.as_deref(), 128)?;
        self.check_children(state, principal, this).await?;
        let tags = self.tags.as_deref().map(super::job_tags::normalize).transpose()?;
        let priority = match self.priority.as_deref() {
            None => None,
            Some(p) => {
                Some(Priority::parse_input(p).ok_or_else(|| bad("priority", "must be HIGH, NORMAL or LOW"))?)
            }
        };
        let delivery = match self.delivery_mode.as_deref() {
            None => None,
            Some(m) => Some(
                DeliveryMode::parse_input(m)
                    .ok_or_else(|| bad("deliveryMode", "must be AT_MOST_ONCE or EXACTLY_ONCE"))?,
            ),
        };
        let form = DaysForm {
            only_on: self.only_on.as_deref(),
            never_on: self.never_on.as_deref(),
            exclusion_windows: self.exclusion_windows.as_deref(),
        };
        let days = job_days::check(state, &form, this).await?;
        let alarms = self.alarms.check(state, route_scope::JOB).await?;
        Ok(Checked {
            group,
            schedule_type,
            glue_type,
            time_zone,
            retry_backoff,
            tags,
            priority,
            delivery,
            days,
            alarms,
        })
    }

    /// Child job ids: numeric, existing, permitted, not the job itself (CVE-2024-42681 was
    /// upstream missing the permission part).
    async fn check_children(
        &self,
        state: &MgmtState,
        principal: &Principal,
        this: Option<JobId>,
    ) -> Result<(), ApiError> {
        let Some(ids) = trimmed(self.child_job_id.as_deref()) else { return Ok(()) };
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
        self.settings.apply(checked.schedule_type, job);
        job.child_jobid = trimmed(self.child_job_id.as_deref())
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
        // GLUE(Java): a class the JVM executor compiles and runs (upstream's IJobHandler).
        GlueType::GlueGroovy => {
            "package com.xxl.job.service.handler;\n\nimport com.xxl.job.core.context.XxlJobHelper;\nimport com.xxl.job.core.handler.IJobHandler;\n\npublic class JobwheelGlueJob extends IJobHandler {\n\n\t@Override\n\tpublic void execute() throws Exception {\n\t\tXxlJobHelper.log(\"jobwheel: hello GLUE(Java), param=\" + XxlJobHelper.getJobParam());\n\t}\n\n}\n"
        }
        GlueType::Bean | GlueType::GlueWasm => return None,
    })
}
