//! What one window cost the database, per trigger (issue 58, item 5): the statements every
//! admin ran (their `jobwheel_db_statement_seconds` count: one per round trip of a statement,
//! transactions' `BEGIN` and `COMMIT` included where the driver sends them), and the server's
//! own counters — PostgreSQL's `pg_stat_database` (transactions, rows), MariaDB's
//! `SHOW GLOBAL STATUS` (statements received, commits, rows). Read before and after the window
//! and divided by the triggers whose scheduled second lies in it.

use std::collections::BTreeMap;

use anyhow::Context as _;
use sqlx::Row as _;

use crate::setup::API_TOKEN;

/// Counter name → value, at one instant.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters(BTreeMap<String, f64>);

/// MariaDB's global counters worth a look per trigger.
const MYSQL_STATUS: [&str; 12] = [
    "Questions",
    "Com_begin",
    "Com_commit",
    "Com_stmt_execute",
    "Com_stmt_prepare",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_data_fsyncs",
];

/// The admins' statement counts and the server's counters now.
pub(crate) async fn read(url: &str, admin_urls: &[String]) -> anyhow::Result<Counters> {
    let mut counters = BTreeMap::new();
    let http = reqwest::Client::new();
    let mut statements = 0.0;
    for admin in admin_urls {
        let page =
            http.get(format!("{admin}/metrics")).bearer_auth(API_TOKEN).send().await?.error_for_status()?;
        let page = page.text().await?;
        let count = page
            .lines()
            .find(|l| l.starts_with("jobwheel_db_statement_seconds_count"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .context("the admin's /metrics has jobwheel_db_statement_seconds_count")?;
        statements += count;
    }
    counters.insert("admin statements".to_owned(), statements);
    match url.split_once(':').map_or("", |(s, _)| s) {
        "postgres" | "postgresql" => {
            let pool = sqlx::PgPool::connect(url).await?;
            // The server publishes a backend's counts at its transaction's end, at most once a
            // second: over a minute's window that is within a second's worth.
            let row = sqlx::query(
                "SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, \
                 tup_deleted FROM pg_stat_database WHERE datname = current_database()",
            )
            .fetch_one(&pool)
            .await?;
            for (n, name) in [
                "commits",
                "rollbacks",
                "rows scanned",
                "rows fetched",
                "rows inserted",
                "rows updated",
                "rows deleted",
            ]
            .iter()
            .enumerate()
            {
                counters.insert(format!("server {name}"), row.try_get::<i64, _>(n)? as f64);
            }
            pool.close().await;
        }
        "mysql" => {
            let pool = sqlx::MySqlPool::connect(url).await?;
            let rows = sqlx::query("SHOW GLOBAL STATUS").fetch_all(&pool).await?;
            for row in rows {
                let name: String = row.try_get(0)?;
                if MYSQL_STATUS.contains(&name.as_str()) {
                    let value: String = row.try_get(1)?;
                    counters.insert(format!("server {name}"), value.parse().unwrap_or(0.0));
                }
            }
            pool.close().await;
        }
        _ => {}
    }
    Ok(Counters(counters))
}

/// The log rows whose scheduled (trigger) second lies in `[from_ms, to_ms)`: the window's
/// triggers, fired or still due.
pub(crate) async fn triggers_in(url: &str, from_ms: i64, to_ms: i64) -> anyhow::Result<u64> {
    count_logs(url, from_ms, to_ms, "%").await
}

/// With several admins: how many of the window's triggers each fired (its address is in the
/// log row's `trigger_msg`, "调度机器" / "Trigger admin address").
pub(crate) async fn fired_by(
    url: &str,
    admin_urls: &[String],
    from_ms: i64,
    to_ms: i64,
) -> anyhow::Result<Vec<u64>> {
    let mut shares = Vec::new();
    for admin in admin_urls {
        let needle = format!("%{}%", admin.trim_end_matches('/'));
        shares.push(count_logs(url, from_ms, to_ms, &needle).await?);
    }
    Ok(shares)
}

/// The log rows of `[from_ms, to_ms)` whose `trigger_msg` is `LIKE` `pattern` (`%`: every row,
/// a row without a message included).
async fn count_logs(url: &str, from_ms: i64, to_ms: i64, pattern: &str) -> anyhow::Result<u64> {
    let (from, to) = (from_ms / 1000, to_ms / 1000);
    let message = "(? = '%' OR trigger_msg LIKE ?)";
    macro_rules! count {
        ($pool:ty, $sql:expr) => {{
            let pool = <$pool>::connect(url).await?;
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe($sql))
                .bind(from)
                .bind(to)
                .bind(pattern)
                .bind(pattern)
                .fetch_one(&pool)
                .await?;
            pool.close().await;
            n
        }};
    }
    let count = match url.split_once(':').map_or("", |(s, _)| s) {
        "postgres" | "postgresql" => count!(
            sqlx::PgPool,
            "SELECT COUNT(*) FROM xxl_job_log WHERE trigger_time >= to_timestamp($1) \
             AND trigger_time < to_timestamp($2) AND ($3 = '%' OR trigger_msg LIKE $4)"
                .to_owned()
        ),
        "mysql" => count!(
            sqlx::MySqlPool,
            format!(
                "SELECT CAST(COUNT(*) AS SIGNED) FROM xxl_job_log WHERE trigger_time >= FROM_UNIXTIME(?) \
                 AND trigger_time < FROM_UNIXTIME(?) AND {message}"
            )
        ),
        _ => count!(
            sqlx::SqlitePool,
            format!(
                "SELECT COUNT(*) FROM xxl_job_log WHERE trigger_time >= datetime(?, 'unixepoch') \
                 AND trigger_time < datetime(?, 'unixepoch') AND {message}"
            )
        ),
    };
    Ok(u64::try_from(count).unwrap_or(0))
}

/// One line per counter: its growth over the window, per trigger.
#[expect(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) fn print_per_trigger(before: &Counters, after: &Counters, triggers: u64) {
    println!("database work per trigger over {triggers} triggers:");
    for (name, end) in &after.0 {
        let start = before.0.get(name).copied().unwrap_or(0.0);
        let per = if triggers == 0 { 0.0 } else { (end - start) / triggers as f64 };
        println!("  {name}: {per:.2}");
    }
}
