//! The pre-read transaction and the durable ring claims (`jobwheel_ring_claim`).
//!
//! The schedule lock is upstream's row lock on `xxl_job_lock.schedule_lock`, held for the whole
//! pre-read, so admins sharing a PostgreSQL or MySQL database take turns (SQLite's
//! `BEGIN IMMEDIATE` write lock serializes pre-reads of one file the same way). Claims are
//! consumed with a guarded `UPDATE … WHERE status = 0`: a second consumer blocks on the row
//! lock, re-reads the row after the first commits and updates nothing. On MySQL, InnoDB takes
//! the consistent-read snapshot at a transaction's first plain `SELECT`, which comes after the
//! lock, so a pre-read always sees the previous one's commit.

use std::collections::{BTreeSet, HashSet};

use async_trait::async_trait;

use super::SqlStore;
use super::batch::{CHUNK, delete_staged_logs, discard_pending};
use super::jobs::job_full;
use super::logs::INSERT_LOG;
use crate::store::PARTITION_COUNT;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::query_buf::padded;
use crate::store::support::TRIGGER_UPDATE_BATCH;
use crate::store::time::secs;
use crate::store::{
    ClaimId, ClaimRow, JobRow, LogId, MissedFire, NewClaim, NewLog, SCHEDULE_PARTITIONS, ScheduleStore,
    ScheduleTx, StoreError, TriggerTimeUpdate,
};

static LOCK_ROW: Sql =
    Sql::new("SELECT lock_name FROM xxl_job_lock WHERE lock_name = 'schedule_lock' FOR UPDATE");
/// Due jobs with their jobwheel time zone, so the pre-read needs no second query per job.
///
/// Why ordered by due time and not by id as upstream: the order is `i_job_due`'s own (its key,
/// then the row id), so the query reads only the due rows through the index; ordered by id,
/// SQLite walks the table in id order instead and reads every job each second (210–275 ms at a
/// million jobs, docs/benchmarks.md). The rows are put back in id order afterwards; the order
/// only differs from upstream's when more jobs are due than the pre-read takes, and then the
/// earliest due go first rather than the lowest ids.
static DUE_JOBS: Sql = Sql::new(concat!(
    job_full!(),
    " WHERE trigger_status = 1 AND trigger_next_time <= ? ORDER BY trigger_next_time ASC, id ASC LIMIT ?"
));
static PENDING_CLAIMS: Sql = Sql::new(
    "SELECT id, job_id, fire_time_ms, claimed_at_ms, status, log_id, shard, node \
    FROM jobwheel_ring_claim WHERE status = 0 AND fire_time_ms <= ? ORDER BY fire_time_ms, id",
);
static TAKE_CLAIM: Sql = Sql::new("UPDATE jobwheel_ring_claim SET status = 1 WHERE id = ? AND status = 0");
static SET_CLAIM_LOG: Sql = Sql::new("UPDATE jobwheel_ring_claim SET log_id = ? WHERE id = ?");
static TAKE_FIRST_SHARD: Sql = Sql::new(
    "UPDATE jobwheel_ring_claim SET status = 1, shard = ?, taken_at_ms = ? WHERE id = ? AND status = 0",
);
static INSERT_SHARD_CLAIM: Sql = Sql::new(
    "INSERT INTO jobwheel_ring_claim (job_id, fire_time_ms, claimed_at_ms, status, shard, node) \
    SELECT job_id, fire_time_ms, I64(?), 0, ?, node FROM jobwheel_ring_claim WHERE id = ? RETURNING id",
);
static DISCARD_CLAIM: Sql = Sql::new("UPDATE jobwheel_ring_claim SET status = 2 WHERE id = ? AND status = 0");
static CLAIM_LOG: Sql = Sql::new("SELECT log_id FROM jobwheel_ring_claim WHERE id = ?");
/// The log row staged for a discarded claim; one that has a trigger outcome is history, kept.
static DELETE_STAGED_LOG: Sql =
    Sql::new("DELETE FROM xxl_job_log WHERE id = ? AND trigger_code = 0 AND handle_code = 0");
