//! Workflows in export files (`transfer.rs`, `import.rs`). An export carries the workflows
//! whose every node runs one of the exported jobs; a node names its job by the job's id on the
//! exporting admin, which its job entry carries too (`JobEntry::id`), so the importing admin
//! maps it to the job the import created or updated. A workflow travels with its owner group's
//! AppName and is matched by name within that group here: updated if one exists, else created
//! with its schedule off. Its calendars travel by name in the file's `calendars`, as the jobs'
//! do. Each is checked like the workflow form before anything is written. A sub-workflow node
//! names its workflow by the exporting admin's id, which the entry carries (`id`): an export
//! holds a workflow only with every workflow it starts, and an import writes the started ones
//! first and maps the nodes to them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use super::auth::Principal;
use super::import_calendars::CalendarPlan;
use super::workflows::{self, WorkflowInput, WorkflowView};
use super::{ApiJson, audit};
use crate::domain::{MisfireStrategy, Named, Overflow, ScheduleType};
use crate::http::{ApiError, MgmtState};
use crate::store::{CalendarRow, GroupId, JobId, WorkflowId};
use crate::workflow::{Graph, NodeKind, WorkflowDays};

/// A workflow of an export; its nodes' `jobId`s are the exporting admin's job ids.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkflowEntry {
    /// Its id on the exporting admin, which its sub-workflow nodes' `workflowId` name (absent
    /// in files of admins before sub-workflows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<i64>,
    /// The AppName of its owner group.
    pub(crate) appname: String,
    pub(crate) name: String,
    pub(crate) schedule_type: Named<ScheduleType>,
    #[serde(default)]
    pub(crate) schedule_conf: Option<String>,
    #[serde(default)]
    pub(crate) time_zone: Option<String>,
    pub(crate) misfire_strategy: Named<MisfireStrategy>,
    pub(crate) max_instances: i32,
    pub(crate) overflow: Named<Overflow>,
    /// Where its alarms are mailed.
    #[serde(default)]
    pub(crate) alarm_email: String,
    /// Names of the calendars it starts only on (the calendars travel in the file's
    /// `calendars`, as the jobs' do).
    #[serde(default)]
    pub(crate) only_on: Vec<String>,
    /// Names of the calendars it never starts on.
    #[serde(default)]
    pub(crate) never_on: Vec<String>,
    /// Its daily exclusion windows.
    #[serde(default)]
    pub(crate) exclusion_windows: Vec<String>,
    pub(crate) graph: Graph,
}

/// The workflows the principal may use whose every node runs one of `jobs` and starts one of the
/// others exported, for an export, and the calendars they refer to (for the file's `calendars`).
pub(crate) async fn entries(
    state: &MgmtState,
    principal: &Principal,
    jobs: &BTreeSet<i32>,
    appnames: &HashMap<GroupId, String>,
) -> Result<(Vec<WorkflowEntry>, Vec<CalendarRow>), ApiError> {
    let mut out = Vec::new();
    let calendars: HashMap<i64, CalendarRow> =
        state.store.list_calendars().await?.into_iter().map(|c| (c.id.0, c)).collect();
    let mut used: BTreeMap<i64, CalendarRow> = BTreeMap::new();
    let mut rows: Vec<(crate::store::WorkflowRow, Graph)> = state
        .store
        .list_workflows(None)
        .await?
        .into_iter()
        .filter_map(|row| Graph::from_json(&row.workflow.graph).ok().map(|graph| (row, graph)))
        .filter(|(row, graph)| {
            principal.may_use(row.workflow.job_group) && graph.job_nodes().all(|n| jobs.contains(&n.job_id))
        })
        .collect();
    // Drop the workflows that start one not exported, until none is left (a chain drops whole).
    loop {
        let kept: BTreeSet<i64> = rows.iter().map(|(row, _)| row.id.0).collect();
        let before = rows.len();
        rows.retain(|(_, graph)| graph.child_workflows().iter().all(|id| kept.contains(id)));
        if rows.len() == before {
            break;
        }
    }
    for (row, graph) in rows {
        let id = row.id.0;
        let w = row.workflow;
        let days = WorkflowDays::from_stored(&w.days);
        let mut names = |ids: &[i64]| -> Vec<String> {
            ids.iter()
                .filter_map(|id| calendars.get(id))
                .map(|c| {
                    used.insert(c.id.0, c.clone());
                    c.calendar.name.clone()
                })
                .collect()
        };
        let (only_on, never_on) = (names(&days.only_on), names(&days.never_on));
        out.push(WorkflowEntry {
            id: Some(id),
            appname: appnames.get(&w.job_group).cloned().unwrap_or_default(),
            name: w.name,
            schedule_type: w.schedule_type,
            schedule_conf: w.schedule_conf,
            time_zone: w.time_zone,
            misfire_strategy: w.misfire_strategy,
            max_instances: w.max_instances,
            overflow: w.overflow,
            alarm_email: w.alarm_email,
            only_on,
            never_on,
            exclusion_windows: days.exclusion_windows,
            graph,
        });
    }
    Ok((out, used.into_values().collect()))
}

