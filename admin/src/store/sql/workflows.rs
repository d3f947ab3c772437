//! Workflows, instances, node runs and their log links (`jobwheel_workflow*`). Decisions about
//! one instance run in [`SqlInstanceTx`], which holds the instance's row (`FOR UPDATE`; on
//! SQLite the write lock); starts hold the workflow's row, so `max_instances` is counted and
//! kept under one lock across admins.

use async_trait::async_trait;

use super::SqlStore;
use super::calendars;
use super::instance_tx::SqlInstanceTx;
use super::logs::INSERT_LOG;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::time::secs;
use crate::store::workflow_store::{Admission, InstanceTx, RunTake, WorkflowStore};
use crate::store::{
    DayRefs, GroupId, InstanceId, InstanceRow, InstanceStatus, LockedInstance, LogId, NewInstance,
    NewWorkflow, Page, Paged, RunId, RunRow, ScheduleStatus, StartOutcome, StoreError, WorkflowId,
    WorkflowRow,
};

macro_rules! workflow_columns {
    () => {
        "SELECT id, name, job_group, schedule_type, schedule_conf, time_zone, misfire_strategy, \
         max_instances, overflow, graph, status, trigger_last_time, trigger_next_time, author, update_ms, \
         alarm_email FROM jobwheel_workflow"
    };
}
macro_rules! instance_columns {
    () => {
        "SELECT id, workflow_id, status, trigger_type, rerun_of, parent_instance, parent_run, fire_time_ms, start_ms, end_ms, \
         graph, context \
         FROM jobwheel_workflow_instance"
    };
}
macro_rules! run_columns {
    () => {
        "SELECT id, instance_id, node, attempt, status, due_ms, fired_ms, end_ms, shards, log_id, output, message \
         FROM jobwheel_workflow_run"
    };
}

static INSERT: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow (name, job_group, schedule_type, schedule_conf, time_zone, misfire_strategy, \
    max_instances, overflow, graph, status, trigger_last_time, trigger_next_time, author, update_ms, \
    alarm_email) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
);
static UPDATE: Sql = Sql::new(
    "UPDATE jobwheel_workflow SET name = ?, job_group = ?, schedule_type = ?, schedule_conf = ?, time_zone = ?, \
    misfire_strategy = ?, max_instances = ?, overflow = ?, graph = ?, status = ?, trigger_last_time = ?, \
    trigger_next_time = ?, author = ?, update_ms = ?, alarm_email = ? WHERE id = ?",
);
pub(super) static LOAD: Sql = Sql::new(concat!(workflow_columns!(), " WHERE id = ?"));
static LOCK: Sql = Sql::new("SELECT id FROM jobwheel_workflow WHERE id = ? FOR UPDATE");
static DUE: Sql =
    Sql::new(concat!(workflow_columns!(), " WHERE status = ? AND trigger_next_time <= ? ORDER BY id"));
static ADVANCE: Sql = Sql::new(
    "UPDATE jobwheel_workflow SET trigger_last_time = ?, trigger_next_time = ?, \
    status = CASE WHEN ? = 1 THEN ? ELSE status END WHERE id = ? AND trigger_next_time = ? AND status = ?",
);
static RUNNING: Sql =
    Sql::new("SELECT COUNT(*) FROM jobwheel_workflow_instance WHERE workflow_id = ? AND status = 1");
static OLDEST_QUEUED: Sql = Sql::new(
    "SELECT id FROM jobwheel_workflow_instance WHERE workflow_id = ? AND status = 0 ORDER BY id LIMIT 1",
);
static QUEUED_WORKFLOWS: Sql = Sql::new(
    "SELECT DISTINCT workflow_id FROM jobwheel_workflow_instance WHERE status = 0 ORDER BY workflow_id",
);
static ADMIT: Sql =
    Sql::new("UPDATE jobwheel_workflow_instance SET status = 1, start_ms = ? WHERE id = ? AND status = 0");
pub(super) static INSERT_INSTANCE: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow_instance (workflow_id, status, trigger_type, rerun_of, fire_time_ms, start_ms, \
    graph, context) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
);
static LOAD_INSTANCE: Sql = Sql::new(concat!(instance_columns!(), " WHERE id = ?"));
static LOCK_INSTANCE: Sql = Sql::new(
    "SELECT id, status, parent_instance, parent_run, start_ms, end_ms, graph FROM jobwheel_workflow_instance \
    WHERE id = ? FOR UPDATE",
);
static COUNT_INSTANCES: Sql =
    Sql::new("SELECT COUNT(*) FROM jobwheel_workflow_instance WHERE workflow_id = ?");
