//! Backfills (`jobwheel_backfill`, `jobwheel_backfill_fire`; docs/backfill.md). Times are
//! handed out in [`SqlBackfillTx`], under the backfill's row (`FOR UPDATE`; on SQLite the
//! write lock), in one transaction with the cursor that moves past them.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::{
    BackfillKind, BackfillProgress, BackfillRow, BackfillStatus, BackfillStore, BackfillTx, FireRun, GroupId,
    NewBackfill, StoreError, UnsentFire,
};

macro_rules! backfill_columns {
    () => {
        "SELECT id, target_kind, target_id, job_group, from_ms, to_ms, parallelism, rerun_existing, status, \
         cursor_ms, total, handed, skipped, message, author, created_ms, end_ms FROM jobwheel_backfill"
    };
}

static INSERT: Sql = Sql::new(
    "INSERT INTO jobwheel_backfill (target_kind, target_id, job_group, from_ms, to_ms, parallelism, \
    rerun_existing, status, cursor_ms, total, handed, skipped, message, author, created_ms, end_ms) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
);
static LOAD: Sql = Sql::new(concat!(backfill_columns!(), " WHERE id = ?"));
static LOCK: Sql = Sql::new(concat!(backfill_columns!(), " WHERE id = ? FOR UPDATE"));
static RUNNING: Sql = Sql::new("SELECT id FROM jobwheel_backfill WHERE status = 0 ORDER BY id LIMIT ?");
static CANCEL: Sql =
    Sql::new("UPDATE jobwheel_backfill SET status = 2, end_ms = ? WHERE id = ? AND status = 0");
static ADVANCE: Sql = Sql::new(
    "UPDATE jobwheel_backfill SET cursor_ms = ?, handed = handed + ?, skipped = skipped + ? WHERE id = ?",
);
static END: Sql =
    Sql::new("UPDATE jobwheel_backfill SET status = ?, message = ?, end_ms = ? WHERE id = ? AND status = 0");
static ADD_FIRE: Sql = Sql::new(
    "INSERT INTO jobwheel_backfill_fire (backfill_id, scheduled_ms, claimed_ms) VALUES (?, ?, ?) RETURNING id",
);
static SET_LOG: Sql = Sql::new("UPDATE jobwheel_backfill_fire SET log_id = ? WHERE id = ?");
static SET_INSTANCE: Sql = Sql::new("UPDATE jobwheel_backfill_fire SET instance_id = ? WHERE id = ?");
static UNSENT: Sql = Sql::new(
    "SELECT f.id, f.backfill_id, f.scheduled_ms, f.claimed_ms FROM jobwheel_backfill_fire f \
    JOIN jobwheel_backfill b ON b.id = f.backfill_id \
    WHERE b.status = 0 AND f.log_id IS NULL AND f.instance_id IS NULL AND f.claimed_ms < ? ORDER BY f.id LIMIT ?",
);
static RECLAIM: Sql = Sql::new(
    "UPDATE jobwheel_backfill_fire SET claimed_ms = ? \
    WHERE id = ? AND claimed_ms = ? AND log_id IS NULL AND instance_id IS NULL",
);
/// The handed-out times of one backfill whose run satisfies the condition. A fire's run is over
/// when its log row has a result or a failed trigger, or its instance ended (SUCCEEDED 2,
/// FAILED 3, STOPPED 4, MISSED 5); a log row that is gone counts as over, log row 0 (nothing
/// ran) as failed.
macro_rules! fires {
    ($cond:literal) => {
        concat!(
            "SELECT COUNT(*) FROM jobwheel_backfill_fire f LEFT JOIN xxl_job_log x ON x.id = f.log_id \
             LEFT JOIN jobwheel_workflow_instance i ON i.id = f.instance_id WHERE f.backfill_id = ? AND ",
            $cond
        )
    };
}
static IN_FLIGHT: Sql = Sql::new(fires!(
    "((f.log_id IS NULL AND f.instance_id IS NULL) \
     OR (x.id IS NOT NULL AND x.handle_code = 0 AND x.trigger_code IN (0, 200)) OR i.status IN (0, 1))"
));
static SUCCEEDED: Sql = Sql::new(fires!("(x.handle_code = 200 OR i.status = 2)"));
static FAILED: Sql = Sql::new(fires!(
    "((x.id IS NOT NULL AND (x.handle_code NOT IN (0, 200) OR x.trigger_code NOT IN (0, 200))) \
     OR i.status IN (3, 4, 5) OR f.log_id = 0)"
));
static JOB_RAN: Sql = Sql::new(
    "SELECT COUNT(*) FROM xxl_job_log WHERE job_id = ? AND trigger_time >= TS(?) AND trigger_time < TS(?) \
    AND trigger_code = 200",
);
static JOB_BACKFILLED: Sql = Sql::new(
    "SELECT COUNT(*) FROM jobwheel_backfill_fire f JOIN jobwheel_backfill b ON b.id = f.backfill_id \
    JOIN xxl_job_log x ON x.id = f.log_id \
    WHERE f.scheduled_ms = ? AND b.target_kind = 'JOB' AND b.target_id = ? AND x.trigger_code = 200",
);
static WORKFLOW_RAN: Sql = Sql::new(
    "SELECT COUNT(*) FROM jobwheel_workflow_instance WHERE workflow_id = ? AND fire_time_ms = ? AND status <> 5",
);

