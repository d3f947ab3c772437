//! What became of scheduled triggers, read straight from an admin's database: every durable-ring
//! claim with its log row (so "fired", "called back", "lost" and "doubled" are counted per
//! scheduled trigger), and log totals. Used by the HA and durability tests and by
//! `bench-admin`; works on SQLite, PostgreSQL and MySQL/MariaDB URLs.
//!
//! A staged claim taken on time leaves no claim row: the admin deletes it, and its log row —
//! staged by the pre-read with the scheduled second as trigger time — is the fire's record
//! (docs/delivery.md, "Fewer durable writes per trigger"). So the fired triggers are the fired
//! claims plus the log rows no claim points at, less the admin's missed-fire rows, which stand
//! for skipped fire times. This assumes what the suites' jobs are: no retries, no child jobs and
//! no manual triggers, whose log rows would otherwise count as fires too.

use anyhow::bail;
use jobwheel_admin::engine::is_missed_fire;
use sqlx::Row as _;

/// One scheduled trigger (ring claim) and what became of it.
#[derive(Debug, Clone)]
pub struct ClaimOutcome {
    pub job_id: i64,
    /// The scheduled fire time, epoch ms. A fire known only by its log row has its trigger
    /// time, whole seconds: exact for CRON, and for FIX_RATE after a job's first fire (the
    /// following ones are rounded up to whole seconds, as upstream 3.4 does).
    pub fire_ms: i64,
    /// 0 pending, 1 fired, 2 discarded.
    pub status: i64,
    pub log_id: Option<i64>,
    pub trigger_code: Option<i64>,
    pub handle_code: Option<i64>,
    /// `"i/n"` for one shard of a broadcast trigger.
    pub shard: Option<String>,
}

/// Every trigger scheduled in `[from_ms, to_ms)`, with its log row's codes: the claims, and the
/// fires whose claims were deleted when they were taken (their log rows, see above).
pub async fn claims(url: &str, from_ms: i64, to_ms: i64) -> anyhow::Result<Vec<ClaimOutcome>> {
    let claims = |int: &str| {
        format!(
            "SELECT CAST(c.job_id AS {int}), CAST(c.fire_time_ms AS {int}), CAST(c.status AS {int}), \
             CAST(c.log_id AS {int}), CAST(l.trigger_code AS {int}), CAST(l.handle_code AS {int}), \
             c.shard \
             FROM jobwheel_ring_claim c LEFT JOIN xxl_job_log l ON l.id = c.log_id \
             WHERE c.fire_time_ms >= {from_ms} AND c.fire_time_ms < {to_ms}"
        )
    };
    let linked =
        |int: &str| format!("SELECT CAST(log_id AS {int}) FROM jobwheel_ring_claim WHERE log_id IS NOT NULL");
    // The window's log rows by trigger second (a second either side: rounding), narrowed below.
    let logs = |int: &str, epoch: &str| {
        let (from_s, to_s) = (from_ms.div_euclid(1000) - 1, to_ms.div_euclid(1000) + 1);
        format!(
            "SELECT CAST(id AS {int}), CAST(job_id AS {int}), CAST({epoch} AS {int}), \
             CAST(trigger_code AS {int}), CAST(handle_code AS {int}), COALESCE(trigger_msg, '') \
             FROM xxl_job_log WHERE {epoch} >= {from_s} AND {epoch} <= {to_s}"
        )
    };
    macro_rules! fetch {
        ($pool:ty, $int:literal, $epoch:literal, $snapshot:literal) => {{
            // One snapshot for the three reads: a claim taken (deleted) between them would
            // otherwise be missed, or its row counted while the claim is still seen pending.
            let pool = <$pool>::connect(url).await?;
            let mut tx = pool.begin().await?;
            if !$snapshot.is_empty() {
                sqlx::query($snapshot).execute(&mut *tx).await?;
            }
            let claim_rows = sqlx::query(sqlx::AssertSqlSafe(claims($int))).fetch_all(&mut *tx).await?;
            let linked: Vec<i64> =
                sqlx::query_scalar(sqlx::AssertSqlSafe(linked($int))).fetch_all(&mut *tx).await?;
            let log_rows = sqlx::query(sqlx::AssertSqlSafe(logs($int, $epoch))).fetch_all(&mut *tx).await?;
            tx.rollback().await?;
            pool.close().await;
            let mut out = claim_rows
                .iter()
                .map(|r| {
                    Ok(ClaimOutcome {
                        job_id: r.try_get(0)?,
                        fire_ms: r.try_get(1)?,
                        status: r.try_get(2)?,
                        log_id: r.try_get(3)?,
                        trigger_code: r.try_get(4)?,
                        handle_code: r.try_get(5)?,
                        shard: r.try_get(6)?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            let linked: std::collections::HashSet<i64> = linked.into_iter().collect();
            for r in &log_rows {
                let (id, job_id, second): (i64, i64, i64) = (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
                let trigger_msg: String = r.try_get(5)?;
                let fire_ms = second * 1000;
                if linked.contains(&id)
                    || is_missed_fire(&trigger_msg)
                    || fire_ms < from_ms
                    || fire_ms >= to_ms
                {
                    continue;
                }
                out.push(ClaimOutcome {
                    job_id,
                    fire_ms,
                    status: 1,
                    log_id: Some(id),
                    trigger_code: r.try_get(3)?,
                    handle_code: r.try_get(4)?,
                    shard: None,
                });
            }
            out
        }};
    }
    Ok(match scheme(url) {
        // SQLite (WAL) and InnoDB (REPEATABLE READ) keep the first read's snapshot for the
        // transaction; PostgreSQL's default, READ COMMITTED, takes one per statement.
        "sqlite" => fetch!(sqlx::SqlitePool, "BIGINT", "unixepoch(trigger_time)", ""),
        "postgres" | "postgresql" => fetch!(
            sqlx::PgPool,
            "BIGINT",
            "CAST(EXTRACT(EPOCH FROM trigger_time) AS BIGINT)",
            "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"
        ),
        "mysql" => {
            fetch!(sqlx::MySqlPool, "SIGNED", "CAST(UNIX_TIMESTAMP(trigger_time) AS SIGNED)", "")
        }
        other => bail!("unsupported database scheme {other:?}"),
    })
}

/// Log rows written so far, and how many of them triggered and finished successfully.
pub async fn log_totals(url: &str) -> anyhow::Result<(i64, i64, i64)> {
    let sql = |int: &str| {
        format!(
            "SELECT CAST(COUNT(*) AS {int}), \
             CAST(COALESCE(SUM(CASE WHEN trigger_code = 200 THEN 1 ELSE 0 END), 0) AS {int}), \
             CAST(COALESCE(SUM(CASE WHEN handle_code = 200 THEN 1 ELSE 0 END), 0) AS {int}) FROM xxl_job_log"
        )
    };
    macro_rules! fetch {
        ($pool:ty, $int:literal) => {{
            let pool = <$pool>::connect(url).await?;
            let row = sqlx::query(sqlx::AssertSqlSafe(sql($int))).fetch_one(&pool).await?;
            pool.close().await;
            (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)
        }};
    }
    Ok(match scheme(url) {
        "sqlite" => fetch!(sqlx::SqlitePool, "BIGINT"),
        "postgres" | "postgresql" => fetch!(sqlx::PgPool, "BIGINT"),
        "mysql" => fetch!(sqlx::MySqlPool, "SIGNED"),
        other => bail!("unsupported database scheme {other:?}"),
    })
}

fn scheme(url: &str) -> &str {
    url.split_once(':').map_or("", |(s, _)| s)
}
