//! What a benchmark run measures: the admin process's CPU time and memory from `/proc`, and —
//! straight from the database — every durable-ring claim of the window with its log row, so
//! "fired", "called back" and "lost" are counted per scheduled trigger, not estimated.

use anyhow::{Context as _, bail};
use sqlx::Row as _;

/// CPU time and memory of a process at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcSample {
    /// User + system CPU time, in clock ticks.
    pub(crate) cpu_ticks: u64,
    pub(crate) rss_kib: u64,
    /// Peak RSS so far.
    pub(crate) peak_rss_kib: u64,
}

pub(crate) fn sample(pid: u32) -> anyhow::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is parenthesised and may hold spaces: count from its end.
    let after = &stat[stat.rfind(')').context("stat format")? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let cpu_ticks = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = |key: &str| -> anyhow::Result<u64> {
        let line = status.lines().find(|l| l.starts_with(key)).with_context(|| format!("{key} in status"))?;
        Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
    };
    Ok(ProcSample { cpu_ticks, rss_kib: kib("VmRSS:")?, peak_rss_kib: kib("VmHWM:")? })
}

/// Clock ticks per second of `/proc/*/stat` times: the kernel reports them in USER_HZ, which
/// is 100 on Linux for every mainstream architecture (`getconf CLK_TCK`).
pub(crate) const TICKS_PER_SECOND: u64 = 100;

/// One scheduled trigger (ring claim) and what became of it.
#[derive(Debug, Clone)]
pub(crate) struct ClaimOutcome {
    pub(crate) job_id: i64,
    pub(crate) fire_ms: i64,
    /// 0 pending, 1 fired, 2 discarded.
    pub(crate) status: i64,
    pub(crate) log_id: Option<i64>,
    pub(crate) trigger_code: Option<i64>,
    pub(crate) handle_code: Option<i64>,
}

/// Every claim scheduled in `[from_ms, to_ms)`, with its log row's codes.
pub(crate) async fn claims(url: &str, from_ms: i64, to_ms: i64) -> anyhow::Result<Vec<ClaimOutcome>> {
    let sql = |int: &str| {
        format!(
            "SELECT CAST(c.job_id AS {int}), CAST(c.fire_time_ms AS {int}), CAST(c.status AS {int}), \
             CAST(c.log_id AS {int}), CAST(l.trigger_code AS {int}), CAST(l.handle_code AS {int}) \
             FROM jobwheel_ring_claim c LEFT JOIN xxl_job_log l ON l.id = c.log_id \
             WHERE c.fire_time_ms >= {from_ms} AND c.fire_time_ms < {to_ms}"
        )
    };
    macro_rules! fetch {
        ($pool:ty, $int:literal) => {{
            let pool = <$pool>::connect(url).await?;
            let rows = sqlx::query(&sql($int)).fetch_all(&pool).await?;
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
pub(crate) async fn log_totals(url: &str) -> anyhow::Result<(i64, i64, i64)> {
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
            let row = sqlx::query(&sql($int)).fetch_one(&pool).await?;
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

/// `(p50, p99, max)` of `values` (sorted in place); zeros when empty.
pub(crate) fn percentiles(values: &mut [i64]) -> (i64, i64, i64) {
    if values.is_empty() {
        return (0, 0, 0);
    }
    values.sort_unstable();
    let at = |q: f64| {
        let rank = ((values.len() as f64) * q).ceil() as usize;
        values[rank.clamp(1, values.len()) - 1]
    };
    (at(0.50), at(0.99), values[values.len() - 1])
}
