//! Sub-workflows' reads (`engine/workflow_children.rs`): an instance's child instances, and
//! the children that ended while their parent's run still waits — what the sweep finishes when
//! the admin that ended the child died before it told the parent.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::workflow_store::WorkflowChildStore;
use crate::store::{InstanceId, RunId, StoreError};

static CHILDREN: Sql =
    Sql::new("SELECT parent_run, id FROM jobwheel_workflow_instance WHERE parent_instance = ? ORDER BY id");
/// Waiting runs (status 8) through `i_run_status`, their children through `i_instance_parent_run`;
/// a child is over when SUCCEEDED (2), FAILED (3) or STOPPED (4).
static ENDED_CHILDREN: Sql = Sql::new(
    "SELECT c.id FROM jobwheel_workflow_run r JOIN jobwheel_workflow_instance c ON c.parent_run = r.id \
    WHERE r.status = 8 AND c.status IN (2, 3, 4) ORDER BY c.id LIMIT ?",
);

#[async_trait]
impl WorkflowChildStore for SqlStore {
    async fn children(&self, instance: InstanceId) -> Result<Vec<(RunId, InstanceId)>, StoreError> {
        self.ex().fetch_all(&CHILDREN, &args![instance]).await
    }

    async fn ended_children(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError> {
        let ids: Vec<i64> = self.ex().fetch_column(&ENDED_CHILDREN, &args![i64::from(limit)]).await?;
        Ok(ids.into_iter().map(InstanceId).collect())
    }
}
