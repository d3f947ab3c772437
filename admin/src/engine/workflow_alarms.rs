//! The workflow sweep's last step: alarms of instances that failed and of scheduled starts
//! that were missed (docs/workflows.md, "Alarms"). Each waits in `alarm_status` PENDING; an
//! admin claims it (PENDING → SENDING, guarded, so of several admins one raises it) and raises
//! it on the alarm desk in a task of its own, so a slow mail server never holds up the sweep's
//! firing. Whether it counted as sent is stored as SENT or FAILED, as upstream's `alarm_status`
//! 2 and 3.

use std::sync::Arc;

use super::EngineError;
use super::workflow_advance::node_states;
use super::workflows::Workflows;
use crate::alarm::{Alarm, FailedNode, WorkflowAlarmEvent};
use crate::store::{InstanceRow, RunStatus, instance_alarm as alarm};
use crate::workflow::NodeState;

/// Alarms one sweep claims at most.
const ALARM_BATCH: u32 = 100;

impl Workflows {
    /// Claims the waiting alarms and starts their delivery; answers how many it claimed.
    pub(super) async fn send_alarms(self: &Arc<Self>) -> Result<usize, EngineError> {
        let mut claimed = 0;
        for instance in self.store.pending_workflow_alarms(ALARM_BATCH).await? {
            if !self.store.set_workflow_alarm(instance.id, alarm::PENDING, alarm::SENDING).await? {
                continue;
            }
            claimed += 1;
            let this = Arc::clone(self);
            self.tracker.spawn(async move {
                let id = instance.id;
                let sent = match this.alarm_event(instance).await {
                    Ok(Some(event)) => {
                        match this.desk.alarm(&Alarm::workflow_ended(event), this.clock.now_ms()).await {
                            Ok(outcome) => outcome.counted_as_sent(),
                            Err(error) => {
                                tracing::error!(instance = id.0, %error, "workflow alarm not raised");
                                false
                            }
                        }
                    }
                    Ok(None) => false,
                    Err(error) => {
                        tracing::error!(instance = id.0, %error, "workflow alarm not built");
                        false
                    }
                };
                let to = if sent { alarm::SENT } else { alarm::FAILED };
                if let Err(error) = this.store.set_workflow_alarm(id, alarm::SENDING, to).await {
                    tracing::error!(instance = id.0, %error, "workflow alarm outcome not stored");
                }
            });
        }
        Ok(claimed)
    }

    /// The alarm of `instance`: its workflow, group and failed nodes; `None` if the workflow
    /// is gone.
    async fn alarm_event(&self, instance: InstanceRow) -> Result<Option<WorkflowAlarmEvent>, EngineError> {
        let Some(workflow) = self.store.load_workflow(instance.workflow_id).await? else { return Ok(None) };
        let group = self.store.load_group(workflow.workflow.job_group).await?;
        let runs = self.store.instance_runs(instance.id).await?;
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
}
