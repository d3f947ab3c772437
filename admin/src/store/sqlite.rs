//! The SQLite backend: one file, one admin process (the default, embedded database).
//!
//! Upstream `datetime` columns hold UTC text `YYYY-MM-DD HH:MM:SS`, written with
//! `datetime(?, 'unixepoch')` and read with `unixepoch(col)` (see `store/time.rs`).
//! Every write transaction starts with `BEGIN IMMEDIATE` so that read-then-write sequences take
//! the database's write lock up front instead of failing with `SQLITE_BUSY` on upgrade.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};

use super::StoreError;
use super::pool::Db;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a connection waits for another's write lock (a pre-read holds it briefly).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens (creating file and parent directory if needed) and migrates.
pub(crate) async fn connect(url: &str) -> Result<Db, StoreError> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // NORMAL is durable across application crashes in WAL mode; only an OS crash or
        // power loss can lose the last commits.
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT);
    // sqlx gives in-memory databases a `file:sqlx-in-memory-…` name; only real files get a
    // directory.
    let in_memory = url.contains(":memory:") || url.contains("mode=memory");
    if !in_memory && let Some(dir) = options.get_filename().parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|source| StoreError::CreateDir { path: dir.to_path_buf(), source })?;
    }
    // One connection for in-memory databases, whose lifetime is that of their connections.
    let max = if in_memory { 1 } else { 8 };
    let pool = SqlitePoolOptions::new().max_connections(max).connect_with(options).await?;
    MIGRATOR.run(&pool).await?;
    Ok(Db::Sqlite { pool, write_gate: Arc::default() })
}

/// A write transaction (`BEGIN IMMEDIATE`) holding this process's write gate until it ends.
///
/// SQLite has one writer at a time, and a connection that finds the write lock taken waits in
/// SQLite's busy handler, which *sleeps* (1, 2, 5, 10 … ms) between retries: with several
/// writers that turned into most of the trigger path's latency. Waiting on the gate instead
/// hands the lock over at once.
pub(crate) struct WriteTx {
    tx: Transaction<'static, Sqlite>,
    _gate: tokio::sync::OwnedMutexGuard<()>,
}

impl WriteTx {
    pub(super) async fn begin(
        pool: &SqlitePool,
        gate: &Arc<tokio::sync::Mutex<()>>,
    ) -> Result<Self, StoreError> {
        let gate = Arc::clone(gate).lock_owned().await;
        Ok(Self { tx: pool.begin_with("BEGIN IMMEDIATE").await?, _gate: gate })
    }

    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }

    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }
}
