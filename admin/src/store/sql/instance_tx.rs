//! [`SqlInstanceTx`]: one workflow instance under its row lock (`FOR UPDATE`; on SQLite the
//! write lock) — every step that decides what an instance runs next, and the starts of its
//! sub-workflows' child instances, which are inserted in the same transaction as the run that
//! waits for them, so a crash leaves both or neither; and map nodes' items (`workflow_items.rs`).

use async_trait::async_trait;

use super::workflow_items;
use super::workflows::{
    CONTEXT, END_RUN, INSERT_INSTANCE, INSERT_RUN, LOAD, RUNS, SET_CONTEXT, SET_INSTANCE,
};
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::workflow_store::{InstanceTx, ItemTally, RunEnd};
use crate::store::{
    GroupId, InstanceId, InstanceStatus, ItemLog, JobId, LockedInstance, LogId, NewInstance, NewLog, NewRun,
    RunId, RunLog, RunRow, RunStatus, StoreError, TakenItem, WorkflowId, WorkflowRow,
};

static SET_PARENT: Sql =
    Sql::new("UPDATE jobwheel_workflow_instance SET parent_instance = ?, parent_run = ? WHERE id = ?");
static PARENT: Sql = Sql::new("SELECT parent_instance FROM jobwheel_workflow_instance WHERE id = ?");
static JOB_GROUP: Sql = Sql::new("SELECT job_group FROM xxl_job_info WHERE id = ?");
static RELINK: Sql = Sql::new(
    "UPDATE jobwheel_workflow_instance SET parent_run = ? WHERE parent_instance = ? AND parent_run = ?",
);

/// One instance under its row lock.
pub(super) struct SqlInstanceTx {
    tx: Tx,
    instance: LockedInstance,
    /// How the database numbers a multi-row insert's rows (`batch.rs`).
    id_step: i64,
}

impl SqlInstanceTx {
    pub(super) fn new(tx: Tx, instance: LockedInstance, id_step: i64) -> Self {
        Self { tx, instance, id_step }
    }
}

#[async_trait]
impl InstanceTx for SqlInstanceTx {
    fn instance(&self) -> &LockedInstance {
        &self.instance
    }

    async fn context(&mut self) -> Result<String, StoreError> {
        Ok(self.tx.ex().fetch_one::<(String,)>(&CONTEXT, &args![self.instance.id]).await?.0)
    }

    async fn runs(&mut self) -> Result<Vec<RunRow>, StoreError> {
        self.tx.ex().fetch_all(&RUNS, &args![self.instance.id]).await
    }

