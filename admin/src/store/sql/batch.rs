//! The trigger path's batch statements (claims, staged logs, the jobs a second fires) and the
//! multi-row statement shapes every batch shares: many rows per statement instead of one
//! statement per row, on every backend. The log writes after a fire are in `outcomes.rs`.
//!
//! Each method answers exactly what its single-row counterpart would, row by row in input
//! order (the store contract suite's `batches` module checks this on every backend). Two
//! statement shapes differ on MySQL, which has neither `RETURNING` nor `UPDATE … FROM`: new ids
//! come from `LAST_INSERT_ID()` (InnoDB numbers a multi-row insert's rows consecutively, by
//! `@@auto_increment_increment`), and multi-row updates join a `UNION ALL` derived table.

use std::collections::{BTreeSet, HashSet};

use super::SqlStore;
use super::jobs::job_full;
use crate::store::db::{Arg, Ex, QueryBuf, Record};
use crate::store::pool::Tx;
use crate::store::query_buf::padded;
use crate::store::time::secs;
use crate::store::{Backend, ClaimId, JobId, JobRow, LogId, NewClaim, NewLog, StoreError};

/// Rows per statement: keeps every statement far below SQLite's 32 766 and PostgreSQL's 65 535
/// bind parameters (an update binds at most 9 per row).
pub(super) const CHUNK: usize = 256;

/// Runs a batch transaction again (up to three times) when the database chose it as a deadlock
/// victim (MySQL 1213 / SQLSTATE 40001, PostgreSQL 40P01): it was rolled back whole, so running
/// it again is exactly-once still. Concurrent batches of triggers and callbacks touching the same
/// logs can deadlock on InnoDB even with locks taken in id order.
macro_rules! retry_deadlock {
    ($e:expr) => {{
        let mut attempt = 0;
        loop {
            match $e {
                Err(e) if attempt < 3 && $crate::store::sql::batch::is_deadlock(&e) => {
                    attempt += 1;
                    tracing::debug!(attempt, "batch transaction deadlocked; running it again");
                }
                result => break result,
            }
        }
    }};
}

pub(super) use retry_deadlock;

pub(super) fn is_deadlock(e: &StoreError) -> bool {
    matches!(e, StoreError::Database(sqlx::Error::Database(d)) if matches!(d.code().as_deref(), Some("40001" | "40P01")))
}

/// Runs the multi-row `INSERT` `q` (without `RETURNING`) of `rows` rows; the new ids in input
/// order. Each backend numbers one statement's rows consecutively in row order: MySQL by
/// `@@auto_increment_increment` from `LAST_INSERT_ID()` (the first row's), SQLite one by one up
/// to `last_insert_rowid()` (the last row's; one writer at a time, each row max + 1), and
/// PostgreSQL's sequence as the rows are produced (read back with `RETURNING`, where the
/// rows cost nothing extra).
async fn insert_rows(
    ex: Ex<'_>,
    id_step: i64,
    mut q: QueryBuf<'_>,
    rows: usize,
) -> Result<Vec<i64>, StoreError> {
    let count = i64::try_from(rows).unwrap_or(i64::MAX);
    match ex.backend() {
        Backend::MySql => {
            let first: i64 = ex.insert_id(&q, q.args()).await?;
            Ok((0..count).map(|i| first + id_step * i).collect())
        }
        Backend::Sqlite => {
            let last = ex.sqlite_last_rowid(&q, q.args()).await?;
            Ok((0..count).map(|i| last - (count - 1 - i)).collect())
        }
        Backend::Postgres => {
            q.push(" RETURNING id");
            let mut ids: Vec<i64> = ex.fetch_column(&q, q.args()).await?;
            ids.sort_unstable();
            Ok(ids)
        }
    }
}

