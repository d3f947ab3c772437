//! Map nodes' items (`jobwheel_workflow_item`, migration 0039). The steps that change items run
//! in the instance's transaction (`instance_tx.rs` calls the functions here with its `Tx`): an
//! item is taken DUE → FIRED with its log row under the instance's row lock, so of two admins
//! one fires each attempt. The reads outside it serve the sweep and the API.

use async_trait::async_trait;

use super::SqlStore;
use super::batch::{CHUNK, insert_logs, update_from_values};
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::workflow_store::{ItemTally, RunEnd, WorkflowItemStore};
use crate::store::{
    InstanceId, ItemCounts, ItemLog, ItemRow, LogId, NewLog, Page, Paged, RunId, RunStatus, StoreError,
    TakenItem,
};

/// Rows per multi-row insert (4 binds each).
const INSERT_CHUNK: usize = 250;

/// A fired item's attempt as its log row says; a log row deleted meanwhile (a log clean-up)
/// reads as a failed attempt, so the item cannot wait for ever.
static FIRED: Sql = Sql::new(
    "SELECT i.id, i.idx, i.attempt, i.log_id, COALESCE(x.trigger_code, 500) AS trigger_code, \
    COALESCE(x.handle_code, 500) AS handle_code, \
    CASE WHEN x.id IS NULL THEN 'its log row was deleted' ELSE x.handle_msg END AS handle_msg, o.output \
    FROM jobwheel_workflow_item i LEFT JOIN xxl_job_log x ON x.id = i.log_id \
    LEFT JOIN jobwheel_workflow_output o ON o.log_id = i.log_id \
    WHERE i.run_id = ? AND i.status = 1 ORDER BY i.idx",
);
static DUE: Sql = Sql::new(
    "SELECT id, idx, attempt, item FROM jobwheel_workflow_item \
    WHERE run_id = ? AND status = 0 AND due_ms <= ? ORDER BY idx LIMIT ?",
);
static LEFT: Sql =
    Sql::new("SELECT COUNT(*) FROM jobwheel_workflow_item WHERE run_id = ? AND status IN (0, 1)");
static OUTPUTS: Sql = Sql::new("SELECT output FROM jobwheel_workflow_item WHERE run_id = ? ORDER BY idx");
static TALLY: Sql = Sql::new(
    "SELECT COUNT(*), COUNT(CASE WHEN status = 3 THEN 1 END) FROM jobwheel_workflow_item WHERE run_id = ?",
);
static FIRST_FAILED: Sql = Sql::new(
    "SELECT idx, message FROM jobwheel_workflow_item WHERE run_id = ? AND status = 3 ORDER BY idx LIMIT 1",
);
/// A rerun's items: what succeeded stays succeeded (its output and log row kept); every other
/// item is due at a first attempt.
static RERUN: Sql = Sql::new(
    "INSERT INTO jobwheel_workflow_item (run_id, idx, attempt, status, due_ms, end_ms, log_id, item, output) \
    SELECT ?, idx, CASE WHEN status = 2 THEN attempt ELSE 1 END, CASE WHEN status = 2 THEN 2 ELSE 0 END, ?, \
    CASE WHEN status = 2 THEN end_ms ELSE 0 END, CASE WHEN status = 2 THEN log_id ELSE NULL END, item, \
    CASE WHEN status = 2 THEN output ELSE NULL END FROM jobwheel_workflow_item WHERE run_id = ?",
);
static FIRED_LOGS: Sql = Sql::new(
    "SELECT log_id FROM jobwheel_workflow_item WHERE run_id = ? AND status = 1 AND log_id IS NOT NULL",
);
static STOP: Sql = Sql::new(
    "UPDATE jobwheel_workflow_item SET status = 6, end_ms = ?, message = 'stopped' \
    WHERE run_id = ? AND status IN (0, 1)",
);
/// Running instances with a map run that has items due or fired: the sweep advances them, for
/// retries whose delay passed and results an admin that died did not settle.
static MAPPING: Sql = Sql::new(
    "SELECT DISTINCT r.instance_id FROM jobwheel_workflow_run r WHERE r.status = 8 AND EXISTS \
    (SELECT 1 FROM jobwheel_workflow_item i WHERE i.run_id = r.id AND i.status IN (0, 1)) \
    ORDER BY r.instance_id LIMIT ?",
);
pub(super) static DELETE_ITEMS: Sql = Sql::new(
    "DELETE FROM jobwheel_workflow_item WHERE run_id IN (SELECT r.id FROM jobwheel_workflow_run r \
    JOIN jobwheel_workflow_instance i ON i.id = r.instance_id WHERE i.workflow_id = ?)",
);

