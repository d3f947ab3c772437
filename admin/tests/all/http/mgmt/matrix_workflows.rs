//! The authorization matrix's workflow data: a fresh workflow (one node, named like the matrix's
//! `{name}`, running the executor's no-op in the target's group) for every `/api/v1/workflows`
//! request, and a fresh instance in the state each `/api/v1/workflow-instances` operation needs —
//! running (a fired node whose log is still on its way, so neither the sweep nor a result ends
//! it), or failed — so an allowed request always finds something to act on.

use chrono::Utc;
use jobwheel_admin::store::{
    Admission, BackfillStatus, GroupId, InstanceId, InstanceStatus, NewBackfill, NewInstance, NewLog, NewRun,
    NewWorkflow, RunStatus, ScheduleStatus, StartOutcome, WorkflowId,
};
use serde_json::{Value, json};

use super::matrix_world::{Body, MATRIX_SECRET, Side, World};
use jobwheel_admin::domain::TriggerType;

impl World {
    /// A workflow's JSON form in `group`, its node running a new no-op job there.
    pub(super) async fn workflow_form(&self, group: GroupId) -> Value {
        let job = self.job(group, "BEAN").await;
        json!({
            "name": self.unique("wf-"),
            "jobGroup": group.0,
            "scheduleType": "CRON",
            "scheduleConf": "0 0 3 * * ?",
            "maxInstances": 100,
            "graph": {"nodes": [{"name": MATRIX_SECRET, "jobId": job.0}]}
        })
    }

    /// A backfill request over the last three days of a new daily job in `group`.
    pub(super) async fn backfill_form(&self, group: GroupId) -> Value {
        let job = self.job(group, "BEAN").await;
        let now = Utc::now().timestamp_millis();
        json!({"jobId": job.0, "from": now - 3 * 86_400_000, "to": now - 1000})
    }

    /// A stored workflow in `group` (schedule off) with one node named [`MATRIX_SECRET`].
    async fn workflow(&self, group: GroupId) -> WorkflowId {
        let job = self.job(group, "BEAN").await;
        let graph = json!({"nodes": [{"name": MATRIX_SECRET, "jobId": job.0}], "edges": []});
        let workflow = NewWorkflow {
            name: self.unique("wf-"),
            job_group: group,
            schedule_type: "CRON".into(),
            schedule_conf: Some("0 0 3 * * ?".into()),
            time_zone: None,
            misfire_strategy: "DO_NOTHING".into(),
            max_instances: 100,
            overflow: "SKIP".into(),
            graph: graph.to_string(),
            status: ScheduleStatus::Stopped,
            trigger_last_time: 0,
            trigger_next_time: 0,
            author: "root".into(),
            update_ms: 0,
            days: Default::default(),
            alarm_email: String::new(),
        };
        self.env.store().add_workflow(&workflow).await.expect("workflow")
    }

    /// An instance of a new workflow in `group` whose node's run is `state`: `Due` (fired, its
    /// log on its way), `Failed` (the instance failed) or `Waiting` (an approval waiting).
    async fn instance(&self, group: GroupId, state: RunStatus) -> InstanceId {
        let failed = state == RunStatus::Failed;
        let store = self.env.store();
        let workflow = self.workflow(group).await;
        let row = store.load_workflow(workflow).await.expect("load").expect("workflow");
        let now_ms = Utc::now().timestamp_millis();
        let new = NewInstance {
            workflow_id: workflow,
            trigger_type: TriggerType::Api,
            rerun_of: None,
            fire_time_ms: now_ms,
            graph: if state == RunStatus::Waiting {
                approval_graph(&row.workflow.graph)
            } else {
                row.workflow.graph
            },
            context: "{}".into(),
        };
        let admission = Admission { max: 100, queue: false, advance: None, now_ms, keep_missed: false };
        let StartOutcome::Started(id) = store.start_instance(&new, admission).await.expect("start") else {
            panic!("the matrix's instance did not start")
        };
        let mut tx = store.begin_instance(id).await.expect("begin").expect("instance");
        let run = NewRun {
            node: MATRIX_SECRET.into(),
            attempt: 1,
            status: state,
            due_ms: now_ms,
            output: None,
            message: failed.then(|| "matrix failure".to_owned()),
            deadline_ms: 0,
        };
        let run_id = tx.insert_runs(&[run]).await.expect("run")[0];
        if failed {
            tx.set_instance(InstanceStatus::Failed, now_ms, now_ms).await.expect("failed");
        }
        tx.commit().await.expect("commit");
        if state == RunStatus::Due {
            let job_id = jobwheel_admin::store::JobId(0);
            let log = NewLog { job_group: group, job_id, trigger_time: Utc::now() };
            let take = jobwheel_admin::store::RunTake { run: run_id, log, deadline_ms: 0 };
            store.take_runs(&[take], now_ms).await.expect("take")[0].expect("taken");
        }
        id
    }

