//! SQLite's read connections: a few connections kept open and lent out one statement at a time.
//!
//! **Why not sqlx's pool.** sqlx's pool pings every connection it gets back (sqlx 0.9,
//! `PoolConnection::return_to_pool`, unconditional) and does it from a task it spawns for the
//! purpose. For SQLite a ping is a command sent to the connection's own thread and its answer
//! sent back: two thread wake-ups and a task per read, for a local file that cannot hang up.
//! The admin's reads (a trigger batch's group and job-epoch reads, the monitors' and sweeps'
//! queries) then cost about as many thread switches again as the statements themselves
//! (docs/benchmarks.md, "Reads without sqlx's pool"). Here a read takes an idle connection
//! (the one used last: its prepared statements are warm), runs, and puts it back — no round
//! trip on the way in or out.
//!
//! A connection is opened when every open one is lent and fewer than the limit exist, as the
//! pool did. Dropping a statement's future half-way is safe: the connection's thread notices
//! the dropped receiver, resets the statement, and runs the next borrower's command after it
//! (the writer connection, `sqlite.rs`, relies on the same ordering).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, SqliteConnection};
use tokio::sync::{Semaphore, SemaphorePermit};

use super::StoreError;

/// Read connections to one SQLite file, at most `limit` open.
pub(crate) struct Readers {
    options: SqliteConnectOptions,
    /// Open connections not lent out; the last one returned is lent first.
    idle: Mutex<Vec<SqliteConnection>>,
    /// One permit per connection that may be lent at once.
    slots: Semaphore,
}

impl fmt::Debug for Readers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Readers").field("available", &self.slots.available_permits()).finish_non_exhaustive()
    }
}

impl Readers {
    /// Readers opened lazily with `options`, at most `limit` at once.
    pub(crate) fn new(options: SqliteConnectOptions, limit: usize) -> Self {
        Self { options, idle: Mutex::new(Vec::with_capacity(limit)), slots: Semaphore::new(limit) }
    }

    /// Lends a connection, waiting while all `limit` are lent; opens one if none is idle.
    pub(crate) async fn get(&self) -> Result<Reader<'_>, StoreError> {
        // The semaphore is never closed; a closed one would mean the store is gone.
        let slot = self.slots.acquire().await.map_err(|_| sqlx::Error::PoolClosed)?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.options.connect().await?,
        };
        Ok(Reader { conn: Some(conn), readers: self, _slot: slot })
    }

    /// How many connections are open and idle (for tests).
    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// A lent read connection; dropping it gives it back.
pub(crate) struct Reader<'a> {
    /// `Some` until dropped.
    conn: Option<SqliteConnection>,
    readers: &'a Readers,
    /// Released after the connection is back (fields drop after `Drop::drop`).
    _slot: SemaphorePermit<'a>,
}

impl Deref for Reader<'_> {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        self.conn.as_ref().unwrap_or_else(|| unreachable!("a reader holds its connection until dropped"))
    }
}

impl DerefMut for Reader<'_> {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        self.conn.as_mut().unwrap_or_else(|| unreachable!("a reader holds its connection until dropped"))
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.readers.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future as _;
    use std::str::FromStr;

    use super::*;

    fn readers(dir: &tempfile::TempDir, limit: usize) -> Readers {
        let url = format!("sqlite://{}", dir.path().join("r.db").display());
        Readers::new(SqliteConnectOptions::from_str(&url).unwrap().create_if_missing(true), limit)
    }

    async fn one(conn: &mut SqliteConnection) -> i64 {
        sqlx::query_scalar::<_, i64>("SELECT 1").fetch_one(conn).await.unwrap()
    }

    #[tokio::test]
    async fn a_returned_connection_is_lent_again_not_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let readers = readers(&dir, 3);
        let mut first = readers.get().await.unwrap();
        assert_eq!(one(&mut first).await, 1);
        drop(first);
        assert_eq!(readers.idle_count(), 1);
        let mut again = readers.get().await.unwrap();
        assert_eq!(readers.idle_count(), 0, "the idle connection was lent, none opened");
        assert_eq!(one(&mut again).await, 1);
    }

    #[tokio::test]
    async fn a_borrower_waits_while_every_connection_is_lent() {
        let dir = tempfile::tempdir().unwrap();
        let readers = readers(&dir, 2);
        let a = readers.get().await.unwrap();
        let b = readers.get().await.unwrap();
        let mut third = std::pin::pin!(readers.get());
        std::future::poll_fn(|cx| {
            assert!(
                third.as_mut().poll(cx).is_pending(),
                "a third borrower got a connection beyond the limit"
            );
            std::task::Poll::Ready(())
        })
        .await;
        drop(a);
        let c = tokio::time::timeout(std::time::Duration::from_secs(10), third).await.unwrap().unwrap();
        drop((b, c));
        assert_eq!(readers.idle_count(), 2, "two connections were ever opened");
    }

    #[tokio::test]
    async fn a_read_dropped_half_way_leaves_the_connection_usable() {
        let dir = tempfile::tempdir().unwrap();
        let readers = readers(&dir, 1);
        {
            let mut r = readers.get().await.unwrap();
            let conn: &mut SqliteConnection = &mut r;
            // A query of a million rows, polled once (its command is sent) and dropped.
            let mut rows = std::pin::pin!(sqlx::query_scalar::<_, i64>(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000) SELECT i FROM n",
            )
            .fetch_all(conn));
            std::future::poll_fn(|cx| {
                assert!(rows.as_mut().poll(cx).is_pending(), "a million rows arrived at the first poll");
                std::task::Poll::Ready(())
            })
            .await;
        }
        let mut r = readers.get().await.unwrap();
        let conn: &mut SqliteConnection = &mut r;
        assert_eq!(sqlx::query_scalar::<_, i64>("SELECT 7").fetch_one(conn).await.unwrap(), 7);
    }
}