/// Inserts `run`'s items in index order, due at `now_ms`.
pub(super) async fn insert(tx: &mut Tx, run: RunId, items: &[String], now_ms: i64) -> Result<(), StoreError> {
    for (chunk_no, chunk) in items.chunks(INSERT_CHUNK).enumerate() {
        let mut q = QueryBuf::new(
            "INSERT INTO jobwheel_workflow_item (run_id, idx, attempt, status, due_ms, item) VALUES ",
        );
        for (n, item) in chunk.iter().enumerate() {
            let idx = i32::try_from(chunk_no * INSERT_CHUNK + n).unwrap_or(i32::MAX);
            q.push(if n == 0 { "(" } else { ", (" });
            q.bind(run)
                .push(", ")
                .bind(idx)
                .push(", 1, 0, ")
                .bind(now_ms)
                .push(", ")
                .bind(item.as_str())
                .push(")");
        }
        tx.ex().execute(&q, q.args()).await?;
    }
    Ok(())
}

pub(super) async fn fired(tx: &mut Tx, run: RunId) -> Result<Vec<ItemLog>, StoreError> {
    tx.ex().fetch_all(&FIRED, &args![run]).await
}

/// Ends fired items, a chunk in one statement ([`update_from_values`]): a step that settles a
/// hundred results costs one round trip, not a hundred.
pub(super) async fn end(tx: &mut Tx, ends: &[(i64, RunEnd)]) -> Result<(), StoreError> {
    for chunk in ends.chunks(CHUNK) {
        let mut q = update_from_values(
            tx.ex().backend(),
            "jobwheel_workflow_item",
            &["v_id", "v_status", "v_output", "v_message", "v_end"],
            chunk,
            |(id, end)| {
                vec![
                    (*id).into(),
                    end.status.into(),
                    end.output.as_deref().into(),
                    end.message.as_deref().into(),
                    end.end_ms.into(),
                ]
            },
            "status = v.v_status, output = v.v_output, message = v.v_message, end_ms = v.v_end",
        );
        q.push(" AND jobwheel_workflow_item.status = 1");
        tx.ex().execute(&q, q.args()).await?;
    }
    Ok(())
}

/// Makes fired items due again at `due_ms`, each as its next attempt.
pub(super) async fn retry(tx: &mut Tx, items: &[i64], due_ms: i64) -> Result<(), StoreError> {
    for chunk in items.chunks(CHUNK) {
        let mut q = QueryBuf::new(
            "UPDATE jobwheel_workflow_item SET status = 0, attempt = attempt + 1, log_id = NULL, due_ms = ",
        );
        q.bind(due_ms)
            .push(" WHERE status = 1 AND id IN (")
            .bind_shaped(chunk.iter().copied())
            .push(")")
            .keep();
        tx.ex().execute(&q, q.args()).await?;
    }
    Ok(())
}

/// Takes due items: their log rows in one statement, then the items `DUE → FIRED` each with
/// its row in one more (a step refilling 200 slots costs three statements, not 400).
pub(super) async fn take(
    tx: &mut Tx,
    id_step: i64,
    run: RunId,
    limit: u32,
    log: &NewLog,
    now_ms: i64,
) -> Result<Vec<TakenItem>, StoreError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let due: Vec<(i64, i32, i32, String)> =
        tx.ex().fetch_all(&DUE, &args![run, now_ms, i64::from(limit)]).await?;
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let logs: Vec<&NewLog> = due.iter().map(|_| log).collect();
    let log_ids = insert_logs(tx, id_step, &logs).await?;
    let mut q = QueryBuf::new("UPDATE jobwheel_workflow_item SET status = 1, fired_ms = ");
    q.bind(now_ms).push(", log_id = CASE id");
    for ((id, ..), log_id) in due.iter().zip(&log_ids) {
        q.push(" WHEN ").bind(*id).push(" THEN ").bind(*log_id);
    }
    q.push(" END WHERE status = 0 AND id IN (").bind_list(due.iter().map(|(id, ..)| *id)).push(")");
    // Under the instance's row lock nobody else takes them: every one is taken.
    tx.ex().execute(&q, q.args()).await?;
    Ok(due
        .into_iter()
        .zip(log_ids)
        .map(|((_, idx, attempt, item), log_id)| TakenItem { idx, attempt, item, log_id })
        .collect())
}