static INSERT_MISSED: Sql = Sql::new(
    "INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, trigger_msg, \
    executor_handler, executor_param, executor_fail_retry_count, handle_code) \
    VALUES (?, ?, TS(?), 500, ?, ?, ?, 0, 0)",
);
static PURGE_CLAIMS: Sql = Sql::new("DELETE FROM jobwheel_ring_claim WHERE status <> 0 AND fire_time_ms < ?");

/// Takes upstream's schedule lock row with `lock` (exclusively, or shared). Without the row
/// there is nothing to lock: upstream then schedules on every admin at once; refuse instead
/// (on SQLite the row locks nothing, but its absence means a damaged schema).
pub(super) async fn lock_schedule_row(tx: &mut Tx, lock: &Sql) -> Result<(), StoreError> {
    let row: Option<String> = tx.ex().fetch_value(lock, &[]).await?;
    if row.is_none() {
        return Err(StoreError::MissingScheduleLock);
    }
    Ok(())
}

/// The log row the pre-read staged for `claim`, if it staged one.
async fn staged_log(tx: &mut Tx, claim: ClaimId) -> Result<Option<LogId>, StoreError> {
    let log: Option<Option<LogId>> = tx.ex().fetch_value(&CLAIM_LOG, &args![claim]).await?;
    Ok(log.flatten())
}

/// Inserts missed-fire rows in `tx` (one statement each: a skip is rare).
async fn insert_missed(tx: &mut Tx, missed: &[MissedFire]) -> Result<(), StoreError> {
    for m in missed {
        let args = args![
            m.job_group,
            m.job_id,
            secs(m.trigger_time),
            &m.trigger_msg,
            &m.executor_handler,
            &m.executor_param
        ];
        tx.ex().execute(&INSERT_MISSED, &args).await?;
    }
    Ok(())
}

/// A pre-read holding the schedule lock (or, shared, its partitions' lease rows).
pub(super) struct SqlScheduleTx {
    pub(super) tx: Tx,
    /// The id step of a multi-row insert (see [`Db::id_step`](crate::store::pool::Db::id_step)).
    pub(super) id_step: i64,
    /// A shared pre-read's partitions: `due_jobs` returns only their jobs. `None`: all jobs.
    pub(super) partitions: Option<Vec<i32>>,
    /// A shared pre-read's node, recorded on the claims it inserts.
    pub(super) node: Option<String>,
}

#[async_trait]
impl ScheduleStore for SqlStore {
    async fn begin_schedule(&self) -> Result<Box<dyn ScheduleTx>, StoreError> {
        let mut tx = self.db.begin().await?;
        lock_schedule_row(&mut tx, &LOCK_ROW).await?;
        Ok(Box::new(SqlScheduleTx { tx, id_step: self.db.id_step(), partitions: None, node: None }))
    }

    async fn pending_claims(&self, up_to_ms: i64) -> Result<Vec<ClaimRow>, StoreError> {
        self.ex().fetch_all(&PENDING_CLAIMS, &args![up_to_ms]).await
    }

    async fn consume_claim_and_insert_log(
        &self,
        claim: ClaimId,
        log: &NewLog,
    ) -> Result<Option<LogId>, StoreError> {
        let mut tx = self.db.begin().await?;
        if tx.ex().execute(&TAKE_CLAIM, &args![claim]).await? == 0 {
            return Ok(None);
        }
        let insert = args![log.job_group, log.job_id, secs(log.trigger_time)];
        let log_id = LogId(tx.ex().insert_id(&INSERT_LOG, &insert).await?);
        tx.ex().execute(&SET_CLAIM_LOG, &args![log_id, claim]).await?;
        tx.commit().await?;
        Ok(Some(log_id))
    }

