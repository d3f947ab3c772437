//! The log writes after a fire, many rows per statement: trigger outcomes (`trigger_code`,
//! address, parameters) and callback results (`handle_code`, `handle_msg`).
//!
//! Like the rest of the batches (`batch.rs`), each method answers exactly what its single-row
//! counterpart would, row by row in input order. Both lock the logs they write in id order on
//! PostgreSQL and MySQL, so a trigger-outcome batch and a callback batch that share logs never
//! deadlock each other.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::SqlStore;
use super::batch::{CHUNK, retry_deadlock, update_from_values};
use crate::store::db::QueryBuf;
use crate::store::support::{append_handle_msg, stored_result};
use crate::store::time::secs;
use crate::store::{
    Backend, HandleOutcome, HandleResult, JobId, LogId, LogStore, LogTriggerUpdate, StoreError, StoredResult,
};

impl SqlStore {
    pub(super) async fn update_log_triggers_batch(
        &self,
        updates: &[LogTriggerUpdate],
    ) -> Result<Vec<bool>, StoreError> {
        let mut out = Vec::with_capacity(updates.len());
        for chunk in updates.chunks(CHUNK) {
            let distinct: HashSet<_> = chunk.iter().map(|u| u.log_id).collect();
            if distinct.len() < chunk.len() {
                // One VALUES row per id: a log updated twice in a chunk is written one by one,
                // in order, as the single-row method would.
                for update in chunk {
                    out.push(self.update_log_trigger(update).await?);
                }
                continue;
            }
            out.extend(retry_deadlock!(self.update_log_triggers_chunk(chunk).await)?);
        }
        Ok(out)
    }

    /// One chunk of [`Self::update_log_triggers_batch`] whose log ids are distinct.
    async fn update_log_triggers_chunk(&self, chunk: &[LogTriggerUpdate]) -> Result<Vec<bool>, StoreError> {
        let backend = self.db.backend();
        let q = update_from_values(
            backend,
            "xxl_job_log",
            &[
                "v_id",
                "v_time",
                "v_code",
                "v_msg",
                "v_address",
                "v_handler",
                "v_param",
                "v_shard",
                "v_retries",
            ],
            chunk,
            |u| {
                vec![
                    u.log_id.into(),
                    secs(u.trigger_time).into(),
                    u.trigger_code.into(),
                    (&u.trigger_msg).into(),
                    (&u.executor_address).into(),
                    (&u.executor_handler).into(),
                    (&u.executor_param).into(),
                    (&u.executor_sharding_param).into(),
                    u.executor_fail_retry_count.into(),
                ]
            },
            "trigger_time = TS(v.v_time), trigger_code = v.v_code, trigger_msg = v.v_msg, \
             executor_address = v.v_address, executor_handler = v.v_handler, \
             executor_param = v.v_param, executor_sharding_param = v.v_shard, \
             executor_fail_retry_count = v.v_retries",
        );
        // In a write transaction, so SQLite writers queue for the process's writer connection
        // instead of sleeping in the busy handler.
        let mut tx = self.db.begin().await?;
        let found: HashSet<LogId> = if backend == Backend::Sqlite {
            // One writer at a time: no row locks to order. Every row updated (the usual case)
            // needs nothing read back; otherwise the ones that exist are looked up, still
            // under the write lock (no `RETURNING` rows: see `insert_rows`).
            let updated = tx.ex().execute(&q, q.args()).await?;
            if usize::try_from(updated).ok() == Some(chunk.len()) {
                chunk.iter().map(|u| u.log_id).collect()
            } else {
                let mut find = QueryBuf::new("SELECT id FROM xxl_job_log WHERE id IN (");
                find.bind_shaped(chunk.iter().map(|u| u.log_id)).push(")").keep();
                tx.ex().fetch_column(&find, find.args()).await?.into_iter().collect()
            }
        } else {
            // The rows that exist, locked in id order, then the update. The callback path
            // (`apply_handle_results_chunk`) locks the same logs in id order; an `UPDATE … FROM
            // (VALUES …)` alone locks them in its join's order, and the two deadlocked. MySQL
            // noticed at once; PostgreSQL only after `deadlock_timeout` (1 s), which made
            // triggers seconds late at 2 000/s (docs/benchmarks.md, issue 14).
            let mut find = QueryBuf::new("SELECT id FROM xxl_job_log WHERE id IN (");
            find.bind_shaped(chunk.iter().map(|u| u.log_id)).push(") ORDER BY id FOR UPDATE").keep();
            let found = tx.ex().fetch_column(&find, find.args()).await?.into_iter().collect();
            tx.ex().execute(&q, q.args()).await?;
            found
        };
        tx.commit().await?;
        Ok(chunk.iter().map(|u| found.contains(&u.log_id)).collect())
    }

