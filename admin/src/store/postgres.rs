//! The PostgreSQL backend: several admins may share one database.
//!
//! Upstream `datetime` columns are `timestamptz`, written with `to_timestamp($n)` from epoch
//! seconds and read with `EXTRACT(EPOCH FROM col)` (see `store/time.rs`), so the session time
//! zone never changes a value. Transactions run at the default READ COMMITTED level; the
//! statements that must not race lock rows (`FOR UPDATE`) or guard their `UPDATE`s.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::StoreError;
use super::pool::{Db, Pools};
use super::schema;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// Connects and migrates (the schema is the connection's `search_path`). The migrator takes an
/// advisory lock, so admins starting together apply each migration once.
pub(crate) async fn connect(url: &str) -> Result<Db, StoreError> {
    let options = PgConnectOptions::from_str(url)?;
    let pool = PgPoolOptions::new().max_connections(10).connect_with(options).await?;
    let columns_of = |table: &'static str| {
        sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
        )
        .bind(table)
        .fetch_all(&pool)
    };
    let schema = schema::around_migrations(columns_of, MIGRATOR.run(&pool)).await?;
    Ok(Db::new(Pools::Postgres(pool), schema))
}