    async fn run_logs(&mut self, runs: &[RunId]) -> Result<Vec<RunLog>, StoreError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut q = QueryBuf::new(
            "SELECT l.run_id, l.log_id, x.trigger_code, x.handle_code, x.handle_msg, o.output \
            FROM jobwheel_workflow_log l JOIN xxl_job_log x ON x.id = l.log_id \
            LEFT JOIN jobwheel_workflow_output o ON o.log_id = l.log_id WHERE l.run_id IN (",
        );
        q.bind_list(runs.iter().copied()).push(") ORDER BY l.log_id");
        self.tx.ex().fetch_all(&q, q.args()).await
    }

    async fn end_run(&mut self, run: RunId, from: RunStatus, end: &RunEnd) -> Result<bool, StoreError> {
        let args = args![end.status, &end.output, &end.message, end.end_ms, run, from];
        Ok(self.tx.ex().execute(&END_RUN, &args).await? > 0)
    }

    async fn insert_runs(&mut self, runs: &[NewRun]) -> Result<Vec<RunId>, StoreError> {
        let mut ids = Vec::with_capacity(runs.len());
        for r in runs {
            let end_ms = if matches!(r.status, RunStatus::Due | RunStatus::Waiting) { 0 } else { r.due_ms };
            let args = args![
                self.instance.id,
                &r.node,
                r.attempt,
                r.status,
                r.due_ms,
                end_ms,
                &r.output,
                &r.message,
                r.deadline_ms
            ];
            ids.push(RunId(self.tx.ex().insert_id(&INSERT_RUN, &args).await?));
        }
        Ok(ids)
    }

    async fn set_instance(
        &mut self,
        status: InstanceStatus,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<(), StoreError> {
        let args = args![status, start_ms, end_ms, self.instance.id];
        self.tx.ex().execute(&SET_INSTANCE, &args).await?;
        self.instance.status = status;
        Ok(())
    }

    async fn set_context(&mut self, context: &str) -> Result<(), StoreError> {
        self.tx.ex().execute(&SET_CONTEXT, &args![context, self.instance.id]).await?;
        Ok(())
    }

    async fn load_workflow(&mut self, id: WorkflowId) -> Result<Option<WorkflowRow>, StoreError> {
        self.tx.ex().fetch_optional(&LOAD, &args![id]).await
    }

    async fn start_child(
        &mut self,
        new: &NewInstance,
        parent_run: RunId,
        now_ms: i64,
    ) -> Result<InstanceId, StoreError> {
        let args = args![
            new.workflow_id,
            InstanceStatus::Running,
            new.trigger_type,
            new.rerun_of,
            new.fire_time_ms,
            now_ms,
            &new.graph,
            &new.context
        ];
        let id = InstanceId(self.tx.ex().insert_id(&INSERT_INSTANCE, &args).await?);
        self.tx.ex().execute(&SET_PARENT, &args![self.instance.id, parent_run, id]).await?;
        Ok(id)
    }

    async fn depth(&mut self, max: usize) -> Result<usize, StoreError> {
        let (mut depth, mut next) = (0, self.instance.parent_instance);
        while let Some(parent) = next.filter(|_| depth < max) {
            depth += 1;
            let row: Option<(Option<i64>,)> = self.tx.ex().fetch_optional(&PARENT, &args![parent]).await?;
            next = row.and_then(|(p,)| p).map(InstanceId);
        }
        Ok(depth)
    }

    async fn relink_child(&mut self, from: RunId, to: RunId) -> Result<bool, StoreError> {
        Ok(self.tx.ex().execute(&RELINK, &args![to, self.instance.id, from]).await? > 0)
    }

    async fn job_group(&mut self, job: JobId) -> Result<Option<GroupId>, StoreError> {
        let row: Option<(GroupId,)> = self.tx.ex().fetch_optional(&JOB_GROUP, &args![job]).await?;
        Ok(row.map(|(group,)| group))
    }

    async fn insert_items(&mut self, run: RunId, items: &[String], now_ms: i64) -> Result<(), StoreError> {
        workflow_items::insert(&mut self.tx, run, items, now_ms).await
    }

    async fn fired_items(&mut self, run: RunId) -> Result<Vec<ItemLog>, StoreError> {
        workflow_items::fired(&mut self.tx, run).await
    }

    async fn end_items(&mut self, ends: &[(i64, RunEnd)]) -> Result<(), StoreError> {
        workflow_items::end(&mut self.tx, ends).await
    }

    async fn retry_items(&mut self, items: &[i64], due_ms: i64) -> Result<(), StoreError> {
        workflow_items::retry(&mut self.tx, items, due_ms).await
    }

    async fn take_items(
        &mut self,
        run: RunId,
        limit: u32,
        log: &NewLog,
        now_ms: i64,
    ) -> Result<Vec<TakenItem>, StoreError> {
        workflow_items::take(&mut self.tx, self.id_step, run, limit, log, now_ms).await
    }

    async fn items_left(&mut self, run: RunId) -> Result<bool, StoreError> {
        workflow_items::left(&mut self.tx, run).await
    }

    async fn item_outputs(&mut self, run: RunId) -> Result<Vec<Option<String>>, StoreError> {
        workflow_items::outputs(&mut self.tx, run).await
    }

    async fn item_tally(&mut self, run: RunId) -> Result<ItemTally, StoreError> {
        workflow_items::tally(&mut self.tx, run).await
    }

    async fn rerun_items(&mut self, from: RunId, to: RunId, now_ms: i64) -> Result<(), StoreError> {
        workflow_items::rerun(&mut self.tx, from, to, now_ms).await
    }

    async fn stop_items(&mut self, run: RunId, now_ms: i64) -> Result<Vec<LogId>, StoreError> {
        workflow_items::stop(&mut self.tx, run, now_ms).await
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        self.tx.commit().await
    }
}
