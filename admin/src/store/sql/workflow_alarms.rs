//! The workflow sweep's reads for alarms (`engine/workflow_sweep.rs`): instances that ended in
//! a state worth telling, by end time through `i_instance_ended` (status, end_ms, id), read on
//! from a cursor so a sweep reads only what ended since its last look.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::workflow_store::WorkflowAlarmStore;
use crate::store::{InstanceId, InstanceRow, InstanceStatus, StoreError};

static ENDED: Sql = Sql::new(
    "SELECT id, workflow_id, status, trigger_type, rerun_of, parent_instance, parent_run, fire_time_ms, start_ms, end_ms, \
         graph, context \
    FROM jobwheel_workflow_instance WHERE status = ? AND (end_ms > ? OR (end_ms = ? AND id > ?)) \
    ORDER BY end_ms, id LIMIT ?",
);

#[async_trait]
impl WorkflowAlarmStore for SqlStore {
    async fn ended_instances(
        &self,
        status: InstanceStatus,
        after: (i64, InstanceId),
        limit: u32,
    ) -> Result<Vec<InstanceRow>, StoreError> {
        let (end_ms, id) = after;
        self.ex().fetch_all(&ENDED, &args![status, end_ms, end_ms, id, i64::from(limit)]).await
    }
}