static PAGE_INSTANCES: Sql =
    Sql::new(concat!(instance_columns!(), " WHERE workflow_id = ? ORDER BY id DESC LIMIT ? OFFSET ?"));
pub(super) static SET_INSTANCE: Sql =
    Sql::new("UPDATE jobwheel_workflow_instance SET status = ?, start_ms = ?, end_ms = ? WHERE id = ?");
pub(super) static SET_CONTEXT: Sql =
    Sql::new("UPDATE jobwheel_workflow_instance SET context = ? WHERE id = ?");
pub(super) static CONTEXT: Sql = Sql::new("SELECT context FROM jobwheel_workflow_instance WHERE id = ?");
/// A scheduled start that did not happen, kept as an instance (its alarm is raised by the sweep
/// that finds it ended: `engine/workflow_sweep.rs`).
static INSERT_MISSED: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow_instance (workflow_id, status, trigger_type, fire_time_ms, start_ms, end_ms, \
    graph, context) VALUES (?, ?, ?, ?, 0, ?, ?, '{}')",
);
pub(super) static RUNS: Sql = Sql::new(concat!(run_columns!(), " WHERE instance_id = ? ORDER BY id"));
pub(super) static INSERT_RUN: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow_run (instance_id, node, attempt, status, due_ms, end_ms, output, message, \
    deadline_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
);
pub(super) static END_RUN: Sql = Sql::new(
    "UPDATE jobwheel_workflow_run SET status = ?, output = ?, message = ?, end_ms = ? WHERE id = ? AND status = ?",
);
static TAKE_RUN: Sql = Sql::new(
    "UPDATE jobwheel_workflow_run SET status = 1, fired_ms = ?, deadline_ms = ? \
    WHERE id = ? AND status = 0 AND due_ms <= ?",
);
static SET_RUN_LOG: Sql = Sql::new("UPDATE jobwheel_workflow_run SET log_id = ?, shards = 1 WHERE id = ?");
static SET_SHARDS: Sql = Sql::new("UPDATE jobwheel_workflow_run SET shards = ? WHERE id = ?");
static LINK: Sql = Sql::new("INSERT INTO jobwheel_workflow_log (log_id, run_id) VALUES (?, ?)");
static LINKED: Sql = Sql::new("SELECT COUNT(*) FROM jobwheel_workflow_log WHERE log_id = ?");
static DUE_RUNS: Sql = Sql::new(concat!(
    run_columns!(),
    " WHERE status = 0 AND due_ms <= ? AND instance_id IN \
    (SELECT id FROM jobwheel_workflow_instance WHERE status = 1) ORDER BY due_ms, id LIMIT ?"
));
/// A fired run whose every shard's log row is over: a result stored, or a failed trigger.
static SETTLED: Sql = Sql::new(
    "SELECT r.id, r.instance_id FROM jobwheel_workflow_run r WHERE r.status = 1 AND r.shards > 0 \
    AND r.shards = (SELECT COUNT(*) FROM jobwheel_workflow_log l JOIN xxl_job_log x ON x.id = l.log_id \
    WHERE l.run_id = r.id AND (x.handle_code <> 0 OR x.trigger_code NOT IN (0, 200))) ORDER BY r.id LIMIT ?",
);
static OVERDUE: Sql = Sql::new(
    "SELECT id, instance_id FROM jobwheel_workflow_run \
    WHERE status = 1 AND deadline_ms > 0 AND deadline_ms <= ? ORDER BY id LIMIT ?",
);
static OVERDUE_APPROVALS: Sql = Sql::new(
    "SELECT id, instance_id FROM jobwheel_workflow_run \
    WHERE status = 8 AND deadline_ms > 0 AND deadline_ms <= ? ORDER BY id LIMIT ?",
);
static IDLE: Sql = Sql::new(
    "SELECT i.id FROM jobwheel_workflow_instance i WHERE i.status = 1 AND NOT EXISTS \
    (SELECT 1 FROM jobwheel_workflow_run r WHERE r.instance_id = i.id AND r.status IN (0, 1, 8)) ORDER BY i.id LIMIT ?",
);
static OUTPUT_STORED: Sql = Sql::new("SELECT COUNT(*) FROM jobwheel_workflow_output WHERE log_id = ?");
static STORE_OUTPUT: Sql = Sql::new("INSERT INTO jobwheel_workflow_output (log_id, output) VALUES (?, ?)");
static DELETE_OUTPUTS: Sql = Sql::new(
    "DELETE FROM jobwheel_workflow_output WHERE log_id IN (SELECT l.log_id FROM jobwheel_workflow_log l \
    JOIN jobwheel_workflow_run r ON r.id = l.run_id JOIN jobwheel_workflow_instance i ON i.id = r.instance_id \
    WHERE i.workflow_id = ?)",
);
static DELETE_LINKS: Sql = Sql::new(
    "DELETE FROM jobwheel_workflow_log WHERE run_id IN (SELECT r.id FROM jobwheel_workflow_run r \
    JOIN jobwheel_workflow_instance i ON i.id = r.instance_id WHERE i.workflow_id = ?)",
);
static DELETE_RUNS: Sql = Sql::new(
    "DELETE FROM jobwheel_workflow_run WHERE instance_id IN \
    (SELECT id FROM jobwheel_workflow_instance WHERE workflow_id = ?)",
);
static DELETE_INSTANCES: Sql = Sql::new("DELETE FROM jobwheel_workflow_instance WHERE workflow_id = ?");
static DELETE: Sql = Sql::new("DELETE FROM jobwheel_workflow WHERE id = ?");

