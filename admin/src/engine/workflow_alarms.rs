//! [`InstanceAlarms`]: the workflow sweep's last step — the alarms of instances that ended
//! FAILED and of scheduled starts kept as MISSED (docs/workflows.md, "Alarms").
//!
//! Nothing waits in a claim state: each sweep reads the instances that ended in those states
//! since its last look, by end time (`i_instance_ended`), and raises each on the alarm desk,
//! whose event key (`WORKFLOW_FAILED:instance:<id>:<end_ms>`) is recorded once — so of several
//! admins sweeping together one raises it, and a second failure after a rerun is a new event.
//! Each look reaches [`LOOK_BACK_MS`] behind the sweep's time, for an end stored by a
//! transaction that committed late; a sweep that starts looks back [`CATCH_UP_MS`], so an
//! instance that ended just before an admin died is still told by the next sweep of any admin.
//! The raising runs in a task of its own, so a slow mail server never holds up the sweep.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio_util::task::TaskTracker;

use super::EngineError;
use super::alarm_desk::AlarmDesk;
use crate::alarm::{Alarm, FailedNode, WorkflowAlarmEvent, ended_key, ended_kind};
use crate::store::{InstanceId, InstanceRow, InstanceStatus, RunStatus, Store};
use crate::workflow::{NodeState, node_states};

/// Instances of one state one look reads at most.
const BATCH: u32 = 200;
/// How far each look reaches behind the sweep's time.
pub const LOOK_BACK_MS: i64 = 30_000;
/// How far the first look of an admin reaches back.
pub const CATCH_UP_MS: i64 = 600_000;

/// The ended states that are told.
const TOLD: [InstanceStatus; 2] = [InstanceStatus::Failed, InstanceStatus::Missed];

/// Where the looks have got to.
#[derive(Default)]
struct Scan {
    /// Per told state: read on after this (end time, id); none before the first look.
    after: [Option<(i64, InstanceId)>; 2],
    /// Instances looked at within the look-back, with the end they were looked at for.
    seen: HashMap<InstanceId, i64>,
}

/// Raises the alarms of instances that ended failed or missed.
pub(super) struct InstanceAlarms {
    store: Arc<dyn Store>,
    desk: Arc<AlarmDesk>,
    tracker: TaskTracker,
    scan: Mutex<Scan>,
}

impl InstanceAlarms {
    pub(super) fn new(store: Arc<dyn Store>, desk: Arc<AlarmDesk>, tracker: TaskTracker) -> Self {
        Self { store, desk, tracker, scan: Mutex::default() }
    }

    /// Looks at what ended since the last look and raises what no admin raised yet; answers
    /// how many it raised.
    pub(super) async fn raise_ended(&self, now_ms: i64) -> Result<usize, EngineError> {
        let mut raised = 0;
        for (slot, status) in TOLD.into_iter().enumerate() {
            for instance in self.look(slot, status, now_ms).await? {
                if self.store.event_recorded(&ended_key(ended_kind(&instance), &instance)).await? {
                    continue; // raised by another admin, or before a restart
                }
                raised += 1;
                let (store, desk) = (Arc::clone(&self.store), Arc::clone(&self.desk));
                self.tracker.spawn(async move {
                    let id = instance.id;
                    let raised = match alarm_event(store.as_ref(), instance).await {
                        Ok(Some(event)) => {
                            desk.alarm(&Alarm::workflow_ended(event), now_ms).await.map(|_| ())
                        }
                        Ok(None) => Ok(()), // the workflow is gone
                        Err(error) => Err(error),
                    };
                    if let Err(error) = raised {
                        tracing::error!(instance = id.0, %error, "workflow alarm not raised");
                    }
                });
            }
        }
        Ok(raised)
    }

    /// The instances in `status` that ended since the last look and were not looked at yet.
    async fn look(
        &self,
        slot: usize,
        status: InstanceStatus,
        now_ms: i64,
    ) -> Result<Vec<InstanceRow>, EngineError> {
        let from = self.scan.lock().expect("scan lock").after[slot]
            .unwrap_or((now_ms.saturating_sub(CATCH_UP_MS), InstanceId(0)));
        let rows = self.store.ended_instances(status, from, BATCH).await?;
        let mut scan = self.scan.lock().expect("scan lock");
        // A full batch reads on from its last row; otherwise everything up to now was read, and
        // the next look reaches back again for late commits.
        scan.after[slot] = match rows.last() {
            Some(last) if rows.len() == BATCH as usize => Some((last.end_ms, last.id)),
            _ => Some((now_ms.saturating_sub(LOOK_BACK_MS), InstanceId(0))),
        };
        let oldest = scan.after.iter().flatten().map(|(end, _)| *end).min().unwrap_or(now_ms);
        scan.seen.retain(|_, end| *end >= oldest);
        Ok(rows.into_iter().filter(|i| scan.seen.insert(i.id, i.end_ms) != Some(i.end_ms)).collect())
    }
}

/// The alarm of `instance`: its workflow, group and failed nodes; `None` if the workflow is gone.
async fn alarm_event(
    store: &dyn Store,
    instance: InstanceRow,
) -> Result<Option<WorkflowAlarmEvent>, EngineError> {
    let Some(workflow) = store.load_workflow(instance.workflow_id).await? else { return Ok(None) };
    let group = store.load_group(workflow.workflow.job_group).await?;
    let runs = store.instance_runs(instance.id).await?;
    let failed_nodes = node_states(&runs, &[])
        .into_iter()
        .filter(|(_, state)| *state == NodeState::Failed)
        .map(|(node, _)| {
            let message = runs
                .iter()
                .filter(|r| r.node == node && r.status == RunStatus::Failed)
                .max_by_key(|r| r.id)
                .and_then(|r| r.message.clone())
                .unwrap_or_default();
            FailedNode { node, message }
        })
        .collect();
    Ok(Some(WorkflowAlarmEvent { workflow, group, instance, failed_nodes }))
}
