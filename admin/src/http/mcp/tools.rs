//! The tools (docs/mcp.md has each with its REST route and scope): jobs (search, get, explain
//! the schedule, create and update with a dry run, start, stop, trigger), runs (list, read the
//! log from a line on, search a job's logs), workflows (search, get, start an instance, read its
//! state, decide a waiting approval), the lateness and missed-fire report and the dashboard
//! figures.

use std::sync::Arc;

use axum::http::Method;
use axum::http::request::Parts;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::Extension;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use super::api::Api;
use super::params::{
    ByGroup, ById, CreateJob, DecideApproval, Explain, ListApprovals, ListRuns, ReadLog, Replay, SearchJobs,
    SearchLogs, StartBackfill, StartWorkflow, Trigger, UpdateJob, WhatIf,
};
use crate::http::McpState;
use crate::http::mgmt::auth::AgentToken;

type Reply = Result<CallToolResult, ErrorData>;

/// The server's tools, one instance per request.
#[derive(Clone)]
pub(crate) struct Jobwheel {
    api: Api,
    state: Arc<McpState>,
    #[allow(dead_code, reason = "read by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

/// The tool's answer: JSON text, or the API's refusal as a tool error the agent can read.
fn reply(result: Result<Value, String>) -> Reply {
    Ok(match result {
        Ok(value) => CallToolResult::success(vec![ContentBlock::text(
            serde_json::to_string_pretty(&value).unwrap_or_default(),
        )]),
        Err(msg) => CallToolResult::error(vec![ContentBlock::text(msg)]),
    })
}

fn token(parts: &Parts) -> Result<AgentToken, ErrorData> {
    parts.extensions.get::<AgentToken>().cloned().ok_or_else(|| ErrorData::internal_error("no caller", None))
}

fn limit(value: Option<u32>, default: u32) -> u32 {
    value.unwrap_or(default).clamp(1, 200)
}

/// `?a=1&b=x` from the pairs that are set, escaped.
fn query(pairs: &[(&str, Option<String>)]) -> String {
    let mut url = reqwest::Url::parse("http://localhost/").expect("a valid base");
    for (key, value) in pairs {
        if let Some(value) = value {
            url.query_pairs_mut().append_pair(key, value);
        }
    }
    url.query().map_or_else(String::new, |q| format!("?{q}"))
}

#[tool_router]
impl Jobwheel {
    pub(crate) fn new(api: Api, state: Arc<McpState>) -> Self {
        Self { api, state, tool_router: Self::tool_router() }
    }

    async fn get(&self, parts: &Parts, path: &str) -> Result<Result<Value, String>, ErrorData> {
        Ok(self.api.call(&token(parts)?, Method::GET, path, None).await.ok())
    }

    async fn send(
        &self,
        parts: &Parts,
        method: Method,
        path: &str,
        body: &Value,
    ) -> Result<Result<Value, String>, ErrorData> {
        Ok(self.api.call(&token(parts)?, method, path, Some(body)).await.ok())
    }