#[async_trait]
impl BackfillStore for SqlStore {
    async fn add_backfill(&self, b: &NewBackfill) -> Result<i64, StoreError> {
        let args = args![
            &b.target_kind,
            b.target_id,
            b.job_group,
            b.from_ms,
            b.to_ms,
            b.parallelism,
            b.rerun_existing,
            b.status,
            b.cursor_ms,
            b.total,
            b.handed,
            b.skipped,
            &b.message,
            &b.author,
            b.created_ms,
            b.end_ms
        ];
        let mut tx = self.db.begin().await?;
        let id = tx.ex().insert_id(&INSERT, &args).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn load_backfill(&self, id: i64) -> Result<Option<BackfillRow>, StoreError> {
        self.ex().fetch_optional(&LOAD, &args![id]).await
    }

    async fn list_backfills(
        &self,
        target: Option<(BackfillKind, i64)>,
        groups: Option<&[GroupId]>,
        limit: u32,
    ) -> Result<Vec<BackfillRow>, StoreError> {
        let mut q = QueryBuf::new(concat!(backfill_columns!(), " WHERE 1 = 1"));
        if let Some((kind, id)) = target {
            q.push(" AND target_kind = ").bind(kind.name()).push(" AND target_id = ").bind(id);
        }
        if let Some(groups) = groups {
            if groups.is_empty() {
                return Ok(Vec::new());
            }
            q.push(" AND job_group IN (").bind_list(groups.iter().copied()).push(")");
        }
        q.push(" ORDER BY id DESC LIMIT ").bind(i64::from(limit));
        self.ex().fetch_all(&q, q.args()).await
    }

    async fn running_backfills(&self, limit: u32) -> Result<Vec<i64>, StoreError> {
        self.ex().fetch_column(&RUNNING, &args![i64::from(limit)]).await
    }

    async fn cancel_backfill(&self, id: i64, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&CANCEL, &args![now_ms, id]).await? > 0)
    }

    async fn backfill_progress(&self, id: i64) -> Result<BackfillProgress, StoreError> {
        let count = |sql: &'static Sql| async move {
            Ok::<i64, StoreError>(self.ex().fetch_one::<(i64,)>(sql, &args![id]).await?.0)
        };
        Ok(BackfillProgress {
            running: count(&IN_FLIGHT).await?,
            succeeded: count(&SUCCEEDED).await?,
            failed: count(&FAILED).await?,
        })
    }

    async fn begin_backfill(&self, id: i64) -> Result<Option<Box<dyn BackfillTx>>, StoreError> {
        let mut tx = self.db.begin().await?;
        let Some(row) = tx.ex().fetch_optional::<BackfillRow>(&LOCK, &args![id]).await? else {
            return Ok(None);
        };
        Ok(Some(Box::new(SqlBackfillTx { tx, row })))
    }

    async fn set_fire_run(&self, fire: i64, run: FireRun) -> Result<(), StoreError> {
        match run {
            FireRun::Log(log) => self.ex().execute(&SET_LOG, &args![log, fire]).await?,
            FireRun::Instance(instance) => self.ex().execute(&SET_INSTANCE, &args![instance, fire]).await?,
            FireRun::Nothing => self.ex().execute(&SET_LOG, &args![0_i64, fire]).await?,
        };
        Ok(())
    }

    async fn unsent_fires(&self, claimed_before_ms: i64, limit: u32) -> Result<Vec<UnsentFire>, StoreError> {
        self.ex().fetch_all(&UNSENT, &args![claimed_before_ms, i64::from(limit)]).await
    }

    async fn reclaim_fire(&self, fire: &UnsentFire, now_ms: i64) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&RECLAIM, &args![now_ms, fire.id, fire.claimed_ms]).await? > 0)
    }
}

/// One backfill under its row lock.
struct SqlBackfillTx {
    tx: Tx,
    row: BackfillRow,
}

#[async_trait]
impl BackfillTx for SqlBackfillTx {
    fn backfill(&self) -> &BackfillRow {
        &self.row
    }

    async fn in_flight(&mut self) -> Result<i64, StoreError> {
        Ok(self.tx.ex().fetch_one::<(i64,)>(&IN_FLIGHT, &args![self.row.id]).await?.0)
    }

    async fn ran_before(&mut self, scheduled_ms: i64) -> Result<bool, StoreError> {
        let target = self.row.backfill.target_id;
        let count = match self.row.kind() {
            Some(BackfillKind::Job) => {
                let second = scheduled_ms.div_euclid(1000);
                let window = args![target, second, second + 1];
                let logged = self.tx.ex().fetch_one::<(i64,)>(&JOB_RAN, &window).await?.0;
                logged
                    + self.tx.ex().fetch_one::<(i64,)>(&JOB_BACKFILLED, &args![scheduled_ms, target]).await?.0
            }
            Some(BackfillKind::Workflow) => {
                self.tx.ex().fetch_one::<(i64,)>(&WORKFLOW_RAN, &args![target, scheduled_ms]).await?.0
            }
            None => 0,
        };
        Ok(count > 0)
    }

    async fn add_fire(&mut self, scheduled_ms: i64, now_ms: i64) -> Result<i64, StoreError> {
        self.tx.ex().insert_id(&ADD_FIRE, &args![self.row.id, scheduled_ms, now_ms]).await
    }

    async fn advance(&mut self, cursor_ms: i64, handed: i32, skipped: i32) -> Result<(), StoreError> {
        self.tx.ex().execute(&ADVANCE, &args![cursor_ms, handed, skipped, self.row.id]).await?;
        self.row.backfill.cursor_ms = cursor_ms;
        self.row.backfill.handed += handed;
        self.row.backfill.skipped += skipped;
        Ok(())
    }

    async fn end(
        &mut self,
        status: BackfillStatus,
        message: Option<&str>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.tx.ex().execute(&END, &args![status, message, now_ms, self.row.id]).await?;
        self.row.backfill.status = status;
        Ok(())
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        self.tx.commit().await
    }
}