    pub(super) async fn apply_handle_results_batch(
        &self,
        results: &[HandleResult],
    ) -> Result<Vec<HandleOutcome>, StoreError> {
        let mut out = Vec::with_capacity(results.len());
        for chunk in results.chunks(CHUNK) {
            let ids: BTreeSet<LogId> = chunk.iter().map(|r| r.log_id).collect();
            if ids.len() < chunk.len() {
                // A log with two results in one chunk: applied one by one, in order, so the
                // second sees the first exactly as the single-row method would.
                for result in chunk {
                    out.push(self.apply_handle_result(result).await?);
                }
                continue;
            }
            out.extend(retry_deadlock!(self.apply_handle_results_chunk(chunk, &ids).await)?);
        }
        Ok(out)
    }

    /// One chunk of [`Self::apply_handle_results_batch`] whose log ids (`ids`) are distinct.
    async fn apply_handle_results_chunk(
        &self,
        chunk: &[HandleResult],
        ids: &BTreeSet<LogId>,
    ) -> Result<Vec<HandleOutcome>, StoreError> {
        // The write lock (SQLite) or the row locks (taken in id order) make
        // check-then-update atomic against concurrent results for these logs.
        let mut tx = self.db.begin().await?;
        let mut q =
            QueryBuf::new("SELECT id, job_id, handle_code, handle_msg FROM xxl_job_log WHERE id IN (");
        q.bind_shaped(ids.iter().copied()).push(") ORDER BY id FOR UPDATE").keep();
        let state: HashMap<LogId, (JobId, i32, Option<String>)> = tx
            .ex()
            .fetch_all::<(LogId, JobId, i32, Option<String>)>(&q, q.args())
            .await?
            .into_iter()
            .map(|(id, job, code, msg)| (id, (job, code, msg)))
            .collect();
        // Upstream's repeat guard: only a log without a result takes this one.
        let mut writes: Vec<(&HandleResult, JobId, String)> = Vec::new();
        for result in chunk {
            let Some((job, code, msg)) = state.get(&result.log_id) else { continue };
            if *code > 0 {
                continue;
            }
            writes.push((result, *job, append_handle_msg(msg.as_deref(), result.handle_msg.as_deref())));
        }
        if !writes.is_empty() {
            let q = update_from_values(
                self.db.backend(),
                "xxl_job_log",
                &["v_id", "v_time", "v_code", "v_msg"],
                &writes,
                |(r, _, msg)| {
                    vec![
                        r.log_id.into(),
                        secs(r.handle_time).into(),
                        r.handle_code.into(),
                        msg.as_str().into(),
                    ]
                },
                "handle_time = TS(v.v_time), handle_code = v.v_code, handle_msg = v.v_msg",
            );
            tx.ex().execute(&q, q.args()).await?;
        }
        tx.commit().await?;
        // What was written is known here; reading the rows back would cost a statement and
        // every column of every log.
        let mut stored: HashMap<LogId, StoredResult> = writes
            .into_iter()
            .map(|(result, job, msg)| (result.log_id, stored_result(result, job, msg)))
            .collect();
        Ok(chunk
            .iter()
            .map(|result| match (stored.remove(&result.log_id), state.contains_key(&result.log_id)) {
                (Some(row), _) => HandleOutcome::Applied(row),
                (None, true) => HandleOutcome::Repeated,
                (None, false) => HandleOutcome::NotFound,
            })
            .collect())
    }
}