    #[tool(
        description = "Search jobs by words (fuzzy over description, handler and author), group or tag. Answers {total, items}."
    )]
    async fn search_jobs(
        &self,
        Parameters(p): Parameters<SearchJobs>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let q = query(&[
            ("q", p.query),
            ("jobGroup", p.group.map(|g| g.to_string())),
            ("tag", p.tag),
            ("limit", Some(limit(p.limit, 20).to_string())),
        ]);
        reply(self.get(&parts, &format!("/api/v1/jobs{q}")).await?)
    }

    #[tool(
        description = "One job with all its settings: schedule, time zone, calendars, retries, alarm channels."
    )]
    async fn get_job(&self, Parameters(p): Parameters<ById>, Extension(parts): Extension<Parts>) -> Reply {
        reply(self.get(&parts, &format!("/api/v1/jobs/{}", p.id)).await?)
    }

    #[tool(
        description = "Explain a job's schedule: its next fire times with its calendars and exclusion windows applied, in its time zone (and UTC)."
    )]
    async fn explain_schedule(
        &self,
        Parameters(p): Parameters<Explain>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let job = match self.get(&parts, &format!("/api/v1/jobs/{}", p.id)).await? {
            Ok(job) => job,
            Err(e) => return reply(Err(e)),
        };
        reply(
            super::report::explain(&self.api, &token(&parts)?, &job, p.count.unwrap_or(10).clamp(1, 100))
                .await,
        )
    }

    #[tool(
        description = "Create a job (stopped). With dryRun the job is checked and nothing is saved. Needs a write token."
    )]
    async fn create_job(
        &self,
        Parameters(p): Parameters<CreateJob>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let dry = if p.dry_run { "?dryRun=true" } else { "" };
        reply(self.send(&parts, Method::POST, &format!("/api/v1/jobs{dry}"), &p.job).await?)
    }

    #[tool(
        description = "Change some of a job's settings; the others stay. With dryRun the result is checked and nothing is saved. Needs a write token."
    )]
    async fn update_job(
        &self,
        Parameters(p): Parameters<UpdateJob>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let mut job = match self.get(&parts, &format!("/api/v1/jobs/{}", p.id)).await? {
            Ok(job) => job,
            Err(e) => return reply(Err(e)),
        };
        let (Some(fields), Some(changes)) = (job.as_object_mut(), p.changes.as_object()) else {
            return reply(Err("changes: give an object of the fields to change".to_owned()));
        };
        for (key, value) in changes {
            fields.insert(key.clone(), value.clone());
        }
        let dry = if p.dry_run { "?dryRun=true" } else { "" };
        reply(self.send(&parts, Method::PUT, &format!("/api/v1/jobs/{}{dry}", p.id), &job).await?)
    }

    #[tool(description = "Start a job's schedule. Needs a run token.")]
    async fn start_job(&self, Parameters(p): Parameters<ById>, Extension(parts): Extension<Parts>) -> Reply {
        reply(self.send(&parts, Method::POST, &format!("/api/v1/jobs/{}/start", p.id), &json!({})).await?)
    }

    #[tool(description = "Stop a job's schedule (runs in flight go on). Needs a run token.")]
    async fn stop_job(&self, Parameters(p): Parameters<ById>, Extension(parts): Extension<Parts>) -> Reply {
        reply(self.send(&parts, Method::POST, &format!("/api/v1/jobs/{}/stop", p.id), &json!({})).await?)
    }

    #[tool(
        description = "Run a job once now, optionally with a parameter of its own. Needs a run token. Then use list_runs and read_run_log."
    )]
    async fn trigger_job(
        &self,
        Parameters(p): Parameters<Trigger>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let body = json!({"executorParam": p.param});
        reply(self.send(&parts, Method::POST, &format!("/api/v1/jobs/{}/trigger", p.id), &body).await?)
    }

    #[tool(
        description = "Replay a recorded Wasm run from its journal (same clock, random numbers and HTTP answers; no network, no new run), optionally against another module version of its job. Answers whether it is identical to the original and, if not, what differs and the first differing output line. Needs a run token."
    )]
    async fn replay_run(
        &self,
        Parameters(p): Parameters<Replay>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let body = json!({"version": p.version});
        reply(self.send(&parts, Method::POST, &format!("/api/v1/logs/{}/replay", p.run_id), &body).await?)
    }

    #[tool(
        description = "What-if: replay a job's newest recorded runs against one of its module versions (e.g. a candidate not yet active), with the network off and no new runs. Answers per run whether it would have come out the same, and if not what differs. Needs a run token."
    )]
    async fn what_if_version(
        &self,
        Parameters(p): Parameters<WhatIf>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let body = json!({"version": p.version, "runs": p.runs});
        reply(
            self.send(&parts, Method::POST, &format!("/api/v1/jobs/{}/wasm/what-if", p.job_id), &body)
                .await?,
        )
    }

    #[tool(
        description = "Approvals: module versions and grant changes that widen what a job may reach (new kind of host call, new host, group secret, raised limit), held until an administrator approves or refuses them in the UI. A version uploaded through an API token that needs one is answered 202 with its approval; this shows whether it was decided. Each has widening (what is new), versionId (for what_if_version), status pending/approved/refused."
    )]
    async fn list_approvals(
        &self,
        Parameters(p): Parameters<ListApprovals>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let q = query(&[
            ("jobId", p.job_id.map(|j| j.to_string())),
            ("pending", p.pending.map(|b| b.to_string())),
        ]);
        reply(self.get(&parts, &format!("/api/v1/approvals{q}")).await?)
    }

    #[tool(description = "List runs (trigger and result of each), newest first, by job, group or status.")]
    async fn list_runs(
        &self,
        Parameters(p): Parameters<ListRuns>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let q = query(&[
            ("jobId", p.job_id.map(|j| j.to_string())),
            ("jobGroup", p.group.map(|g| g.to_string())),
            ("logStatus", p.status.map(|s| s.to_string())),
            ("limit", Some(limit(p.limit, 20).to_string())),
        ]);
        reply(self.get(&parts, &format!("/api/v1/logs{q}")).await?)
    }

    #[tool(
        description = "Read a run's log from a line on (default the first). Answers the text, nextLine to read on from, and whether the log has ended."
    )]
    async fn read_run_log(
        &self,
        Parameters(p): Parameters<ReadLog>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let from = p.from_line.unwrap_or(1).max(1);
        let read = self.get(&parts, &format!("/api/v1/logs/{}/content?fromLine={from}", p.run_id)).await?;
        reply(read.map(|c| {
            let to = c["toLineNum"].as_i64().unwrap_or(from - 1);
            json!({"text": c["logContent"], "fromLine": from, "nextLine": to + 1, "ended": c["end"]})
        }))
    }

    #[tool(
        description = "Search the logs the admins keep of a job's runs (lines shipped by executors running with --job-logs both or admin) for a text, newest run first: each match's run (log id), trigger time, line number and line. Pass the answer's next as after to go on."
    )]
    async fn search_job_logs(
        &self,
        Parameters(p): Parameters<SearchLogs>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let q = query(&[
            ("text", Some(p.text)),
            ("from", p.from.map(|t| t.to_string())),
            ("to", p.to.map(|t| t.to_string())),
            ("limit", Some(limit(p.limit, 20).to_string())),
            ("after", p.after),
        ]);
        reply(self.get(&parts, &format!("/api/v1/jobs/{}/log-search{q}", p.job_id)).await?)
    }

    #[tool(description = "List workflows (DAGs of jobs), optionally of one executor group.")]
    async fn search_workflows(
        &self,
        Parameters(p): Parameters<ByGroup>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let q = query(&[("jobGroup", p.group.map(|g| g.to_string()))]);
        reply(self.get(&parts, &format!("/api/v1/workflows{q}")).await?)
    }

    #[tool(
        description = "One workflow with its graph (nodes: jobs, switches, approvals, sub-workflows that start another workflow, and maps that run a job once per item of a context array; edges: when and an optional CEL if) and schedule."
    )]
    async fn get_workflow(
        &self,
        Parameters(p): Parameters<ById>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        reply(self.get(&parts, &format!("/api/v1/workflows/{}", p.id)).await?)
    }

    #[tool(
        description = "Start an instance of a workflow now with an optional JSON context. Needs a run token. Then use get_workflow_instance."
    )]
    async fn start_workflow(
        &self,
        Parameters(p): Parameters<StartWorkflow>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let body = json!({"context": p.context});
        reply(self.send(&parts, Method::POST, &format!("/api/v1/workflows/{}/instances", p.id), &body).await?)
    }

    #[tool(
        description = "Approve or reject a workflow instance's approval node that is WAITING, with an optional comment. Needs a write token and rights on every job of the instance; audited."
    )]
    async fn decide_workflow_approval(
        &self,
        Parameters(p): Parameters<DecideApproval>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        // A node name is letters, digits, '_' and '-': nothing else may reach the path.
        if !crate::workflow::valid_name(&p.node) {
            return reply(Err(format!("node {:?} is not a node name", p.node)));
        }
        let (verb, node) = (if p.approve { "approve" } else { "reject" }, &p.node);
        let path = format!("/api/v1/workflow-instances/{}/nodes/{node}/{verb}", p.id);
        reply(self.send(&parts, Method::POST, &path, &json!({"comment": p.comment})).await?)
    }

    #[tool(
        description = "Backfill: run a job's or a workflow's CRON/FIX_RATE schedule over a past range (epoch ms), each scheduled time once as that time's run (calendars applied), at most parallelism at once; SKIP (default) skips times that already ran. Needs a run token. Then use get_backfill."
    )]
    async fn start_backfill(
        &self,
        Parameters(p): Parameters<StartBackfill>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        let body = serde_json::to_value(&p).unwrap_or_default();
        reply(self.send(&parts, Method::POST, "/api/v1/backfills", &body).await?)
    }

    #[tool(
        description = "A backfill's progress: total times, handed out, skipped, running, succeeded, failed, and its state."
    )]
    async fn get_backfill(
        &self,
        Parameters(p): Parameters<ById>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        reply(self.get(&parts, &format!("/api/v1/backfills/{}", p.id)).await?)
    }

    #[tool(
        description = "Cancel a running backfill: no further time is handed out (runs already started finish). Needs a run token."
    )]
    async fn cancel_backfill(
        &self,
        Parameters(p): Parameters<ById>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        reply(
            self.send(&parts, Method::POST, &format!("/api/v1/backfills/{}/cancel", p.id), &json!({}))
                .await?,
        )
    }

    #[tool(
        description = "A workflow instance's state: each node's runs, outputs and messages (a sub-workflow's run names its childInstanceId, a child its parentInstanceId; a map's run counts its items: total, succeeded, failed, running), and the context."
    )]
    async fn get_workflow_instance(
        &self,
        Parameters(p): Parameters<ById>,
        Extension(parts): Extension<Parts>,
    ) -> Reply {
        reply(self.get(&parts, &format!("/api/v1/workflow-instances/{}", p.id)).await?)
    }

    #[tool(
        description = "How late triggers left this admin (quantiles since it started) and how many fire times were missed, by misfire strategy."
    )]
    async fn lateness_report(&self, Extension(parts): Extension<Parts>) -> Reply {
        // The admin-wide counters `/metrics` gives administrators only (review N18): the route
        // for administrators only answers for administrators' tokens.
        if let Err(e) = self.get(&parts, "/api/v1/alarm-deliveries?limit=1").await? {
            return reply(Err(e));
        }
        reply(Ok(super::report::lateness(&self.state)))
    }

    #[tool(description = "The dashboard's figures: jobs, runs, executors, and runs by outcome.")]
    async fn dashboard(&self, Extension(parts): Extension<Parts>) -> Reply {
        reply(self.get(&parts, "/api/v1/dashboard").await?)
    }
}

#[tool_handler]
impl ServerHandler for Jobwheel {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "jobwheel: an xxl-job-compatible job scheduler. Find jobs with search_jobs, inspect them with \
             get_job and explain_schedule, run them with trigger_job and follow with list_runs and \
             read_run_log. Changes need a token whose scope allows them (read < run < write).",
        )
    }
}