/// What an import does with one workflow.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkflowItem {
    appname: String,
    name: String,
    /// `create` or `update`.
    action: &'static str,
    /// Its id here: the one updated, or (once applied) the one created.
    id: Option<i64>,
}

/// The file's workflows, checked against this admin.
pub(crate) struct WorkflowPlan {
    planned: Vec<(WorkflowEntry, GroupId, Option<WorkflowId>)>,
    pub(crate) items: Vec<WorkflowItem>,
}

impl WorkflowPlan {
    /// Checks every entry: its group exists once here and may be used, its graph holds, and
    /// each node names a job of the file (`file_jobs`: the entries' ids).
    pub(crate) async fn new(
        state: &MgmtState,
        principal: &Principal,
        entries: Vec<WorkflowEntry>,
        (file_jobs, calendars): (&BTreeSet<i32>, &CalendarPlan),
        problems: &mut Vec<String>,
    ) -> Result<Self, ApiError> {
        let mut plan = Self { planned: Vec::new(), items: Vec::new() };
        let groups = state.store.list_groups().await?;
        let existing = state.store.list_workflows(None).await?;
        let file_workflows: BTreeSet<i64> = entries.iter().filter_map(|e| e.id).collect();
        for entry in entries {
            let what = format!("workflow {} / {:?}", entry.appname, entry.name);
            let mut found = groups.iter().filter(|g| g.group.app_name == entry.appname).map(|g| g.id);
            let group = match (found.next(), found.next()) {
                (Some(group), None) => group,
                (Some(_), Some(_)) => {
                    problems.push(format!("{what}: several executor groups have AppName {}", entry.appname));
                    continue;
                }
                (None, _) => {
                    problems.push(format!("{what}: no executor group with AppName {} here", entry.appname));
                    continue;
                }
            };
            if !principal.may_use(group) {
                problems.push(format!("{what}: you have no permission on executor group {}", group.0));
                continue;
            }
            if !calendars.check_names(&what, entry.only_on.iter().chain(&entry.never_on), problems) {
                continue;
            }
            if let Err(error) = entry.graph.check() {
                problems.push(format!("{what}: {error}"));
                continue;
            }
            if let Some(node) = entry.graph.job_nodes().find(|n| !file_jobs.contains(&n.job_id)) {
                problems.push(format!(
                    "{what}: node {:?} runs job {}, which is not in the file",
                    node.name, node.job_id
                ));
                continue;
            }
            if let Some(node) = entry.graph.nodes.iter().find(|n| {
                n.kind == NodeKind::Workflow && !n.workflow_id.is_some_and(|id| file_workflows.contains(&id))
            }) {
                problems.push(format!(
                    "{what}: node {:?} starts workflow {}, which is not in the file",
                    node.name,
                    node.workflow_id.unwrap_or_default()
                ));
                continue;
            }
            let same =
                existing.iter().find(|w| w.workflow.job_group == group && w.workflow.name == entry.name);
            let id = same.map(|w| w.id);
            plan.items.push(WorkflowItem {
                appname: entry.appname.clone(),
                name: entry.name.clone(),
                action: if id.is_some() { "update" } else { "create" },
                id: id.map(|i| i.0),
            });
            plan.planned.push((entry, group, id));
        }
        Ok(plan)
    }