    async fn consume_claims_and_insert_logs(
        &self,
        items: &[(ClaimId, NewLog)],
    ) -> Result<Vec<Option<LogId>>, StoreError> {
        self.consume_claims_batch(items).await
    }

    async fn split_claim(
        &self,
        claim: ClaimId,
        log: &NewLog,
        total: usize,
        now_ms: i64,
    ) -> Result<Option<(LogId, Vec<ClaimId>)>, StoreError> {
        let mut tx = self.db.begin().await?;
        if tx.ex().execute(&TAKE_FIRST_SHARD, &args![format!("0/{total}"), now_ms, claim]).await? == 0 {
            return Ok(None);
        }
        let log_id = match staged_log(&mut tx, claim).await? {
            Some(log_id) => log_id,
            None => {
                let insert = args![log.job_group, log.job_id, secs(log.trigger_time)];
                let log_id = LogId(tx.ex().insert_id(&INSERT_LOG, &insert).await?);
                tx.ex().execute(&SET_CLAIM_LOG, &args![log_id, claim]).await?;
                log_id
            }
        };
        let mut shards = Vec::with_capacity(total.saturating_sub(1));
        // One row per shard: a broadcast group has a handful of executors, not thousands.
        for index in 1..total {
            let shard = args![now_ms, format!("{index}/{total}"), claim];
            shards.push(ClaimId(tx.ex().insert_id(&INSERT_SHARD_CLAIM, &shard).await?));
        }
        tx.commit().await?;
        Ok(Some((log_id, shards)))
    }

    async fn take_claims(&self, claims: &[ClaimId], taken_ms: i64) -> Result<Vec<bool>, StoreError> {
        self.take_claims_batch(claims, taken_ms).await
    }

