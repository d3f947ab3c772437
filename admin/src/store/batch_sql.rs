//! The trigger and callback paths' batch statements for SQLite and PostgreSQL, stamped out by
//! one macro: both have `RETURNING` and `QueryBuilder` numbers placeholders itself, so the two
//! differ only in how an epoch-seconds value becomes a timestamp and in row locking. MySQL keeps
//! the traits' one-row-at-a-time defaults (no `RETURNING`; see docs/storage.md).
//!
//! Each method answers exactly what its single-row counterpart would, row by row in input
//! order (the store contract suite's `batches` module checks this on every backend).

/// Rows per statement: keeps every statement far below SQLite's 32 766 and PostgreSQL's 65 535
/// bind parameters (an update binds at most 9 per row).
pub(super) const CHUNK: usize = 256;

/// The ids of a multi-row `INSERT … RETURNING id`, in input order. Both backends assign the
/// ids of one statement's rows in row order (SQLite under its write lock, PostgreSQL's sequence
/// as the rows are produced), so ascending ids are the input order.
pub(super) fn in_input_order<T: Ord>(mut ids: Vec<T>) -> Vec<T> {
    ids.sort_unstable();
    ids
}

/// Whether rows are locked before they are checked (a backend's `$lock` suffix is not empty).
pub(super) fn locks_rows(lock: &str) -> bool {
    !lock.is_empty()
}

