//! The open database of a store: one pool of the backend the URL named, and its transactions.
//!
//! What truly differs between the backends lives here and in `sqlite.rs`, `postgres.rs` and
//! `mysql.rs` (connecting, migrating, how a write transaction begins); everything the store
//! does with a connection is written once in `sql/`.

use sqlx::{MySql, MySqlPool, PgPool, Postgres, Transaction};

use super::db::{Ex, Handle};
use super::schema::{Naming, Schema};
use super::sqlite::{SqliteConns, WriteTx};
use super::{Backend, StoreError};

/// A connected, migrated database and the schema generation it holds.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pools: Pools,
    schema: Schema,
}

/// The connections of a database, by backend.
#[derive(Debug, Clone)]
pub(crate) enum Pools {
    Sqlite(SqliteConns),
    Postgres(PgPool),
    MySql {
        pool: MySqlPool,
        /// `@@auto_increment_increment`: the distance between the ids of one multi-row
        /// `INSERT` (InnoDB gives a simple insert's rows consecutive ids in every lock mode).
        id_step: i64,
    },
}

impl Db {
    pub(crate) fn new(pools: Pools, schema: Schema) -> Self {
        Self { pools, schema }
    }

    /// The database behind this store.
    pub(crate) fn backend(&self) -> Backend {
        match self.pools {
            Pools::Sqlite(_) => Backend::Sqlite,
            Pools::Postgres(_) => Backend::Postgres,
            Pools::MySql { .. } => Backend::MySql,
        }
    }

    /// The schema generation the database holds.
    pub(crate) fn schema(&self) -> Schema {
        self.schema
    }

    /// Runs statements on the pool, each in its own implicit transaction.
    pub(crate) fn ex(&self) -> Ex<'_> {
        let conn = match &self.pools {
            Pools::Sqlite(SqliteConns::File { readers, .. }) => Handle::SqliteReaders(readers),
            Pools::Sqlite(SqliteConns::Memory(pool)) => Handle::SqlitePool(pool),
            Pools::Postgres(pool) => Handle::PgPool(pool),
            Pools::MySql { pool, .. } => Handle::MySqlPool(pool),
        };
        Ex::new(conn, self.schema.naming)
    }

    /// Begins a write transaction: on SQLite `BEGIN IMMEDIATE` on the process's one writer
    /// connection (the write lock is taken up front, so a read-then-write never fails to
    /// upgrade); on PostgreSQL and MySQL a plain transaction whose racing statements lock their
    /// rows.
    pub(crate) async fn begin(&self) -> Result<Tx, StoreError> {
        let open = match &self.pools {
            Pools::Sqlite(conns) => OpenTx::Sqlite(WriteTx::begin(conns).await?),
            Pools::Postgres(pool) => OpenTx::Postgres(pool.begin().await?),
            Pools::MySql { pool, .. } => OpenTx::MySql(pool.begin().await?),
        };
        Ok(Tx { open, naming: self.schema.naming })
    }

    /// The id step of a multi-row insert on MySQL (1 elsewhere, where `RETURNING` is used).
    pub(crate) fn id_step(&self) -> i64 {
        match self.pools {
            Pools::MySql { id_step, .. } => id_step,
            Pools::Sqlite(_) | Pools::Postgres(_) => 1,
        }
    }
}

/// An open write transaction; dropping it without [`Tx::commit`] rolls back.
pub(crate) struct Tx {
    open: OpenTx,
    naming: Naming,
}

enum OpenTx {
    Sqlite(WriteTx),
    Postgres(Transaction<'static, Postgres>),
    MySql(Transaction<'static, MySql>),
}

impl Tx {
    /// Runs statements inside this transaction.
    pub(crate) fn ex(&mut self) -> Ex<'_> {
        let conn = match &mut self.open {
            OpenTx::Sqlite(tx) => Handle::SqliteConn(tx.conn()),
            OpenTx::Postgres(tx) => Handle::PgConn(&mut *tx),
            OpenTx::MySql(tx) => Handle::MySqlConn(&mut *tx),
        };
        Ex::new(conn, self.naming)
    }

    /// Commits (and, on SQLite, hands the writer connection to the next writer).
    pub(crate) async fn commit(self) -> Result<(), StoreError> {
        match self.open {
            OpenTx::Sqlite(tx) => tx.commit().await?,
            OpenTx::Postgres(tx) => tx.commit().await?,
            OpenTx::MySql(tx) => tx.commit().await?,
        }
        Ok(())
    }

    /// Rolls back now, releasing its locks before the caller goes on (a dropped transaction
    /// rolls back too, but only when its connection is next used).
    pub(crate) async fn rollback(self) -> Result<(), StoreError> {
        match self.open {
            OpenTx::Sqlite(tx) => tx.rollback().await?,
            OpenTx::Postgres(tx) => tx.rollback().await?,
            OpenTx::MySql(tx) => tx.rollback().await?,
        }
        Ok(())
    }
}