/// `UPDATE table SET <set> …` with one row of values per element of `rows`, joined on
/// `table.id = v.<columns[0]>`; `set` refers to the values as `v.<column>`. The rows are padded
/// to their shape (a repeated row matches the same target row with the same values, which every
/// backend applies once), so the statement is kept prepared.
pub(super) fn update_from_values<'a, R>(
    backend: Backend,
    table: &str,
    columns: &[&str],
    rows: impl IntoIterator<Item = R>,
    values: impl Fn(R) -> Vec<Arg<'a>>,
    set: &str,
) -> QueryBuf<'a> {
    let mut q = QueryBuf::default();
    q.keep();
    let rows = padded(rows.into_iter().map(values));
    if backend == Backend::MySql {
        let keys: Vec<Arg<'a>> = rows.iter().filter_map(|row| row.first().cloned()).collect();
        q.push("UPDATE ").push(table).push(" JOIN (");
        for (i, row) in rows.into_iter().enumerate() {
            q.push(if i == 0 { "SELECT " } else { " UNION ALL SELECT " });
            for (j, (value, column)) in row.into_iter().zip(columns).enumerate() {
                q.push(if j == 0 { "" } else { ", " }).bind(value);
                if i == 0 {
                    q.push(" AS ").push(column);
                }
            }
        }
        q.push(") v ON ").push(table).push(".id = v.").push(columns[0]).push(" SET ").push(set);
        // Only these rows: without it InnoDB may scan (and lock) the whole table for the join.
        q.push(" WHERE ").push(table).push(".id IN (").bind_list(keys).push(")");
    } else {
        q.push("WITH v(").push(&columns.join(", ")).push(") AS (VALUES ");
        for (i, row) in rows.into_iter().enumerate() {
            q.push(if i == 0 { "(" } else { ", (" }).bind_list(row).push(")");
        }
        q.push(") UPDATE ").push(table).push(" SET ").push(set);
        q.push(" FROM v WHERE ").push(table).push(".id = v.").push(columns[0]);
    }
    q
}

/// Inserts `logs` as new `xxl_job_log` rows in one statement (`trigger_code` and
/// `handle_code` 0: upstream's first insert of a trigger); their ids in input order.
pub(super) async fn insert_logs(
    tx: &mut Tx,
    id_step: i64,
    logs: &[&NewLog],
) -> Result<Vec<LogId>, StoreError> {
    let mut q = QueryBuf::new(
        "INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, handle_code) VALUES ",
    );
    for (i, log) in logs.iter().enumerate() {
        q.push(if i == 0 { "(" } else { ", (" });
        q.bind(log.job_group).push(", ").bind(log.job_id);
        q.push(", TS(").bind(secs(log.trigger_time)).push("), 0, 0)");
    }
    Ok(insert_rows(tx.ex(), id_step, q, logs.len()).await?.into_iter().map(LogId).collect())
}

/// Inserts pending claims in one statement per chunk (a cycle claims thousands at once). A
/// claim with a log is staged (pre-staged firing): the log rows go in first, and the claim
/// records its row's id. `(claim, staged log)` ids in input order. Runs in the pre-read's
/// transaction, so a claim and its log row exist together or not at all.
pub(super) async fn insert_claims(
    tx: &mut Tx,
    id_step: i64,
    claims: &[(NewClaim, Option<NewLog>)],
    node: Option<&str>,
) -> Result<Vec<(ClaimId, Option<LogId>)>, StoreError> {
    let mut ids = Vec::with_capacity(claims.len());
    for chunk in claims.chunks(CHUNK) {
        let staged: Vec<&NewLog> = chunk.iter().filter_map(|(_, log)| log.as_ref()).collect();
        let mut staged_ids =
            if staged.is_empty() { Vec::new() } else { insert_logs(tx, id_step, &staged).await? }.into_iter();
        let logs: Vec<Option<LogId>> =
            chunk.iter().map(|(_, log)| log.and_then(|_| staged_ids.next())).collect();
        let mut q = QueryBuf::new(
            "INSERT INTO jobwheel_ring_claim (job_id, fire_time_ms, claimed_at_ms, status, log_id, node) VALUES ",
        );
        for (i, ((claim, _), log)) in chunk.iter().zip(&logs).enumerate() {
            q.push(if i == 0 { "(" } else { ", (" });
            q.bind_list([Arg::from(claim.job_id), claim.fire_time_ms.into(), claim.claimed_at_ms.into()])
                .push(", 0, ")
                .bind(log.map(|id| id.0))
                .push(", ")
                .bind(node)
                .push(")");
        }
        let claim_ids = insert_rows(tx.ex(), id_step, q, chunk.len()).await?;
        ids.extend(claim_ids.into_iter().map(ClaimId).zip(logs));
    }
    Ok(ids)
}

