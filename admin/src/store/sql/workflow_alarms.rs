//! Alarm states of workflow instances (`jobwheel_workflow_instance.alarm_status`): the waiting
//! ones are found through `i_instance_alarm`, and a claim is a guarded update, so of several
//! admins sweeping one sends each alarm.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::workflow_store::WorkflowAlarmStore;
use crate::store::{InstanceId, InstanceRow, StoreError, instance_alarm};

static PENDING: Sql = Sql::new(
    "SELECT id, workflow_id, status, trigger_type, rerun_of, fire_time_ms, start_ms, end_ms, graph, context \
    FROM jobwheel_workflow_instance WHERE alarm_status = ? ORDER BY id LIMIT ?",
);
static SET: Sql =
    Sql::new("UPDATE jobwheel_workflow_instance SET alarm_status = ? WHERE id = ? AND alarm_status = ?");

#[async_trait]
impl WorkflowAlarmStore for SqlStore {
    async fn pending_workflow_alarms(&self, limit: u32) -> Result<Vec<InstanceRow>, StoreError> {
        self.ex().fetch_all(&PENDING, &args![instance_alarm::PENDING, i64::from(limit)]).await
    }

    async fn set_workflow_alarm(&self, id: InstanceId, from: i32, to: i32) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&SET, &args![to, id, from]).await? > 0)
    }
}
