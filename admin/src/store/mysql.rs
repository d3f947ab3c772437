//! The MySQL/MariaDB backend: upstream's own database, several admins may share it.
//!
//! Upstream `datetime` columns stay `datetime` (an adopted xxl-job database keeps working) and
//! are converted in SQL with `FROM_UNIXTIME(?)`/`UNIX_TIMESTAMP(col)`, i.e. in the session
//! `time_zone`: sqlx sets `+00:00` unless the URL says `?timezone=…`, which is how a database
//! holding upstream's JVM-local times is read correctly (see `docs/storage.md`). Transactions
//! run at InnoDB's default REPEATABLE READ; racing statements lock rows (`FOR UPDATE`) or guard
//! their `UPDATE`s, which always read the latest committed row. MySQL has no `RETURNING`: new
//! ids come from `LAST_INSERT_ID()`, the first id of a multi-row insert.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions};

use super::StoreError;
use super::pool::{Db, Pools};
use super::schema;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/mysql");

/// Connects and migrates. The migrator takes a named lock (`GET_LOCK`), so admins starting
/// together apply each migration once.
pub(crate) async fn connect(url: &str) -> Result<Db, StoreError> {
    let options = MySqlConnectOptions::from_str(url)?;
    let pool = MySqlPoolOptions::new().max_connections(10).connect_with(options).await?;
    let columns_of = |table: &'static str| {
        sqlx::query_scalar(
            "SELECT CAST(COLUMN_NAME AS CHAR) FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
        )
        .bind(table)
        .fetch_all(&pool)
    };
    let schema = schema::around_migrations(columns_of, MIGRATOR.run(&pool)).await?;
    // Galera and multi-source setups step auto-increment ids by more than one.
    let step: i64 =
        sqlx::query_scalar("SELECT CAST(@@auto_increment_increment AS SIGNED)").fetch_one(&pool).await?;
    Ok(Db::new(Pools::MySql { pool, id_step: step.max(1) }, schema))
}