/// The claims among `wanted` still pending, under the write lock (SQLite) or locked in id
/// order (PostgreSQL, MySQL: two admins taking overlapping batches never deadlock); the rest
/// were fired or discarded already, by another trigger or admin. SQLite's usual case — all
/// pending — costs one count and hands no rows over (sqlx hands every row over separately).
///
/// PostgreSQL and MySQL look the claims up by id alone and read their status: with `status = 0`
/// in the statement, PostgreSQL's cached plan for it walked `i_ring_claim_status_fire` — every
/// pending claim, and every dead index entry a claim marked fired leaves until vacuum — instead
/// of the primary key: 215 000 index entries read per take at 10 000 triggers a second
/// (docs/benchmarks.md, "Where PostgreSQL's time went"). Locking a claim that turns out taken
/// is harmless: it is left as it is.
async fn pending_among(tx: &mut Tx, wanted: &BTreeSet<ClaimId>) -> Result<Vec<ClaimId>, StoreError> {
    if tx.ex().backend() == Backend::Sqlite {
        let mut count =
            QueryBuf::new("SELECT I64(COUNT(*)) FROM jobwheel_ring_claim WHERE status = 0 AND id IN (");
        count.bind_shaped(wanted.iter().copied()).push(")").keep();
        let all: Option<i64> = tx.ex().fetch_value(&count, count.args()).await?;
        if all.and_then(|n| usize::try_from(n).ok()) == Some(wanted.len()) {
            return Ok(wanted.iter().copied().collect());
        }
        let mut find = QueryBuf::new("SELECT id FROM jobwheel_ring_claim WHERE status = 0 AND id IN (");
        find.bind_shaped(wanted.iter().copied()).push(")").keep();
        return tx.ex().fetch_column(&find, find.args()).await;
    }
    let mut find = QueryBuf::new("SELECT id, I64(status) FROM jobwheel_ring_claim WHERE id IN (");
    find.bind_shaped(wanted.iter().copied()).push(") ORDER BY id FOR UPDATE").keep();
    let rows: Vec<(ClaimId, i64)> = tx.ex().fetch_all(&find, find.args()).await?;
    Ok(rows.into_iter().filter(|(_, status)| *status == 0).map(|(id, _)| id).collect())
}

/// Marks `pending` (claims [`pending_among`] found pending, still locked) fired, with their
/// take time. By id alone, for the reason given there.
async fn mark_fired(tx: &mut Tx, pending: &[ClaimId], taken_ms: i64) -> Result<(), StoreError> {
    let mut q = QueryBuf::new("UPDATE jobwheel_ring_claim SET status = 1, taken_at_ms = ");
    q.bind(taken_ms).push(" WHERE id IN (");
    q.bind_shaped(pending.iter().copied()).push(")").keep();
    tx.ex().execute(&q, q.args()).await?;
    Ok(())
}

/// Marks the pending claims among `wanted` (at most [`CHUNK`]) discarded (`status` 2) in two
/// statements whatever their number (the locking read, one update); the ones discarded. By id alone, as [`pending_among`] says.
pub(super) async fn discard_pending(
    tx: &mut Tx,
    wanted: &BTreeSet<ClaimId>,
) -> Result<Vec<ClaimId>, StoreError> {
    let pending = pending_among(tx, wanted).await?;
    if !pending.is_empty() {
        let mut q = QueryBuf::new("UPDATE jobwheel_ring_claim SET status = 2 WHERE id IN (");
        q.bind_shaped(pending.iter().copied()).push(")").keep();
        tx.ex().execute(&q, q.args()).await?;
    }
    Ok(pending)
}

/// Deletes the log rows staged for discarded claims, those without a trigger outcome (one with
/// an outcome is history, kept). `handle_code + 0`: the rows are found by id, not through
/// upstream's `I_handle_code` (every unfinished run), for the reason [`pending_among`] gives.
pub(super) async fn delete_staged_logs(tx: &mut Tx, logs: &[LogId]) -> Result<(), StoreError> {
    for chunk in logs.chunks(CHUNK) {
        let mut q = QueryBuf::new("DELETE FROM xxl_job_log WHERE id IN (");
        q.bind_shaped(chunk.iter().copied()).push(") AND trigger_code = 0 AND handle_code + 0 = 0").keep();
        tx.ex().execute(&q, q.args()).await?;
    }
    Ok(())
}

