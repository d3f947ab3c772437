//! SQLite: the pre-read transaction and the durable ring claims.
//!
//! `BEGIN IMMEDIATE` takes SQLite's single write lock, so pre-reads of connections (and of
//! processes, should two ever open the file) serialize, and triggers that consume claims wait
//! for a running pre-read instead of failing.

use async_trait::async_trait;
use sqlx::{QueryBuilder, Sqlite};

use super::SqliteStore;
use super::logs::INSERT_LOG;
use crate::store::support::TRIGGER_UPDATE_BATCH;
use crate::store::time::secs;
use crate::store::{
    ClaimId, ClaimRow, JobRow, LogId, NewClaim, NewLog, ScheduleStore, ScheduleTx, StoreError,
    TriggerTimeUpdate,
};

const LOCK_ROW: &str = "SELECT lock_name FROM xxl_job_lock WHERE lock_name = 'schedule_lock'";
/// Due jobs with their jobwheel time zone, so the pre-read needs no second query per job.
const DUE_JOBS: &str = concat!(
    "SELECT ",
    job_columns!(),
    ", z.time_zone FROM xxl_job_info LEFT JOIN jobwheel_job_zone z ON z.job_id = xxl_job_info.id \
     WHERE trigger_status = 1 AND trigger_next_time <= ? ORDER BY id ASC LIMIT ?"
);
const PENDING_CLAIMS: &str = "SELECT id, job_id, fire_time_ms, claimed_at_ms, status, log_id \
    FROM jobwheel_ring_claim WHERE status = 0 AND fire_time_ms <= ? ORDER BY fire_time_ms, id";
const TAKE_CLAIM: &str = "UPDATE jobwheel_ring_claim SET status = 1 WHERE id = ? AND status = 0";
const SET_CLAIM_LOG: &str = "UPDATE jobwheel_ring_claim SET log_id = ? WHERE id = ?";
const DISCARD_CLAIM: &str = "UPDATE jobwheel_ring_claim SET status = 2 WHERE id = ? AND status = 0";
const PURGE_CLAIMS: &str = "DELETE FROM jobwheel_ring_claim WHERE status <> 0 AND fire_time_ms < ?";

/// A pre-read holding SQLite's write lock.
struct SqliteScheduleTx {
    tx: super::WriteTx,
}

#[async_trait]
impl ScheduleStore for SqliteStore {
    async fn begin_schedule(&self) -> Result<Box<dyn ScheduleTx>, StoreError> {
        let mut tx = self.begin_write().await?;
        // The lock row does nothing on SQLite, but its absence means a damaged schema.
        let row: Option<String> = sqlx::query_scalar(LOCK_ROW).fetch_optional(&mut *tx).await?;
        if row.is_none() {
            return Err(StoreError::MissingScheduleLock);
        }
        Ok(Box::new(SqliteScheduleTx { tx }))
    }

    async fn pending_claims(&self, up_to_ms: i64) -> Result<Vec<ClaimRow>, StoreError> {
        Ok(sqlx::query_as(PENDING_CLAIMS).bind(up_to_ms).fetch_all(&self.pool).await?)
    }

    async fn consume_claim_and_insert_log(
        &self,
        claim: ClaimId,
        log: &NewLog,
    ) -> Result<Option<LogId>, StoreError> {
        let mut tx = self.begin_write().await?;
        let taken = sqlx::query(TAKE_CLAIM).bind(claim).execute(&mut *tx).await?;
        if taken.rows_affected() == 0 {
            return Ok(None);
        }
        let log_id: LogId = sqlx::query_scalar(INSERT_LOG)
            .bind(log.job_group)
            .bind(log.job_id)
            .bind(secs(log.trigger_time))
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(SET_CLAIM_LOG).bind(log_id).bind(claim).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(log_id))
    }

    async fn consume_claims_and_insert_logs(
        &self,
        items: &[(ClaimId, NewLog)],
    ) -> Result<Vec<Option<LogId>>, StoreError> {
        self.consume_claims_batch(items).await
    }

    async fn discard_claim(&self, claim: ClaimId) -> Result<bool, StoreError> {
        let done = sqlx::query(DISCARD_CLAIM).bind(claim).execute(&self.pool).await?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge_claims(&self, before_ms: i64) -> Result<u64, StoreError> {
        Ok(sqlx::query(PURGE_CLAIMS).bind(before_ms).execute(&self.pool).await?.rows_affected())
    }
}

#[async_trait]
impl ScheduleTx for SqliteScheduleTx {
    async fn due_jobs(&mut self, max_next_time_ms: i64, limit: u32) -> Result<Vec<JobRow>, StoreError> {
        Ok(sqlx::query_as(DUE_JOBS)
            .bind(max_next_time_ms)
            .bind(i64::from(limit))
            .fetch_all(&mut *self.tx)
            .await?)
    }

    async fn update_trigger_times(&mut self, updates: &[TriggerTimeUpdate]) -> Result<u64, StoreError> {
        let mut updated = 0;
        for chunk in updates.chunks(TRIGGER_UPDATE_BATCH) {
            let mut qb = QueryBuilder::<Sqlite>::new("UPDATE xxl_job_info SET ");
            qb.push("trigger_last_time = CASE id");
            for u in chunk {
                qb.push(" WHEN ").push_bind(u.job_id).push(" THEN ").push_bind(u.trigger_last_time);
            }
            qb.push(" END, trigger_next_time = CASE id");
            for u in chunk {
                qb.push(" WHEN ").push_bind(u.job_id).push(" THEN ").push_bind(u.trigger_next_time);
            }
            qb.push(" END");
            // `CASE` needs at least one branch; without stops the status is not touched at all.
            if chunk.iter().any(|u| u.stop) {
                qb.push(", trigger_status = CASE id");
                for u in chunk.iter().filter(|u| u.stop) {
                    qb.push(" WHEN ").push_bind(u.job_id).push(" THEN 0");
                }
                qb.push(" ELSE trigger_status END");
            }
            qb.push(" WHERE trigger_status = 1 AND id IN (");
            let mut ids = qb.separated(", ");
            for u in chunk {
                ids.push_bind(u.job_id);
            }
            ids.push_unseparated(")");
            updated += qb.build().execute(&mut *self.tx).await?.rows_affected();
        }
        Ok(updated)
    }

    async fn insert_claims(&mut self, claims: &[NewClaim]) -> Result<Vec<ClaimId>, StoreError> {
        SqliteStore::insert_claims_batch(&mut self.tx, claims).await
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        Ok(self.tx.commit().await?)
    }
}