    /// The id and body for a workflow path (`None` if `path` is not one).
    pub(super) async fn workflow_resource(
        &self,
        method: &str,
        path: &str,
        side: Side,
    ) -> Option<(i64, Body)> {
        let group = self.group_of(side);
        let resource = match path {
            "/api/v1/workflows/{id}" => {
                let id = self.workflow(group).await;
                let body =
                    if method == "PUT" { Body::Json(self.workflow_form(group).await) } else { Body::None };
                (id.0, body)
            }
            "/api/v1/workflows/{id}/instances" => {
                let body =
                    if method == "POST" { Body::Json(json!({"context": {"matrix": 1}})) } else { Body::None };
                (self.workflow(group).await.0, body)
            }
            p if p.starts_with("/api/v1/workflows/{id}/") => (self.workflow(group).await.0, Body::None),
            "/api/v1/workflow-instances/{id}/stop" => {
                (self.instance(group, RunStatus::Due).await.0, Body::None)
            }
            "/api/v1/workflow-instances/{id}/nodes/{name}/done" => (
                self.instance(group, RunStatus::Failed).await.0,
                Body::Json(json!({"output": {"matrix": true}})),
            ),
            "/api/v1/workflow-instances/{id}/nodes/{name}/approve"
            | "/api/v1/workflow-instances/{id}/nodes/{name}/reject" => {
                (self.instance(group, RunStatus::Waiting).await.0, Body::Json(json!({"comment": "matrix"})))
            }
            "/api/v1/backfills/{id}" | "/api/v1/backfills/{id}/cancel" => {
                let form = self.backfill_form(group).await;
                let job = form["jobId"].as_i64().expect("job");
                let now = Utc::now().timestamp_millis();
                let new = NewBackfill {
                    target_kind: "JOB".into(),
                    target_id: job,
                    job_group: group,
                    from_ms: now - 3 * 86_400_000,
                    to_ms: now - 1000,
                    parallelism: 1,
                    rerun_existing: 0,
                    status: BackfillStatus::Running,
                    cursor_ms: now - 3 * 86_400_000 - 1,
                    total: 3,
                    handed: 0,
                    skipped: 0,
                    message: None,
                    author: "root".into(),
                    created_ms: now,
                    end_ms: 0,
                };
                (self.env.store().add_backfill(&new).await.expect("backfill"), Body::None)
            }
            p if p.starts_with("/api/v1/workflow-instances/{id}") => {
                (self.instance(group, RunStatus::Failed).await.0, Body::None)
            }
            _ => return None,
        };
        Some(resource)
    }
}

/// `graph` (one job node named [`MATRIX_SECRET`]) with that node an approval after its job,
/// renamed `work`: the group rights still follow the job, and only an approval is decided.
fn approval_graph(graph: &str) -> String {
    let stored: Value = serde_json::from_str(graph).expect("graph");
    let job = stored["nodes"][0]["jobId"].clone();
    json!({
        "nodes": [{"name": "work", "jobId": job}, {"name": MATRIX_SECRET, "kind": "APPROVAL"}],
        "edges": [{"from": "work", "to": MATRIX_SECRET}]
    })
    .to_string()
}