/// Marks the pending (bare) claims among `wanted` fired with their take time; the ones taken.
async fn take_pending_claims(
    tx: &mut Tx,
    wanted: &BTreeSet<ClaimId>,
    taken_ms: i64,
) -> Result<HashSet<ClaimId>, StoreError> {
    let pending = pending_among(tx, wanted).await?;
    if !pending.is_empty() {
        mark_fired(tx, &pending, taken_ms).await?;
    }
    Ok(pending.into_iter().collect())
}

/// How late a staged claim's take may be and still delete the claim: a take later than this
/// (a claim recovered after its admin died, or fired after a database outage) keeps the row,
/// marked fired with its take time, because the lost-job monitor's stalled rule needs the take
/// time of a late fire (`0029_claim_taken`). On time — the ring takes claims up to
/// `--fire-lead-ms` before their second — nothing of the claim is left to purge.
pub(super) const LATE_TAKE_MS: i64 = 1_000;

/// Fires the pending staged claims among `wanted` and answers which they were: a claim taken
/// on time is **deleted** (its log row, staged by the pre-read, is the durable record of the
/// fire); one taken more than [`LATE_TAKE_MS`] after its fire time is marked fired with
/// `taken_ms`, as a bare claim is.
async fn take_staged_claims(
    tx: &mut Tx,
    wanted: &BTreeSet<ClaimId>,
    taken_ms: i64,
) -> Result<HashSet<ClaimId>, StoreError> {
    let pending = pending_among(tx, wanted).await?;
    if pending.is_empty() {
        return Ok(HashSet::new());
    }
    // By id and fire time, not status: see `pending_among`.
    let mut delete = QueryBuf::new("DELETE FROM jobwheel_ring_claim WHERE fire_time_ms >= ");
    delete.bind(taken_ms.saturating_sub(LATE_TAKE_MS)).push(" AND id IN (");
    delete.bind_shaped(pending.iter().copied()).push(")").keep();
    let deleted = tx.ex().execute(&delete, delete.args()).await?;
    if usize::try_from(deleted).ok() != Some(pending.len()) {
        // The late ones, still pending after the delete (the deleted ids match no row).
        mark_fired(tx, &pending, taken_ms).await?;
    }
    Ok(pending.into_iter().collect())
}

/// The usual take, in one statement: every claim of `wanted` still pending and on time, deleted
/// at once; `true` (and the caller commits) only when the delete removed all of them. Otherwise
/// (one was taken elsewhere, is late, or does not exist) the caller rolls back — the deleted
/// rows cannot tell which of the asked ids they were — and takes them with
/// [`take_staged_claims`]. A ring batch's claims are its own admin's, staged a second ago, so
/// the fall-back is rare; this saves the locking read of the slow path, one round trip in four
/// per batch (docs/benchmarks.md, "Statements per trigger").
///
/// `status + 0`, not `status = 0`, for the reason [`pending_among`] gives: the statement must
/// find its rows by primary key. The rows are locked in id order (an `IN` list on the key), as
/// every other take locks them.
async fn take_all_on_time(
    tx: &mut Tx,
    wanted: &BTreeSet<ClaimId>,
    taken_ms: i64,
) -> Result<bool, StoreError> {
    let mut delete = QueryBuf::new("DELETE FROM jobwheel_ring_claim WHERE fire_time_ms >= ");
    delete.bind(taken_ms.saturating_sub(LATE_TAKE_MS)).push(" AND status + 0 = 0 AND id IN (");
    delete.bind_shaped(wanted.iter().copied()).push(")").keep();
    let deleted = tx.ex().execute(&delete, delete.args()).await?;
    Ok(usize::try_from(deleted).ok() == Some(wanted.len()))
}

