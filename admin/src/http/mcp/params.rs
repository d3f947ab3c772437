//! The tools' parameters, with the JSON Schemas an agent sees (`tools.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which job or workflow.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct ById {
    /// Its id.
    pub(crate) id: i64,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchJobs {
    /// Words to look for in the description, handler and author (fuzzy; best first).
    #[serde(default)]
    pub(crate) query: Option<String>,
    /// Only this executor group's jobs.
    #[serde(default)]
    pub(crate) group: Option<i64>,
    /// Only jobs with this tag.
    #[serde(default)]
    pub(crate) tag: Option<String>,
    /// At most this many (default 20, at most 200).
    #[serde(default)]
    pub(crate) limit: Option<u32>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct Explain {
    /// The job.
    pub(crate) id: i64,
    /// How many fire times (default 10, at most 100).
    #[serde(default)]
    pub(crate) count: Option<u32>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateJob {
    /// The job as POST /api/v1/jobs takes it (jobGroup, jobDesc, author, scheduleType,
    /// scheduleConf, glueType, executorHandler, …; see the admin's /api/v1/openapi.json).
    pub(crate) job: Value,
    /// Check it and say what would happen, without saving.
    #[serde(default)]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct UpdateJob {
    /// The job.
    pub(crate) id: i64,
    /// The fields to change (the rest stay as they are), in the API's names.
    pub(crate) changes: Value,
    /// Check the result and say what would happen, without saving.
    #[serde(default)]
    pub(crate) dry_run: bool,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct Replay {
    /// The run (its log id), a recorded Wasm run.
    pub(crate) run_id: i64,
    /// A module version of the job (`get_job`'s module versions) to replay instead of the run's
    /// own module: what that version would have done with the same inputs and answers.
    #[serde(default)]
    pub(crate) version: Option<i64>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct WhatIf {
    /// The job.
    pub(crate) job_id: i64,
    /// The module version to try, typically a candidate uploaded with
    /// `POST /api/v1/jobs/{id}/wasm?candidate=true` (not run by triggers until activated).
    pub(crate) version: i64,
    /// How many of the job's newest recorded runs (default 10, at most 50).
    #[serde(default)]
    pub(crate) runs: Option<u32>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct Trigger {
    /// The job.
    pub(crate) id: i64,
    /// The parameter of this run (none: the job's own).
    #[serde(default)]
    pub(crate) param: Option<String>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListApprovals {
    /// Only this job's.
    #[serde(default)]
    pub(crate) job_id: Option<i64>,
    /// Only those still waiting for an administrator.
    #[serde(default)]
    pub(crate) pending: Option<bool>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListRuns {
    /// Only this job's runs.
    #[serde(default)]
    pub(crate) job_id: Option<i64>,
    /// Only this executor group's runs.
    #[serde(default)]
    pub(crate) group: Option<i64>,
    /// 1 succeeded, 2 failed, 3 running (none: all).
    #[serde(default)]
    pub(crate) status: Option<i32>,
    /// At most this many, newest first (default 20, at most 200).
    #[serde(default)]
    pub(crate) limit: Option<u32>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadLog {
    /// The run (log id).
    pub(crate) run_id: i64,
    /// The first line to read (default 1); pass the answer's `nextLine` to read on.
    #[serde(default)]
    pub(crate) from_line: Option<i64>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct StartWorkflow {
    /// The workflow.
    pub(crate) id: i64,
    /// The instance's start context (a JSON object its nodes read).
    #[serde(default)]
    pub(crate) context: Option<Value>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct DecideApproval {
    /// The workflow instance.
    pub(crate) id: i64,
    /// The approval node, waiting (state WAITING).
    pub(crate) node: String,
    /// true approves (the node succeeds), false rejects (it fails).
    pub(crate) approve: bool,
    /// Why (kept in the run's message and the audit log).
    #[serde(default)]
    pub(crate) comment: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartBackfill {
    /// The job whose schedule runs (give this or workflowId).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) job_id: Option<i64>,
    /// The workflow whose schedule runs (give this or jobId).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) workflow_id: Option<i64>,
    /// The range's first time, epoch ms (included).
    pub(crate) from: i64,
    /// The range's last time, epoch ms (included; not in the future).
    pub(crate) to: i64,
    /// At most this many runs at once (1 to 50, default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) parallelism: Option<i32>,
    /// SKIP (default) skips times that already ran; RERUN runs them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) existing: Option<String>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct ByGroup {
    /// Only this executor group's.
    #[serde(default)]
    pub(crate) group: Option<i64>,
}

#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchLogs {
    /// The job whose runs' logs are searched.
    pub(crate) job_id: i64,
    /// The text to find in a line (ASCII case-insensitive, 1 to 200 characters).
    pub(crate) text: String,
    /// Only runs triggered at or after this time (epoch ms).
    #[serde(default)]
    pub(crate) from: Option<i64>,
    /// Only runs triggered before this time (epoch ms).
    #[serde(default)]
    pub(crate) to: Option<i64>,
    /// At most this many matching lines (default 20, at most 200).
    #[serde(default)]
    pub(crate) limit: Option<u32>,
    /// Where to go on: the previous answer's `next`.
    #[serde(default)]
    pub(crate) after: Option<String>,
}