pub(super) async fn left(tx: &mut Tx, run: RunId) -> Result<bool, StoreError> {
    Ok(tx.ex().fetch_one::<(i64,)>(&LEFT, &args![run]).await?.0 > 0)
}

pub(super) async fn outputs(tx: &mut Tx, run: RunId) -> Result<Vec<Option<String>>, StoreError> {
    tx.ex().fetch_column(&OUTPUTS, &args![run]).await
}

pub(super) async fn tally(tx: &mut Tx, run: RunId) -> Result<ItemTally, StoreError> {
    let (total, failed) = tx.ex().fetch_one::<(i64, i64)>(&TALLY, &args![run]).await?;
    let first_failure =
        if failed > 0 { tx.ex().fetch_optional(&FIRST_FAILED, &args![run]).await? } else { None };
    Ok(ItemTally { total, failed, first_failure })
}

pub(super) async fn rerun(tx: &mut Tx, from: RunId, to: RunId, now_ms: i64) -> Result<(), StoreError> {
    tx.ex().execute(&RERUN, &args![to, now_ms, from]).await?;
    Ok(())
}

pub(super) async fn stop(tx: &mut Tx, run: RunId, now_ms: i64) -> Result<Vec<LogId>, StoreError> {
    let logs: Vec<i64> = tx.ex().fetch_column(&FIRED_LOGS, &args![run]).await?;
    tx.ex().execute(&STOP, &args![now_ms, run]).await?;
    Ok(logs.into_iter().map(LogId).collect())
}

#[async_trait]
impl WorkflowItemStore for SqlStore {
    async fn mapping_instances(&self, limit: u32) -> Result<Vec<InstanceId>, StoreError> {
        let ids: Vec<i64> = self.ex().fetch_column(&MAPPING, &args![i64::from(limit)]).await?;
        Ok(ids.into_iter().map(InstanceId).collect())
    }

    async fn item_counts(&self, runs: &[RunId]) -> Result<Vec<(RunId, ItemCounts)>, StoreError> {
        if runs.is_empty() {
            return Ok(Vec::new());
        }
        let mut q =
            QueryBuf::new("SELECT run_id, status, COUNT(*) FROM jobwheel_workflow_item WHERE run_id IN (");
        q.bind_list(runs.iter().copied()).push(") GROUP BY run_id, status ORDER BY run_id");
        let rows: Vec<(RunId, RunStatus, i64)> = self.ex().fetch_all(&q, q.args()).await?;
        let mut out: Vec<(RunId, ItemCounts)> = Vec::new();
        for (run, status, count) in rows {
            match out.last_mut() {
                Some((last, counts)) if *last == run => counts.add(status, count),
                _ => {
                    let mut counts = ItemCounts::default();
                    counts.add(status, count);
                    out.push((run, counts));
                }
            }
        }
        Ok(out)
    }

    async fn page_items(
        &self,
        run: RunId,
        status: Option<RunStatus>,
        page: Page,
    ) -> Result<Paged<ItemRow>, StoreError> {
        let filter = |q: &mut QueryBuf<'_>| {
            q.bind(run);
            if let Some(status) = status {
                q.push(" AND status = ").bind(status);
            }
        };
        let mut count = QueryBuf::new("SELECT COUNT(*) FROM jobwheel_workflow_item WHERE run_id = ");
        filter(&mut count);
        let total = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut q = QueryBuf::new(
            "SELECT idx, attempt, status, log_id, item, output, message FROM jobwheel_workflow_item WHERE run_id = ",
        );
        filter(&mut q);
        q.push(" ORDER BY idx LIMIT ")
            .bind(i64::from(page.limit))
            .push(" OFFSET ")
            .bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&q, q.args()).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }
}
