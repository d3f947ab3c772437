//! The open database of a store: one pool of the backend the URL named, and its transactions.
//!
//! What truly differs between the backends lives here and in `sqlite.rs`, `postgres.rs` and
//! `mysql.rs` (connecting, migrating, how a write transaction begins); everything the store
//! does with a connection is written once in `sql/`.

use sqlx::{MySql, MySqlPool, PgPool, Postgres, SqlitePool, Transaction};

use super::db::Ex;
use super::sqlite::{WriteTx, Writer};
use super::{Backend, StoreError};

/// A connected, migrated database.
#[derive(Debug, Clone)]
pub(crate) enum Db {
    Sqlite {
        /// Reads, and single statements outside a transaction.
        pool: SqlitePool,
        /// The one connection every write transaction of this process runs on (see
        /// [`WriteTx`]); `None` for an in-memory database, whose one pooled connection does
        /// everything.
        writer: Option<Writer>,
    },
    Postgres(PgPool),
    MySql {
        pool: MySqlPool,
        /// `@@auto_increment_increment`: the distance between the ids of one multi-row
        /// `INSERT` (InnoDB gives a simple insert's rows consecutive ids in every lock mode).
        id_step: i64,
    },
}

impl Db {
    /// The database behind this store.
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Db::Sqlite { .. } => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
            Db::MySql { .. } => Backend::MySql,
        }
    }

    /// Runs statements on the pool, each in its own implicit transaction.
    pub(crate) fn ex(&self) -> Ex<'_> {
        match self {
            Db::Sqlite { pool, .. } => Ex::SqlitePool(pool),
            Db::Postgres(pool) => Ex::PgPool(pool),
            Db::MySql { pool, .. } => Ex::MySqlPool(pool),
        }
    }

    /// Begins a write transaction: on SQLite `BEGIN IMMEDIATE` on the process's one writer
    /// connection (the write lock is taken up front, so a read-then-write never fails to
    /// upgrade); on PostgreSQL and MySQL a plain transaction whose racing statements lock their
    /// rows.
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        Ok(match self {
            Db::Sqlite { pool, writer } => Tx::Sqlite(WriteTx::begin(pool, writer.as_ref()).await?),
            Db::Postgres(pool) => Tx::Postgres(pool.begin().await?),
            Db::MySql { pool, .. } => Tx::MySql(pool.begin().await?),
        })
    }

    /// The id step of a multi-row insert on MySQL (1 elsewhere, where `RETURNING` is used).
    pub(crate) fn id_step(&self) -> i64 {
        match self {
            Db::MySql { id_step, .. } => *id_step,
            Db::Sqlite { .. } | Db::Postgres(_) => 1,
        }
    }
}

/// An open write transaction; dropping it without [`Tx::commit`] rolls back.
pub(crate) enum Tx {
    Sqlite(WriteTx),
    Postgres(Transaction<'static, Postgres>),
    MySql(Transaction<'static, MySql>),
}

impl Tx {
    /// Runs statements inside this transaction.
    pub(crate) fn ex(&mut self) -> Ex<'_> {
        match self {
            Tx::Sqlite(tx) => Ex::SqliteConn(tx.conn()),
            Tx::Postgres(tx) => Ex::PgConn(&mut *tx),
            Tx::MySql(tx) => Ex::MySqlConn(&mut *tx),
        }
    }

    /// Commits (and, on SQLite, hands the writer connection to the next writer).
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(tx) => tx.commit().await?,
            Tx::Postgres(tx) => tx.commit().await?,
            Tx::MySql(tx) => tx.commit().await?,
        }
        Ok(())
    }
}
