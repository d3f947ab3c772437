//! The SQLite backend: one file, one admin process (the default, embedded database).
//!
//! Upstream `datetime` columns hold UTC text `YYYY-MM-DD HH:MM:SS`, written with
//! `datetime(?, 'unixepoch')` and read with `unixepoch(col)` (see `store/time.rs`).
//!
//! **One writer connection.** SQLite has one writer at a time, so every write transaction of
//! the process runs on one dedicated connection ([`Writer`]) and reads use a few others
//! ([`Readers`], `readers.rs`: lent without sqlx's pool and its ping on every return).
//! Waiting for the writer is waiting for the write lock: writers queue in arrival order and the
//! lock passes at once, where SQLite's busy handler would *sleep* (1, 2, 5, 10 … ms) between
//! retries. The writer is no pooled connection because sqlx's pool pings a connection when it
//! is acquired and again when it is returned (two more round trips to its worker thread per
//! transaction, the second before the next writer may have it); before, writers queued on an
//! in-process gate and then took any pooled connection, so they could wait for one that readers
//! held, and eight connections prepared the same write statements. Every write transaction
//! starts with `BEGIN IMMEDIATE`, so a read-then-write never fails to upgrade with
//! `SQLITE_BUSY`.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous, SqliteTransactionManager,
};
use sqlx::{ConnectOptions, SqlSafeStr, Sqlite, SqliteConnection, SqlitePool, Transaction};
use sqlx_core::transaction::TransactionManager;
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::StoreError;
use super::pool::{Db, Pools};
use super::readers::Readers;
use super::schema::{self, Schema};

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
    // In memory, a connection is a database of its own: one pooled connection does everything.
    if in_memory {
        let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options).await?;
        let schema = migrate(&pool).await?;
        return Ok(Db::new(Pools::Sqlite(SqliteConns::Memory(pool)), schema));
    }
    // sqlx's pool only migrates; reads then run on [`Readers`] (see `readers.rs` for why).
    let pool = SqlitePoolOptions::new().max_connections(1).connect_with(options.clone()).await?;
    let schema = migrate(&pool).await;
    pool.close().await;
    let schema = schema?;
    let writer = options.connect().await?;
    let readers = Arc::new(Readers::new(options, READERS));
    Ok(Db::new(Pools::Sqlite(SqliteConns::File { readers, writer: Arc::new(Mutex::new(writer)) }), schema))
}

/// Applies the migrations, reading the schema's generation before and its names after.
async fn migrate(pool: &SqlitePool) -> Result<Schema, StoreError> {
    let columns_of = |table: &'static str| {
        sqlx::query_scalar("SELECT name FROM pragma_table_info(?)").bind(table).fetch_all(pool)
    };
    schema::around_migrations(columns_of, MIGRATOR.run(pool)).await
}

/// Connections for reads (and the few single-statement writes outside a transaction).
const READERS: usize = 7;

/// A SQLite database's connections.
#[derive(Debug, Clone)]
pub(crate) enum SqliteConns {
    /// A file: read connections, and the one connection every write transaction runs on.
    File { readers: Arc<Readers>, writer: Writer },
    /// In memory, where a connection is a database of its own: one pooled connection does
    /// everything.
    Memory(SqlitePool),
}

/// The connection every write transaction of the process runs on.
pub(crate) type Writer = Arc<Mutex<SqliteConnection>>;

/// A write transaction (`BEGIN IMMEDIATE`): on the [`Writer`] (see [`WriterTx`]), or, in
/// memory, on the one pooled connection.
pub(crate) enum WriteTx {
    Writer(WriterTx),
    Pooled(Transaction<'static, Sqlite>),
}

/// A transaction on the [`Writer`], held until it commits or is dropped; dropping it rolls
/// back, as a sqlx `Transaction` does.
pub(crate) struct WriterTx {
    conn: OwnedMutexGuard<SqliteConnection>,
    /// Until `commit` has returned. Not derived from the connection's transaction depth: when
    /// a commit's future is dropped after the COMMIT ran, sqlx's worker expects exactly one
    /// rollback request from the dropped side and ignores it; a depth check would skip that
    /// request and the worker would then ignore the next writer's real one.
    open: bool,
}

impl WriteTx {
    pub(super) async fn begin(conns: &SqliteConns) -> Result<Self, StoreError> {
        let writer = match conns {
            SqliteConns::File { writer, .. } => writer,
            SqliteConns::Memory(pool) => return Ok(Self::Pooled(pool.begin_with("BEGIN IMMEDIATE").await?)),
        };
        let mut conn = Arc::clone(writer).lock_owned().await;
        SqliteTransactionManager::begin(&mut conn, Some("BEGIN IMMEDIATE".into_sql_str())).await?;
        Ok(Self::Writer(WriterTx { conn, open: true }))
    }

    pub(super) fn conn(&mut self) -> &mut SqliteConnection {
        match self {
            Self::Writer(tx) => &mut tx.conn,
            Self::Pooled(tx) => tx,
        }
    }

    pub(super) async fn commit(self) -> Result<(), sqlx::Error> {
        match self {
            Self::Writer(mut tx) => {
                SqliteTransactionManager::commit(&mut tx.conn).await?;
                tx.open = false;
                Ok(())
            }
            Self::Pooled(tx) => tx.commit().await,
        }
    }

    pub(super) async fn rollback(self) -> Result<(), sqlx::Error> {
        match self {
            Self::Writer(mut tx) => {
                SqliteTransactionManager::rollback(&mut tx.conn).await?;
                tx.open = false;
                Ok(())
            }
            Self::Pooled(tx) => tx.rollback().await,
        }
    }
}

impl Drop for WriterTx {
    fn drop(&mut self) {
        if self.open {
            // Queued on the connection's thread ahead of anything the next writer sends.
            SqliteTransactionManager::start_rollback(&mut self.conn);
        }
    }
}