fn workflow_args(w: &NewWorkflow) -> Vec<crate::store::db::Arg<'_>> {
    args![
        &w.name,
        w.job_group,
        &w.schedule_type,
        &w.schedule_conf,
        &w.time_zone,
        &w.misfire_strategy,
        w.max_instances,
        &w.overflow,
        &w.graph,
        w.status,
        w.trigger_last_time,
        w.trigger_next_time,
        &w.author,
        w.update_ms,
        &w.alarm_email
    ]
    .to_vec()
}

async fn running(tx: &mut Tx, workflow: WorkflowId) -> Result<i64, StoreError> {
    Ok(tx.ex().fetch_one::<(i64,)>(&RUNNING, &args![workflow]).await?.0)
}

#[async_trait]
impl WorkflowStore for SqlStore {
    async fn add_workflow(&self, w: &NewWorkflow) -> Result<WorkflowId, StoreError> {
        let mut tx = self.db.begin().await?;
        let id = WorkflowId(tx.ex().insert_id(&INSERT, &workflow_args(w)).await?);
        calendars::set_workflow_days(&mut tx, id, &w.days).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn update_workflow(&self, id: WorkflowId, w: &NewWorkflow) -> Result<bool, StoreError> {
        let mut args = workflow_args(w);
        args.push(id.into());
        let mut tx = self.db.begin().await?;
        let updated = tx.ex().execute(&UPDATE, &args).await? > 0;
        if updated {
            calendars::set_workflow_days(&mut tx, id, &w.days).await?;
        }
        tx.commit().await?;
        Ok(updated)
    }

    async fn delete_workflow(&self, id: WorkflowId) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        tx.ex().execute(&DELETE_OUTPUTS, &args![id]).await?;
        tx.ex().execute(&DELETE_LINKS, &args![id]).await?;
        tx.ex().execute(&super::workflow_items::DELETE_ITEMS, &args![id]).await?;
        tx.ex().execute(&DELETE_RUNS, &args![id]).await?;
        tx.ex().execute(&DELETE_INSTANCES, &args![id]).await?;
        calendars::set_workflow_days(&mut tx, id, &DayRefs::default()).await?;
        let deleted = tx.ex().execute(&DELETE, &args![id]).await? > 0;
        tx.commit().await?;
        Ok(deleted)
    }

    async fn load_workflow(&self, id: WorkflowId) -> Result<Option<WorkflowRow>, StoreError> {
        let row: Option<WorkflowRow> = self.ex().fetch_optional(&LOAD, &args![id]).await?;
        Ok(self.with_days(row.into_iter().collect()).await?.pop())
    }

    async fn list_workflows(&self, groups: Option<&[GroupId]>) -> Result<Vec<WorkflowRow>, StoreError> {
        let mut q = QueryBuf::new(workflow_columns!());
        if let Some(groups) = groups {
            if groups.is_empty() {
                return Ok(Vec::new());
            }
            q.push(" WHERE job_group IN (").bind_list(groups.iter().copied()).push(")");
        }
        q.push(" ORDER BY id");
        let rows = self.ex().fetch_all(&q, q.args()).await?;
        self.with_days(rows).await
    }