impl SqlStore {
    pub(super) async fn load_jobs_batch(&self, ids: &[JobId]) -> Result<Vec<JobRow>, StoreError> {
        self.fetch_by_job_ids(concat!(job_full!(), " WHERE id IN ("), ids).await
    }

    /// The rows of `select` (ending in `id IN (`) for `ids`: [`CHUNK`] ids a statement, in the
    /// padded shapes, so a handful of prepared statements serve every batch size.
    pub(super) async fn fetch_by_job_ids<T: Record>(
        &self,
        select: &str,
        ids: &[JobId],
    ) -> Result<Vec<T>, StoreError> {
        let mut rows = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(CHUNK) {
            let mut q = QueryBuf::new(select);
            q.bind_shaped(chunk.iter().copied()).push(")").keep();
            rows.extend(self.ex().fetch_all::<T>(&q, q.args()).await?);
        }
        Ok(rows)
    }

    pub(super) async fn consume_claims_batch(
        &self,
        items: &[(ClaimId, NewLog)],
    ) -> Result<Vec<Option<LogId>>, StoreError> {
        let mut out = vec![None; items.len()];
        for (base, chunk) in items.chunks(CHUNK).enumerate() {
            for (i, log_id) in retry_deadlock!(self.consume_claims_chunk(chunk).await)? {
                out[base * CHUNK + i] = Some(log_id);
            }
        }
        Ok(out)
    }

    /// One chunk of [`Self::consume_claims_batch`]: the positions that fired, with their logs.
    async fn consume_claims_chunk(
        &self,
        chunk: &[(ClaimId, NewLog)],
    ) -> Result<Vec<(usize, LogId)>, StoreError> {
        let wanted: BTreeSet<ClaimId> = chunk.iter().map(|(c, _)| *c).collect();
        // Bare claims fire now: their rows' trigger time is the fire's time.
        let taken_ms = chunk.iter().map(|(_, log)| log.trigger_time.timestamp_millis()).max().unwrap_or(0);
        let mut tx = self.db.begin().await?;
        let taken = take_pending_claims(&mut tx, &wanted, taken_ms).await?;
        // The first listing of each taken claim fires; repeats get nothing.
        let mut firing = Vec::new();
        let mut used = HashSet::new();
        for (i, (claim, _)) in chunk.iter().enumerate() {
            if taken.contains(claim) && used.insert(*claim) {
                firing.push(i);
            }
        }
        if firing.is_empty() {
            tx.commit().await?;
            return Ok(Vec::new());
        }
        let logs: Vec<&NewLog> = firing.iter().map(|i| &chunk[*i].1).collect();
        let log_ids = insert_logs(&mut tx, self.db.id_step(), &logs).await?;
        let q = update_from_values(
            self.db.backend(),
            "jobwheel_ring_claim",
            &["v_claim", "v_log"],
            firing.iter().zip(&log_ids),
            |(i, log_id)| vec![chunk[*i].0.into(), (*log_id).into()],
            "log_id = v.v_log",
        );
        tx.ex().execute(&q, q.args()).await?;
        tx.commit().await?;
        Ok(firing.into_iter().zip(log_ids).collect())
    }

    pub(super) async fn take_claims_batch(
        &self,
        claims: &[ClaimId],
        taken_ms: i64,
    ) -> Result<Vec<bool>, StoreError> {
        let mut out = Vec::with_capacity(claims.len());
        for chunk in claims.chunks(CHUNK) {
            let wanted: BTreeSet<ClaimId> = chunk.iter().copied().collect();
            let taken = retry_deadlock!(
                async {
                    let mut fast = self.db.begin().await?;
                    if take_all_on_time(&mut fast, &wanted, taken_ms).await? {
                        fast.commit().await?;
                        return Ok(wanted.iter().copied().collect());
                    }
                    fast.rollback().await?;
                    let mut tx = self.db.begin().await?;
                    let taken = take_staged_claims(&mut tx, &wanted, taken_ms).await?;
                    tx.commit().await?;
                    Ok::<_, StoreError>(taken)
                }
                .await
            )?;
            // The first listing of each taken claim fires; repeats get nothing.
            let mut used = HashSet::new();
            out.extend(chunk.iter().map(|claim| taken.contains(claim) && used.insert(*claim)));
        }
        Ok(out)
    }
}