    async fn discard_claim(&self, claim: ClaimId) -> Result<bool, StoreError> {
        let mut tx = self.db.begin().await?;
        if tx.ex().execute(&DISCARD_CLAIM, &args![claim]).await? == 0 {
            return Ok(false);
        }
        if let Some(log_id) = staged_log(&mut tx, claim).await? {
            tx.ex().execute(&DELETE_STAGED_LOG, &args![log_id]).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn discard_missed(
        &self,
        claims: &[ClaimRow],
        missed: &(dyn Fn(usize, i64) -> MissedFire + Sync),
    ) -> Result<Vec<ClaimId>, StoreError> {
        // A few statements per chunk of claims, not three per claim: an admin that falls behind
        // discards thousands a second, and one statement each made it fall further behind
        // (docs/benchmarks.md, "Statements per trigger").
        let mut tx = self.db.begin().await?;
        let mut gone = HashSet::new();
        let ids: Vec<ClaimId> = claims.iter().map(|c| c.id).collect::<BTreeSet<_>>().into_iter().collect();
        for chunk in ids.chunks(CHUNK) {
            let wanted: BTreeSet<ClaimId> = chunk.iter().copied().collect();
            gone.extend(discard_pending(&mut tx, &wanted).await?);
        }
        let discarded: Vec<&ClaimRow> = claims.iter().filter(|c| gone.remove(&c.id)).collect();
        // A pending claim's staged row is the one it was staged with (only a take sets another).
        let staged: Vec<LogId> = discarded.iter().filter_map(|c| c.log_id).collect();
        delete_staged_logs(&mut tx, &staged).await?;
        if let Some(first) = discarded.iter().map(|c| c.fire_time_ms).min() {
            insert_missed(&mut tx, &[missed(discarded.len(), first)]).await?;
        }
        tx.commit().await?;
        Ok(discarded.into_iter().map(|c| c.id).collect())
    }

    async fn purge_claims(&self, before_ms: i64) -> Result<u64, StoreError> {
        self.ex().execute(&PURGE_CLAIMS, &args![before_ms]).await
    }
}

#[async_trait]
impl ScheduleTx for SqlScheduleTx {
    async fn due_jobs(&mut self, max_next_time_ms: i64, limit: u32) -> Result<Vec<JobRow>, StoreError> {
        let mut jobs: Vec<JobRow> = match self.partitions.as_ref().filter(|p| p.len() < PARTITION_COUNT) {
            None => self.tx.ex().fetch_all(&DUE_JOBS, &args![max_next_time_ms, i64::from(limit)]).await?,
            Some(partitions) if partitions.is_empty() => return Ok(Vec::new()),
            Some(partitions) => {
                let mut q = QueryBuf::new(concat!(
                    job_full!(),
                    " WHERE trigger_status = 1 AND trigger_next_time <= "
                ));
                q.bind(max_next_time_ms)
                    .push(&format!(" AND id % {SCHEDULE_PARTITIONS} IN ("))
                    .bind_list(partitions.iter().copied())
                    .push(") ORDER BY trigger_next_time ASC, id ASC LIMIT ")
                    .bind(i64::from(limit));
                self.tx.ex().fetch_all(&q, q.args()).await?
            }
        };
        // Upstream's order for everything after the read (see `DUE_JOBS`).
        jobs.sort_unstable_by_key(|job| job.id);
        Ok(jobs)
    }

    async fn update_trigger_times(&mut self, updates: &[TriggerTimeUpdate]) -> Result<u64, StoreError> {
        let mut updated = 0;
        for chunk in updates.chunks(TRIGGER_UPDATE_BATCH) {
            // Without stops the statement is one of a few shapes (a repeated `WHEN` is never
            // reached: the first match wins), so it is kept prepared.
            let stops = chunk.iter().any(|u| u.stop);
            let shaped;
            let chunk = if stops {
                chunk
            } else {
                shaped = padded(chunk.iter().copied());
                &shaped[..]
            };
            // `I64(?)`: PostgreSQL types a bare parameter in a `CASE` branch as text.
            let mut q = QueryBuf::new("UPDATE xxl_job_info SET trigger_last_time = CASE id");
            for u in chunk {
                q.push(" WHEN ").bind(u.job_id).push(" THEN I64(").bind(u.trigger_last_time).push(")");
            }
            q.push(" END, trigger_next_time = CASE id");
            for u in chunk {
                q.push(" WHEN ").bind(u.job_id).push(" THEN I64(").bind(u.trigger_next_time).push(")");
            }
            q.push(" END");
            // `CASE` needs at least one branch; without stops the status is not touched at all.
            if stops {
                q.push(", trigger_status = CASE id");
                for u in chunk.iter().filter(|u| u.stop) {
                    q.push(" WHEN ").bind(u.job_id).push(" THEN 0");
                }
                q.push(" ELSE trigger_status END");
            }
            // `trigger_status + 0`, not `trigger_status = 1`: the bare comparison matches the
            // predicate of PostgreSQL's partial index `i_job_due`, and a plan cached while the
            // table's statistics were empty (a fresh database, a bench) walked that whole index —
            // every running job and every dead entry each earlier update left — once per chunk
            // instead of looking the chunk's ids up by primary key: 78 000 entries a statement at
            // 10 000 jobs (docs/benchmarks.md, "The due index read per update"). The guard stays:
            // a job stopped while the pre-read ran keeps its stop's next time.
            q.push(" WHERE id IN (")
                .bind_list(chunk.iter().map(|u| u.job_id))
                .push(") AND trigger_status + 0 = 1");
            if !stops {
                q.keep();
            }
            updated += self.tx.ex().execute(&q, q.args()).await?;
        }
        Ok(updated)
    }

    async fn stage_claims(
        &mut self,
        claims: &[(NewClaim, Option<NewLog>)],
    ) -> Result<Vec<(ClaimId, Option<LogId>)>, StoreError> {
        super::batch::insert_claims(&mut self.tx, self.id_step, claims, self.node.as_deref()).await
    }

    async fn record_missed(&mut self, missed: &[MissedFire]) -> Result<(), StoreError> {
        insert_missed(&mut self.tx, missed).await
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        self.tx.commit().await
    }
}