    async fn due_workflows(&self, max_next_time_ms: i64) -> Result<Vec<WorkflowRow>, StoreError> {
        let rows = self.ex().fetch_all(&DUE, &args![ScheduleStatus::Running, max_next_time_ms]).await?;
        self.with_days(rows).await
    }

    async fn start_instance(
        &self,
        new: &NewInstance,
        admission: Admission,
    ) -> Result<StartOutcome, StoreError> {
        let mut tx = self.db.begin().await?;
        let locked: Option<(i64,)> = tx.ex().fetch_optional(&LOCK, &args![new.workflow_id]).await?;
        if locked.is_none() {
            return Ok(StartOutcome::Gone);
        }
        if let Some((expected, last, next, stop)) = admission.advance {
            let args = args![
                last,
                next,
                i32::from(stop),
                ScheduleStatus::Stopped,
                new.workflow_id,
                expected,
                ScheduleStatus::Running
            ];
            if tx.ex().execute(&ADVANCE, &args).await? == 0 {
                return Ok(StartOutcome::Gone);
            }
        }
        let full = running(&mut tx, new.workflow_id).await? >= i64::from(admission.max);
        let status = match (full, admission.queue) {
            (false, _) => InstanceStatus::Running,
            (true, true) => InstanceStatus::Queued,
            (true, false) => {
                // The schedule still moves on: a skipped start is not retried. A scheduled one
                // is kept as MISSED, so it is seen and alarmed.
                if let Some((due, ..)) = admission.advance.filter(|_| admission.keep_missed) {
                    // Its fire time is the scheduled one it missed, even when found late.
                    let args = args![
                        new.workflow_id,
                        InstanceStatus::Missed,
                        new.trigger_type,
                        due,
                        admission.now_ms,
                        &new.graph
                    ];
                    tx.ex().execute(&INSERT_MISSED, &args).await?;
                }
                tx.commit().await?;
                return Ok(StartOutcome::Skipped);
            }
        };
        let start_ms = if status == InstanceStatus::Running { admission.now_ms } else { 0 };
        let args = args![
            new.workflow_id,
            status,
            new.trigger_type,
            new.rerun_of,
            new.fire_time_ms,
            start_ms,
            &new.graph,
            &new.context
        ];
        let id = InstanceId(tx.ex().insert_id(&INSERT_INSTANCE, &args).await?);
        tx.commit().await?;
        Ok(if status == InstanceStatus::Running {
            StartOutcome::Started(id)
        } else {
            StartOutcome::Queued(id)
        })
    }

    async fn admit_queued(
        &self,
        workflow: WorkflowId,
        max: i32,
        now_ms: i64,
    ) -> Result<Option<InstanceId>, StoreError> {
        let mut tx = self.db.begin().await?;
        let locked: Option<(i64,)> = tx.ex().fetch_optional(&LOCK, &args![workflow]).await?;
        if locked.is_none() || running(&mut tx, workflow).await? >= i64::from(max) {
            return Ok(None);
        }
        let Some((id,)) = tx.ex().fetch_optional::<(i64,)>(&OLDEST_QUEUED, &args![workflow]).await? else {
            return Ok(None);
        };
        let admitted = tx.ex().execute(&ADMIT, &args![now_ms, id]).await? > 0;
        tx.commit().await?;
        Ok(admitted.then_some(InstanceId(id)))
    }

    async fn queued_workflows(&self) -> Result<Vec<WorkflowId>, StoreError> {
        let ids: Vec<i64> = self.ex().fetch_column(&QUEUED_WORKFLOWS, &[]).await?;
        Ok(ids.into_iter().map(WorkflowId).collect())
    }

    async fn begin_instance(&self, id: InstanceId) -> Result<Option<Box<dyn InstanceTx>>, StoreError> {
        let mut tx = self.db.begin().await?;
        let Some(instance) = tx.ex().fetch_optional::<LockedInstance>(&LOCK_INSTANCE, &args![id]).await?
        else {
            return Ok(None);
        };
        Ok(Some(Box::new(SqlInstanceTx::new(tx, instance, self.db.id_step()))))
    }

