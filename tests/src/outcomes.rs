//! What became of scheduled triggers, read straight from an admin's database: every durable-ring
//! claim with its log row (so "fired", "called back", "lost" and "doubled" are counted per
//! scheduled trigger), and log totals. Used by the HA and durability tests and by
//! `bench-admin`; works on SQLite, PostgreSQL and MySQL/MariaDB URLs.

use anyhow::bail;
use sqlx::Row as _;

/// One scheduled trigger (ring claim) and what became of it.
#[derive(Debug, Clone)]
pub struct ClaimOutcome {
    pub job_id: i64,
    pub fire_ms: i64,
    /// 0 pending, 1 fired, 2 discarded.
    pub status: i64,
    pub log_id: Option<i64>,
    pub trigger_code: Option<i64>,
    pub handle_code: Option<i64>,
    /// `"i/n"` for one shard of a broadcast trigger.
    pub shard: Option<String>,
}

/// Every claim scheduled in `[from_ms, to_ms)`, with its log row's codes.
pub async fn claims(url: &str, from_ms: i64, to_ms: i64) -> anyhow::Result<Vec<ClaimOutcome>> {
    let sql = |int: &str| {
        format!(
            "SELECT CAST(c.job_id AS {int}), CAST(c.fire_time_ms AS {int}), CAST(c.status AS {int}), \
             CAST(c.log_id AS {int}), CAST(l.trigger_code AS {int}), CAST(l.handle_code AS {int}), \
             c.shard \
             FROM jobwheel_ring_claim c LEFT JOIN xxl_job_log l ON l.id = c.log_id \
             WHERE c.fire_time_ms >= {from_ms} AND c.fire_time_ms < {to_ms}"
        )
    };
    macro_rules! fetch {
        ($pool:ty, $int:literal) => {{
            let pool = <$pool>::connect(url).await?;
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql($int))).fetch_all(&pool).await?;
            pool.close().await;
            rows.iter()
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
                .collect::<Result<Vec<_>, sqlx::Error>>()?
        }};
    }
    Ok(match scheme(url) {
        "sqlite" => fetch!(sqlx::SqlitePool, "BIGINT"),
        "postgres" | "postgresql" => fetch!(sqlx::PgPool, "BIGINT"),
        "mysql" => fetch!(sqlx::MySqlPool, "SIGNED"),
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
