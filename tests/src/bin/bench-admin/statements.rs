//! Where the database's time goes, statement by statement: the server's own per-statement
//! summary over the window — PostgreSQL's `pg_stat_statements`, MariaDB/MySQL's
//! `performance_schema` digest table — as calls and rows per trigger and the share of the
//! server's statement time, biggest first. Both are off in a default server (the first needs
//! `shared_preload_libraries`, the second `performance_schema=ON`, each a restart:
//! docs/benchmarks.md says how); without them this prints why and the bench goes on.

use anyhow::Context as _;

/// Statements printed: the ones that matter are few.
const TOP: i64 = 14;

/// How a statement's text is shortened for the table.
const TEXT_CHARS: usize = 110;

/// Clears the summary, so what [`print`] shows is the window's. `false`: not available.
#[expect(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) async fn reset(url: &str) -> bool {
    let reset = async {
        match scheme(url) {
            "postgres" | "postgresql" => {
                let pool = sqlx::PgPool::connect(url).await?;
                sqlx::query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").execute(&pool).await?;
                sqlx::query("SELECT pg_stat_statements_reset()").execute(&pool).await?;
                pool.close().await;
            }
            "mysql" => {
                let pool = sqlx::MySqlPool::connect(url).await?;
                for table in ["events_statements_summary_by_digest", "prepared_statements_instances"] {
                    sqlx::query(sqlx::AssertSqlSafe(format!("TRUNCATE TABLE performance_schema.{table}")))
                        .execute(&pool)
                        .await?;
                }
                pool.close().await;
            }
            other => anyhow::bail!("no per-statement summary on {other}"),
        }
        anyhow::Ok(())
    };
    match reset.await {
        Ok(()) => true,
        Err(e) => {
            println!("per-statement summary: not available ({e:#})");
            false
        }
    }
}

/// A summary row as the server gives it: text, calls, rows, milliseconds.
type Row = (String, f64, f64, f64);

/// One statement shape's totals over the window.
pub(crate) struct Shape {
    text: String,
    calls: f64,
    rows: f64,
    millis: f64,
}

/// The biggest statements (by server time) since [`reset`]: read at the window's end, before
/// the bench's own checks read the tables.
pub(crate) async fn read(url: &str) -> anyhow::Result<Vec<Shape>> {
    let rows = match scheme(url) {
        "postgres" | "postgresql" => {
            let pool = sqlx::PgPool::connect(url).await?;
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT query, calls::float8, rows::float8, total_exec_time FROM pg_stat_statements \
                 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 ORDER BY total_exec_time DESC LIMIT $1",
            )
            .bind(TOP)
            .fetch_all(&pool)
            .await
            .context("pg_stat_statements")?;
            pool.close().await;
            rows
        }
        "mysql" => {
            let pool = sqlx::MySqlPool::connect(url).await?;
            // Timers are picoseconds; rows are what a statement sent or changed. The admin's
            // statements are prepared, and the server summarizes those per prepared statement
            // (one per connection), not by digest, where only `BEGIN`, `COMMIT` and the like are.
            // MariaDB 10.11 lists the prepared statements there but counts no executions: on
            // it the summary shows the text statements only (transactions' share of the time).
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT t, CAST(SUM(c) AS DOUBLE), CAST(SUM(r) AS DOUBLE), CAST(SUM(ms) AS DOUBLE) FROM (\
                 SELECT COALESCE(DIGEST_TEXT, '') AS t, COUNT_STAR AS c, SUM_ROWS_SENT + SUM_ROWS_AFFECTED AS r, \
                 SUM_TIMER_WAIT / 1e9 AS ms FROM performance_schema.events_statements_summary_by_digest \
                 WHERE SCHEMA_NAME = DATABASE() \
                 UNION ALL SELECT SQL_TEXT, COUNT_EXECUTE, SUM_ROWS_SENT + SUM_ROWS_AFFECTED, \
                 SUM_TIMER_EXECUTE / 1e9 FROM performance_schema.prepared_statements_instances\
                 ) s GROUP BY t HAVING SUM(c) > 0 ORDER BY SUM(ms) DESC LIMIT ?",
            )
            .bind(TOP)
            .fetch_all(&pool)
            .await
            .context("performance_schema digests")?;
            pool.close().await;
            rows
        }
        _ => Vec::new(),
    };
    Ok(rows.into_iter().map(|(text, calls, rows, millis)| Shape { text, calls, rows, millis }).collect())
}

/// Prints `shapes` per trigger (shares of their summed time: the list is the top, not all).
#[expect(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) fn print(shapes: &[Shape], triggers: u64) {
    let total: f64 = shapes.iter().map(|s| s.millis).sum();
    let per = |n: f64| if triggers == 0 { 0.0 } else { n / triggers as f64 };
    println!("the server's statements over {triggers} triggers (top {TOP} by time):");
    println!("  calls/trigger  rows/call  share of these statements' time  statement");
    for s in shapes {
        let rows_per_call = if s.calls > 0.0 { s.rows / s.calls } else { 0.0 };
        let share = if total > 0.0 { 100.0 * s.millis / total } else { 0.0 };
        let text: String = s.text.split_whitespace().collect::<Vec<_>>().join(" ");
        let short: String = text.chars().take(TEXT_CHARS).collect();
        println!("  {:>13.3}  {:>9.1}  {:>31.1}%  {short}", per(s.calls), rows_per_call, share);
    }
}

fn scheme(url: &str) -> &str {
    url.split_once(':').map_or("", |(s, _)| s)
}