/// `impl $store { load_jobs_batch, consume_claims_batch, update_log_triggers_batch,
/// apply_handle_results_batch }` for a backend with a `pool` field and a `begin_write()`.
/// `$ts` is the SQL function turning epoch seconds into the column's timestamp (`datetime(`,
/// `to_timestamp(`, closed by `$ts_end`); `$lock` is `" FOR UPDATE"` where rows must be locked
/// before they are checked (PostgreSQL), `""` where the write lock already serializes (SQLite).
macro_rules! batch_statements {
    ($store:ty, $db:ty, $ts:literal, $ts_end:literal, $lock:literal) => {
        impl $store {
            /// Inserts pending claims in one statement per chunk (a cycle claims thousands at
            /// once); their ids in input order. Runs in the pre-read's transaction.
            pub(super) async fn insert_claims_batch(
                conn: &mut <$db as sqlx::Database>::Connection,
                claims: &[$crate::store::NewClaim],
            ) -> Result<Vec<$crate::store::ClaimId>, $crate::store::StoreError> {
                let mut ids = Vec::with_capacity(claims.len());
                for chunk in claims.chunks($crate::store::batch_sql::CHUNK) {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "INSERT INTO jobwheel_ring_claim (job_id, fire_time_ms, claimed_at_ms, status) ",
                    );
                    qb.push_values(chunk, |mut row, claim| {
                        row.push_bind(claim.job_id).push_bind(claim.fire_time_ms).push_bind(claim.claimed_at_ms).push("0");
                    });
                    qb.push(" RETURNING id");
                    let returned =
                        qb.build_query_scalar::<$crate::store::ClaimId>().persistent(false).fetch_all(&mut *conn).await?;
                    ids.extend($crate::store::batch_sql::in_input_order(returned));
                }
                Ok(ids)
            }

            pub(super) async fn load_jobs_batch(
                &self,
                ids: &[$crate::store::JobId],
            ) -> Result<Vec<$crate::store::JobRow>, $crate::store::StoreError> {
                let mut rows = Vec::with_capacity(ids.len());
                for chunk in ids.chunks($crate::store::batch_sql::CHUNK) {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(
                        "SELECT ",
                        job_columns!(),
                        ", z.time_zone FROM xxl_job_info LEFT JOIN jobwheel_job_zone z \
                         ON z.job_id = xxl_job_info.id WHERE id IN ("
                    ));
                    let mut list = qb.separated(", ");
                    for id in chunk {
                        list.push_bind(*id);
                    }
                    qb.push(")");
                    rows.extend(qb.build_query_as::<$crate::store::JobRow>().persistent(false).fetch_all(&self.pool).await?);
                }
                Ok(rows)
            }

            pub(super) async fn consume_claims_batch(
                &self,
                items: &[($crate::store::ClaimId, $crate::store::NewLog)],
            ) -> Result<Vec<Option<$crate::store::LogId>>, $crate::store::StoreError> {
                use std::collections::{BTreeSet, HashSet};
                let mut out = vec![None; items.len()];
                for (base, chunk) in items.chunks($crate::store::batch_sql::CHUNK).enumerate() {
                    let base = base * $crate::store::batch_sql::CHUNK;
                    let wanted: BTreeSet<$crate::store::ClaimId> = chunk.iter().map(|(c, _)| *c).collect();
                    let mut tx = self.begin_write().await?;
                    if $crate::store::batch_sql::locks_rows($lock) {
                        // Lock in id order, so two admins taking overlapping batches never deadlock.
                        let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT id FROM jobwheel_ring_claim WHERE id IN (");
                        let mut list = qb.separated(", ");
                        for claim in &wanted {
                            list.push_bind(*claim);
                        }
                        qb.push(") ORDER BY id").push($lock);
                        qb.build().persistent(false).fetch_all(&mut *tx).await?;
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "UPDATE jobwheel_ring_claim SET status = 1 WHERE status = 0 AND id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for claim in &wanted {
                        list.push_bind(*claim);
                    }
                    qb.push(") RETURNING id");
                    let taken: HashSet<$crate::store::ClaimId> =
                        qb.build_query_scalar().persistent(false).fetch_all(&mut *tx).await?.into_iter().collect();
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
                        continue;
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, handle_code) ",
                    );
                    qb.push_values(firing.iter().map(|i| chunk[*i].1), |mut row, log| {
                        row.push_bind(log.job_group)
                            .push_bind(log.job_id)
                            .push_unseparated(concat!(", ", $ts))
                            .push_bind_unseparated($crate::store::time::secs(log.trigger_time))
                            .push_unseparated($ts_end)
                            .push("0")
                            .push("0");
                    });
                    qb.push(" RETURNING id");
                    let log_ids: Vec<$crate::store::LogId> = $crate::store::batch_sql::in_input_order(
                        qb.build_query_scalar().persistent(false).fetch_all(&mut *tx).await?,
                    );
                    let mut qb = sqlx::QueryBuilder::<$db>::new("WITH v(v_claim, v_log) AS (");
                    qb.push_values(firing.iter().zip(&log_ids), |mut row, (i, log_id)| {
                        row.push_bind(chunk[*i].0).push_bind(*log_id);
                    });
                    qb.push(") UPDATE jobwheel_ring_claim SET log_id = v.v_log FROM v WHERE id = v.v_claim");
                    qb.build().persistent(false).execute(&mut *tx).await?;
                    tx.commit().await?;
                    for (i, log_id) in firing.into_iter().zip(log_ids) {
                        out[base + i] = Some(log_id);
                    }
                }
                Ok(out)
            }

            pub(super) async fn update_log_triggers_batch(
                &self,
                updates: &[$crate::store::LogTriggerUpdate],
            ) -> Result<Vec<bool>, $crate::store::StoreError> {
                use std::collections::HashSet;
                let mut out = Vec::with_capacity(updates.len());
                for chunk in updates.chunks($crate::store::batch_sql::CHUNK) {
                    let distinct: HashSet<_> = chunk.iter().map(|u| u.log_id).collect();
                    if distinct.len() < chunk.len() {
                        // One VALUES row per id: a log updated twice in a chunk is written one
                        // by one, in order, as the single-row method would.
                        for update in chunk {
                            out.push(<Self as $crate::store::LogStore>::update_log_trigger(self, update).await?);
                        }
                        continue;
                    }
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "WITH v(v_id, v_time, v_code, v_msg, v_address, v_handler, v_param, v_shard, v_retries) AS (",
                    );
                    qb.push_values(chunk, |mut row, u| {
                        row.push_bind(u.log_id)
                            .push_bind($crate::store::time::secs(u.trigger_time))
                            .push_bind(u.trigger_code)
                            .push_bind(u.trigger_msg.clone())
                            .push_bind(u.executor_address.clone())
                            .push_bind(u.executor_handler.clone())
                            .push_bind(u.executor_param.clone())
                            .push_bind(u.executor_sharding_param.clone())
                            .push_bind(u.executor_fail_retry_count);
                    });
                    qb.push(concat!(
                        ") UPDATE xxl_job_log SET trigger_time = ",
                        $ts,
                        "v.v_time",
                        $ts_end,
                        ", trigger_code = v.v_code, trigger_msg = v.v_msg, executor_address = v.v_address, \
                         executor_handler = v.v_handler, executor_param = v.v_param, \
                         executor_sharding_param = v.v_shard, executor_fail_retry_count = v.v_retries \
                         FROM v WHERE id = v.v_id RETURNING id"
                    ));
                    // In a write transaction, so SQLite writers queue on the process's write
                    // gate instead of sleeping in the busy handler.
                    let mut tx = self.begin_write().await?;
                    let found: HashSet<$crate::store::LogId> =
                        qb.build_query_scalar().persistent(false).fetch_all(&mut *tx).await?.into_iter().collect();
                    tx.commit().await?;
                    out.extend(chunk.iter().map(|u| found.contains(&u.log_id)));
                }
                Ok(out)
            }

            pub(super) async fn apply_handle_results_batch(
                &self,
                results: &[$crate::store::HandleResult],
            ) -> Result<Vec<$crate::store::HandleOutcome>, $crate::store::StoreError> {
                use std::collections::{BTreeSet, HashMap};

                use $crate::store::HandleOutcome;
                let mut out = Vec::with_capacity(results.len());
                for chunk in results.chunks($crate::store::batch_sql::CHUNK) {
                    let ids: BTreeSet<$crate::store::LogId> = chunk.iter().map(|r| r.log_id).collect();
                    if ids.len() < chunk.len() {
                        // A log with two results in one chunk: applied one by one, in order, so
                        // the second sees the first exactly as the single-row method would.
                        for result in chunk {
                            out.push(<Self as $crate::store::LogStore>::apply_handle_result(self, result).await?);
                        }
                        continue;
                    }
                    // The write lock (SQLite) or the row locks (PostgreSQL, taken in id order)
                    // make check-then-update atomic against concurrent results for these logs.
                    let mut tx = self.begin_write().await?;
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT id, handle_code, handle_msg FROM xxl_job_log WHERE id IN (",
                    );
                    let mut list = qb.separated(", ");
                    for id in &ids {
                        list.push_bind(*id);
                    }
                    qb.push(") ORDER BY id").push($lock);
                    let state: HashMap<$crate::store::LogId, (i32, Option<String>)> = qb
                        .build_query_as::<($crate::store::LogId, i32, Option<String>)>()
                        .persistent(false)
                        .fetch_all(&mut *tx)
                        .await?
                        .into_iter()
                        .map(|(id, code, msg)| (id, (code, msg)))
                        .collect();
                    // Upstream's repeat guard: only a log without a result takes this one.
                    let mut writes: Vec<(usize, String)> = Vec::new();
                    for (i, result) in chunk.iter().enumerate() {
                        let Some((code, msg)) = state.get(&result.log_id) else { continue };
                        if *code > 0 {
                            continue;
                        }
                        let new_msg = $crate::store::support::append_handle_msg(
                            msg.as_deref(),
                            result.handle_msg.as_deref(),
                        );
                        writes.push((i, new_msg));
                    }
                    let mut rows: HashMap<$crate::store::LogId, $crate::store::LogRow> = HashMap::new();
                    if !writes.is_empty() {
                        let mut qb = sqlx::QueryBuilder::<$db>::new("WITH v(v_id, v_time, v_code, v_msg) AS (");
                        qb.push_values(&writes, |mut row, (i, msg)| {
                            let r = &chunk[*i];
                            row.push_bind(r.log_id)
                                .push_bind($crate::store::time::secs(r.handle_time))
                                .push_bind(r.handle_code)
                                .push_bind(msg.clone());
                        });
                        qb.push(concat!(
                            ") UPDATE xxl_job_log SET handle_time = ",
                            $ts,
                            "v.v_time",
                            $ts_end,
                            ", handle_code = v.v_code, handle_msg = v.v_msg FROM v WHERE id = v.v_id"
                        ));
                        qb.build().persistent(false).execute(&mut *tx).await?;
                        let mut qb = sqlx::QueryBuilder::<$db>::new(concat!(
                            "SELECT ",
                            log_columns!(),
                            " FROM xxl_job_log WHERE id IN ("
                        ));
                        let mut list = qb.separated(", ");
                        for (i, _) in &writes {
                            list.push_bind(chunk[*i].log_id);
                        }
                        qb.push(")");
                        rows = qb
                            .build_query_as::<$crate::store::LogRow>()
                            .persistent(false)
                            .fetch_all(&mut *tx)
                            .await?
                            .into_iter()
                            .map(|row| (row.id, row))
                            .collect();
                    }
                    tx.commit().await?;
                    for result in chunk {
                        out.push(match (rows.remove(&result.log_id), state.contains_key(&result.log_id)) {
                            (Some(row), _) => HandleOutcome::Applied(Box::new(row)),
                            (None, true) => HandleOutcome::Repeated,
                            (None, false) => HandleOutcome::NotFound,
                        });
                    }
                }
                Ok(out)
            }
        }
    };
}

pub(super) use batch_statements;