    async fn load_instance(&self, id: InstanceId) -> Result<Option<InstanceRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_INSTANCE, &args![id]).await
    }

    async fn page_instances(
        &self,
        workflow: WorkflowId,
        page: Page,
    ) -> Result<Paged<InstanceRow>, StoreError> {
        let total = self.ex().fetch_one::<(i64,)>(&COUNT_INSTANCES, &args![workflow]).await?.0;
        let args = args![workflow, i64::from(page.limit), i64::from(page.offset)];
        let rows = self.ex().fetch_all(&PAGE_INSTANCES, &args).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn instance_runs(&self, id: InstanceId) -> Result<Vec<RunRow>, StoreError> {
        self.ex().fetch_all(&RUNS, &args![id]).await
    }

    async fn take_runs(&self, takes: &[RunTake], now_ms: i64) -> Result<Vec<Option<LogId>>, StoreError> {
        let mut tx = self.db.begin().await?;
        let mut taken = Vec::with_capacity(takes.len());
        for take in takes {
            let args = args![now_ms, take.deadline_ms, take.run, now_ms];
            if tx.ex().execute(&TAKE_RUN, &args).await? == 0 {
                taken.push(None);
                continue;
            }
            let log = &take.log;
            let args = args![log.job_group, log.job_id, secs(log.trigger_time)];
            let log_id = LogId(tx.ex().insert_id(&INSERT_LOG, &args).await?);
            tx.ex().execute(&LINK, &args![log_id, take.run]).await?;
            tx.ex().execute(&SET_RUN_LOG, &args![log_id, take.run]).await?;
            taken.push(Some(log_id));
        }
        tx.commit().await?;
        Ok(taken)
    }

    async fn link_logs(&self, run: RunId, logs: &[LogId], shards: i32) -> Result<(), StoreError> {
        let mut tx = self.db.begin().await?;
        for log in logs {
            if tx.ex().fetch_one::<(i64,)>(&LINKED, &args![*log]).await?.0 == 0 {
                tx.ex().execute(&LINK, &args![*log, run]).await?;
            }
        }
        tx.ex().execute(&SET_SHARDS, &args![shards, run]).await?;
        tx.commit().await
    }

    async fn store_outputs(&self, outputs: &[(LogId, &str)]) -> Result<(), StoreError> {
        if outputs.is_empty() {
            return Ok(());
        }
        let mut tx = self.db.begin().await?;
        for (log, output) in outputs {
            // The first stored wins: a repeated callback carries the same run's output again.
            if tx.ex().fetch_one::<(i64,)>(&OUTPUT_STORED, &args![*log]).await?.0 == 0 {
                tx.ex().execute(&STORE_OUTPUT, &args![*log, *output]).await?;
            }
        }
        tx.commit().await
    }

    async fn runs_of_logs(&self, logs: &[LogId]) -> Result<Vec<(RunId, InstanceId)>, StoreError> {
        if logs.is_empty() {
            return Ok(Vec::new());
        }
        // A node run's log rows are linked; a map item's log row is its item's.
        let mut q = QueryBuf::new(
            "SELECT r.id, r.instance_id FROM jobwheel_workflow_log l \
            JOIN jobwheel_workflow_run r ON r.id = l.run_id WHERE l.log_id IN (",
        );
        q.bind_list(logs.iter().copied()).push(
            ") UNION SELECT r.id, r.instance_id FROM jobwheel_workflow_item i \
            JOIN jobwheel_workflow_run r ON r.id = i.run_id WHERE i.log_id IN (",
        );
        q.bind_list(logs.iter().copied()).push(")");
        self.ex().fetch_all(&q, q.args()).await
    }

    async fn due_runs(&self, now_ms: i64, limit: u32) -> Result<Vec<RunRow>, StoreError> {
        self.ex().fetch_all(&DUE_RUNS, &args![now_ms, i64::from(limit)]).await
    }

    async fn settled_runs(&self, limit: u32) -> Result<Vec<(RunId, InstanceId)>, StoreError> {
        self.ex().fetch_all(&SETTLED, &args![i64::from(limit)]).await
    }

    async fn overdue_runs(&self, now_ms: i64, limit: u32) -> Result<Vec<(RunId, InstanceId)>, StoreError> {
        self.ex().fetch_all(&OVERDUE, &args![now_ms, i64::from(limit)]).await
    }

    async fn overdue_approvals(
        &self,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(RunId, InstanceId)>, StoreError> {
        self.ex().fetch_all(&OVERDUE_APPROVALS, &args![now_ms, i64::from(limit)]).await
    }

    async fn idle_instances(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError> {
        let ids: Vec<i64> = self.ex().fetch_column(&IDLE, &args![i64::from(limit)]).await?;
        Ok(ids.into_iter().map(InstanceId).collect())
    }
}