    /// Writes the workflows through the API's handlers, nodes mapped to this admin's jobs
    /// (`jobs`: the file's job id → the job here) and workflows (a started one is written
    /// before the one that starts it), each change in the audit log.
    pub(crate) async fn apply(
        &mut self,
        state: &Arc<MgmtState>,
        principal: &Principal,
        (jobs, calendars): (&HashMap<i32, JobId>, &CalendarPlan),
        client: &str,
    ) -> Result<(), ApiError> {
        let mut written: HashMap<i64, i64> = HashMap::new();
        let mut pending: Vec<usize> = (0..self.planned.len()).collect();
        while !pending.is_empty() {
            let ready = |i: &usize| {
                let (entry, ..) = &self.planned[*i];
                entry.graph.child_workflows().iter().all(|id| written.contains_key(id))
            };
            let Some(at) = pending.iter().position(ready) else {
                return Err(ApiError::BadRequest(
                    "workflows: the file's sub-workflows form a cycle; nothing more was written".to_owned(),
                ));
            };
            let index = pending.remove(at);
            let (entry, group, existing) = self.planned[index].clone();
            let from = entry.id;
            let id = self
                .apply_one(state, principal, (entry, group, existing), (jobs, calendars, &written), client)
                .await?;
            self.items[index].id = Some(id.0);
            if let Some(from) = from {
                written.insert(from, id.0);
            }
        }
        self.planned.clear();
        Ok(())
    }

    /// Writes one workflow; its id here.
    async fn apply_one(
        &self,
        state: &Arc<MgmtState>,
        principal: &Principal,
        (entry, group, existing): (WorkflowEntry, GroupId, Option<WorkflowId>),
        (jobs, calendars, written): (&HashMap<i32, JobId>, &CalendarPlan, &HashMap<i64, i64>),
        client: &str,
    ) -> Result<WorkflowId, ApiError> {
        let mut graph = entry.graph;
        for node in graph.nodes.iter_mut() {
            match node.kind {
                NodeKind::Job | NodeKind::Map => {
                    node.job_id = jobs.get(&node.job_id).map_or(node.job_id, |id| id.0)
                }
                NodeKind::Workflow => {
                    node.workflow_id = node.workflow_id.and_then(|w| written.get(&w).copied())
                }
                NodeKind::Switch | NodeKind::Approval => {}
            }
        }
        // The file's calendars exist here now (created or found by name).
        let days = WorkflowDays {
            only_on: calendars.ids(&entry.only_on),
            never_on: calendars.ids(&entry.never_on),
            exclusion_windows: entry.exclusion_windows,
        };
        let input = WorkflowInput {
            name: entry.name,
            job_group: group.0,
            schedule_type: entry.schedule_type,
            schedule_conf: entry.schedule_conf,
            time_zone: entry.time_zone,
            misfire_strategy: entry.misfire_strategy,
            max_instances: entry.max_instances,
            overflow: entry.overflow,
            alarm_email: Some(entry.alarm_email),
            days,
            alarms: Default::default(),
            graph,
        };
        let shared = State(Arc::clone(state));
        let (id, action, before) = match existing {
            Some(id) => {
                let before = state.store.load_workflow(id).await?.map(WorkflowView::of);
                let before = before.and_then(|v| serde_json::to_value(v).ok());
                drop(workflows::update(shared, principal.clone(), Path(id.0), ApiJson(input)).await?);
                (id, "workflow.update", before)
            }
            None => {
                let (_, Json(view)) = workflows::create(shared, principal.clone(), ApiJson(input)).await?;
                (WorkflowId(view.id), "workflow.create", None)
            }
        };
        let username = principal.user.user.username.clone();
        audit::record_workflow_change(state, client.to_owned(), username, action, id, before).await;
        Ok(id)
    }
}
