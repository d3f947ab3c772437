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
use sqlx::{Sqlite, SqlitePool, Transaction};

use super::{Backend, Store, StoreError};

// Column lists as macros so that queries stay `const` strings built with `concat!`.

/// `xxl_job_info` columns in [`crate::store::JobRow`] order, times as epoch seconds.
macro_rules! job_columns {
    () => {
        "id, job_group, job_desc, unixepoch(add_time) AS add_time, \
         unixepoch(update_time) AS update_time, author, alarm_email, schedule_type, \
         schedule_conf, misfire_strategy, executor_route_strategy, executor_handler, \
         executor_param, executor_block_strategy, executor_timeout, executor_fail_retry_count, \
         glue_type, glue_source, glue_remark, unixepoch(glue_updatetime) AS glue_updatetime, \
         child_jobid, trigger_status, trigger_last_time, trigger_next_time"
    };
}

/// `xxl_job_log` columns in [`crate::store::LogRow`] order.
macro_rules! log_columns {
    () => {
        "id, job_group, job_id, executor_address, executor_handler, executor_param, \
         executor_sharding_param, executor_fail_retry_count, \
         unixepoch(trigger_time) AS trigger_time, trigger_code, trigger_msg, \
         unixepoch(handle_time) AS handle_time, handle_code, handle_msg, alarm_status"
    };
}

mod groups;
mod jobs;
mod logs;
mod reports;
mod schedule;
mod users;
mod wasm;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

/// How long a connection waits for another's write lock (a pre-read holds it briefly).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Store over a SQLite file.
#[derive(Debug, Clone)]
pub(crate) struct SqliteStore {
    pool: SqlitePool,
    /// Held by every write transaction of this process. SQLite has one writer at a time, and a
    /// connection that finds the write lock taken waits in SQLite's busy handler, which
    /// *sleeps* (1, 2, 5, 10 … ms) between retries: with several writers that turned into
    /// most of the trigger path's latency. Waiting here instead hands the lock over at once.
    write_gate: Arc<tokio::sync::Mutex<()>>,
}

/// A write transaction (`BEGIN IMMEDIATE`) holding this process's write gate until it ends.
pub(super) struct WriteTx {
    tx: Transaction<'static, Sqlite>,
    _gate: tokio::sync::OwnedMutexGuard<()>,
}

impl WriteTx {
    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }
}

impl std::ops::Deref for WriteTx {
    type Target = sqlx::SqliteConnection;

    fn deref(&self) -> &sqlx::SqliteConnection {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut sqlx::SqliteConnection {
        &mut self.tx
    }
}

impl SqliteStore {
    /// Opens (creating file and parent directory if needed) and migrates.
    pub(crate) async fn connect(url: &str) -> Result<Self, StoreError> {
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
        if !in_memory && let Some(dir) = options.get_filename().parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .map_err(|source| StoreError::CreateDir { path: dir.to_path_buf(), source })?;
        }
        // One connection for in-memory databases, whose lifetime is that of their connections.
        let max = if in_memory { 1 } else { 8 };
        let pool = SqlitePoolOptions::new().max_connections(max).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool, write_gate: Arc::default() })
    }

    /// A write transaction holding SQLite's write lock from the start (and, first, this
    /// process's write gate).
    async fn begin_write(&self) -> Result<WriteTx, StoreError> {
        let gate = Arc::clone(&self.write_gate).lock_owned().await;
        Ok(WriteTx { tx: self.pool.begin_with("BEGIN IMMEDIATE").await?, _gate: gate })
    }
}

impl Store for SqliteStore {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }
}

super::credentials::credential_store!(SqliteStore, false);
super::batch_sql::batch_statements!(SqliteStore, sqlx::Sqlite, "datetime(", ", 'unixepoch')", "");
