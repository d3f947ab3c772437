//! The store's one door to sqlx: a connection pool or open transaction of whichever backend
//! ([`Ex`]), statements in neutral SQL ([`Statement`], see `dialect.rs`), and bind values as
//! plain data ([`Arg`]), so each store method is written once for all three databases.
//!
//! This is the "small generic layer" rather than code generic over `sqlx::Database` (whose
//! higher-ranked bounds would spread to every method) or `sqlx::Any` (no timestamps, MySQL
//! type holes): the three-way `match` lives here, each arm concrete.

use std::borrow::Cow;
use std::sync::LazyLock;
use std::time::Instant;

use prometheus_client::metrics::histogram::Histogram;

use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{
    Arguments, FromRow, MySql, MySqlConnection, PgConnection, Postgres, SqlStr, Sqlite, SqliteConnection,
};

use super::dialect::{Dialect, Sql};
pub(crate) use super::query_buf::QueryBuf;
use super::readers::Readers;
use super::schema::Naming;
use super::{
    Backend, BackfillStatus, CalendarId, ChannelId, ChannelSwitch, ClaimId, DeliveryId, DeliveryStatus,
    EventId, GroupId, InstanceId, InstanceStatus, JobId, LogId, RunId, RunStatus, ScheduleStatus, StoreError,
    UserId, WorkflowId,
};
use crate::domain::{KnownName, Named, TriggerType};

/// A row type every backend can decode (the derived `FromRow` of the row types, or a tuple).
pub(crate) trait Record:
    Send + Unpin + for<'r> FromRow<'r, SqliteRow> + for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, MySqlRow>
{
}

impl<T> Record for T where
    T: Send
        + Unpin
        + for<'r> FromRow<'r, SqliteRow>
        + for<'r> FromRow<'r, PgRow>
        + for<'r> FromRow<'r, MySqlRow>
{
}

/// Latency of every statement this process runs (`jobwheel_db_statement_seconds`). Process-wide
/// because statements run on borrowed pools and transactions that know nothing of an admin;
/// a process runs one admin outside tests.
static STATEMENTS: LazyLock<Histogram> = LazyLock::new(|| {
    Histogram::new([0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0])
});

/// The histogram every statement of this process is timed into.
pub fn statement_seconds() -> &'static Histogram {
    &STATEMENTS
}

/// Times one statement until dropped (also when it fails or its future is dropped).
struct Timed(Instant);

impl Timed {
    fn start() -> Self {
        Self(Instant::now())
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        STATEMENTS.observe(self.0.elapsed().as_secs_f64());
    }
}

/// One bind value. Every variant is nullable; the column decides whether NULL is legal.
#[derive(Debug, Clone)]
pub(crate) enum Arg<'a> {
    I16(Option<i16>),
    I32(Option<i32>),
    I64(Option<i64>),
    Text(Option<Cow<'a, str>>),
    Bytes(&'a [u8]),
}

macro_rules! arg_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl<'a> From<$t> for Arg<'a> {
            fn from($v: $t) -> Self {
                $e
            }
        })*
    };
}

arg_from! {
    i16 => |v| Arg::I16(Some(v)),
    Option<i16> => |v| Arg::I16(v),
    i32 => |v| Arg::I32(Some(v)),
    Option<i32> => |v| Arg::I32(v),
    i64 => |v| Arg::I64(Some(v)),
    Option<i64> => |v| Arg::I64(v),
    &'a str => |v| Arg::Text(Some(Cow::Borrowed(v))),
    &'a String => |v| Arg::Text(Some(Cow::Borrowed(v))),
    String => |v| Arg::Text(Some(Cow::Owned(v))),
    Option<&'a str> => |v| Arg::Text(v.map(Cow::Borrowed)),
    &'a Option<String> => |v| Arg::Text(v.as_deref().map(Cow::Borrowed)),
    &'a [u8] => |v| Arg::Bytes(v),
    GroupId => |v| Arg::I32(Some(v.0)),
    JobId => |v| Arg::I32(Some(v.0)),
    UserId => |v| Arg::I32(Some(v.0)),
    Option<UserId> => |v| Arg::I32(v.map(|id| id.0)),
    LogId => |v| Arg::I64(Some(v.0)),
    ClaimId => |v| Arg::I64(Some(v.0)),
    CalendarId => |v| Arg::I64(Some(v.0)),
    WorkflowId => |v| Arg::I64(Some(v.0)),
    InstanceId => |v| Arg::I64(Some(v.0)),
    RunId => |v| Arg::I64(Some(v.0)),
    ChannelId => |v| Arg::I64(Some(v.0)),
    EventId => |v| Arg::I64(Some(v.0)),
    DeliveryId => |v| Arg::I64(Some(v.0)),
    InstanceStatus => |v| Arg::I32(Some(v as i32)),
    BackfillStatus => |v| Arg::I32(Some(v as i32)),
    RunStatus => |v| Arg::I32(Some(v as i32)),
    DeliveryStatus => |v| Arg::I32(Some(v as i32)),
    ScheduleStatus => |v| Arg::I32(Some(v as i32)),
    ChannelSwitch => |v| Arg::I32(Some(v as i32)),
    Option<InstanceId> => |v| Arg::I64(v.map(|id| id.0)),
}

/// How an instance started binds as its name.
impl From<TriggerType> for Arg<'_> {
    fn from(v: TriggerType) -> Self {
        Arg::Text(Some(Cow::Borrowed(v.name())))
    }
}

/// A stored strategy or type binds as its name (`domain::Named`).
impl<'a, T: KnownName> From<&'a Named<T>> for Arg<'a> {
    fn from(v: &'a Named<T>) -> Self {
        Arg::Text(Some(Cow::Borrowed(v.as_str())))
    }
}

impl<'a, T: KnownName> From<&'a Option<Named<T>>> for Arg<'a> {
    fn from(v: &'a Option<Named<T>>) -> Self {
        Arg::Text(v.as_ref().map(|name| Cow::Borrowed(name.as_str())))
    }
}

/// `[Arg; N]` from a list of values of different types: `args![id, &name, secs(now)]`.
macro_rules! args {
    ($($v:expr),* $(,)?) => { [$($crate::store::db::Arg::from($v)),*] };
}
pub(crate) use args;

/// SQL a backend can run: a static [`Sql`] (translated once, prepared and cached per
/// connection) or a [`QueryBuf`] built at run time.
pub(crate) trait Statement: Sync {
    /// The text in `dialect`. sqlx 0.9 takes it by value; a [`Sql`] hands over a shared copy,
    /// a [`QueryBuf`] its translation.
    fn sql(&self, dialect: Dialect) -> SqlStr;
    /// Whether sqlx should keep the prepared statement on `backend` (worth it for fixed SQL
    /// and batch shapes only).
    fn persistent(&self, backend: Backend) -> bool;
}

impl Statement for Sql {
    fn sql(&self, dialect: Dialect) -> SqlStr {
        self.sql_str(dialect)
    }

    fn persistent(&self, _backend: Backend) -> bool {
        true
    }
}

/// Binds [`Arg`]s into a backend's argument buffer.
trait BindArgs: sqlx::Database {
    fn arguments(args: &[Arg<'_>]) -> Result<Self::Arguments, StoreError>;
}

macro_rules! bind_args {
    ($($db:ty),*) => {$(
        impl BindArgs for $db {
            fn arguments(args: &[Arg<'_>]) -> Result<Self::Arguments, StoreError> {
                let mut out = <Self as sqlx::Database>::Arguments::default();
                for arg in args {
                    match arg {
                        Arg::I16(v) => out.add(*v),
                        Arg::I32(v) => out.add(*v),
                        Arg::I64(v) => out.add(*v),
                        Arg::Text(None) => out.add(None::<&str>),
                        Arg::Text(Some(Cow::Borrowed(v))) => out.add(Some(*v)),
                        // Owned text (a `LIKE` pattern) is copied into the buffer.
                        Arg::Text(Some(Cow::Owned(v))) => out.add(Some(v.clone())),
                        Arg::Bytes(v) => out.add(*v),
                    }
                    .map_err(|e| StoreError::Database(sqlx::Error::Encode(e)))?;
                }
                Ok(out)
            }
        }
    )*};
}

bind_args!(Sqlite, Postgres, MySql);

/// Where a statement runs, and the column names of the database's schema generation.
pub(crate) struct Ex<'a> {
    conn: Handle<'a>,
    naming: Naming,
}

/// A backend's pool, or the connection of an open transaction.
pub(crate) enum Handle<'a> {
    SqlitePool(&'a sqlx::SqlitePool),
    SqliteReaders(&'a Readers),
    SqliteConn(&'a mut SqliteConnection),
    PgPool(&'a sqlx::PgPool),
    PgConn(&'a mut PgConnection),
    MySqlPool(&'a sqlx::MySqlPool),
    MySqlConn(&'a mut MySqlConnection),
}

/// Runs `$body` with `$ex` bound to the concrete executor, `$db` to its `sqlx::Database` and
/// `$sql` to the statement's text in that dialect.
macro_rules! on_ex {
    ($self:expr, $stmt:expr, |$ex:ident, $db:ident, $sql:ident| $body:expr) => {{
        let dialect = $self.dialect();
        match $self.conn {
            Handle::SqlitePool($ex) => {
                type $db = Sqlite;
                let $sql = $stmt.sql(dialect);
                $body
            }
            Handle::SqliteReaders(readers) => {
                type $db = Sqlite;
                let $sql = $stmt.sql(dialect);
                let mut reader = readers.get().await?;
                let $ex: &mut SqliteConnection = &mut reader;
                $body
            }
            Handle::SqliteConn($ex) => {
                type $db = Sqlite;
                let $sql = $stmt.sql(dialect);
                $body
            }
            Handle::PgPool($ex) => {
                type $db = Postgres;
                let $sql = $stmt.sql(dialect);
                $body
            }
            Handle::PgConn($ex) => {
                type $db = Postgres;
                let $sql = $stmt.sql(dialect);
                $body
            }
            Handle::MySqlPool($ex) => {
                type $db = MySql;
                let $sql = $stmt.sql(dialect);
                $body
            }
            Handle::MySqlConn($ex) => {
                type $db = MySql;
                let $sql = $stmt.sql(dialect);
                $body
            }
        }
    }};
}

impl<'a> Ex<'a> {
    /// Statements on `conn`, with the schema's column names.
    pub(crate) fn new(conn: Handle<'a>, naming: Naming) -> Self {
        Self { conn, naming }
    }

    /// How statements are spelled here: the backend and the schema's column names.
    fn dialect(&self) -> Dialect {
        Dialect::new(self.backend(), self.naming)
    }

    /// The database behind this executor.
    pub(crate) fn backend(&self) -> Backend {
        match self.conn {
            Handle::SqlitePool(_) | Handle::SqliteReaders(_) | Handle::SqliteConn(_) => Backend::Sqlite,
            Handle::PgPool(_) | Handle::PgConn(_) => Backend::Postgres,
            Handle::MySqlPool(_) | Handle::MySqlConn(_) => Backend::MySql,
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub(crate) async fn execute(self, stmt: &dyn Statement, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        let _timed = Timed::start();
        let keep = stmt.persistent(self.backend());
        Ok(on_ex!(self, stmt, |ex, Db, sql| sqlx::query_with::<Db, _>(sql, Db::arguments(args)?)
            .persistent(keep)
            .execute(ex)
            .await?
            .rows_affected()))
    }

    /// Every row of a query.
    pub(crate) async fn fetch_all<T: Record>(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<Vec<T>, StoreError> {
        let _timed = Timed::start();
        let keep = stmt.persistent(self.backend());
        Ok(on_ex!(self, stmt, |ex, Db, sql| sqlx::query_as_with::<Db, T, _>(sql, Db::arguments(args)?)
            .persistent(keep)
            .fetch_all(ex)
            .await?))
    }

    /// The first row of a query, if any.
    pub(crate) async fn fetch_optional<T: Record>(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<Option<T>, StoreError> {
        let _timed = Timed::start();
        let keep = stmt.persistent(self.backend());
        Ok(on_ex!(self, stmt, |ex, Db, sql| sqlx::query_as_with::<Db, T, _>(sql, Db::arguments(args)?)
            .persistent(keep)
            .fetch_optional(ex)
            .await?))
    }

    /// The one row a query must answer.
    pub(crate) async fn fetch_one<T: Record>(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<T, StoreError> {
        let _timed = Timed::start();
        let keep = stmt.persistent(self.backend());
        Ok(on_ex!(self, stmt, |ex, Db, sql| sqlx::query_as_with::<Db, T, _>(sql, Db::arguments(args)?)
            .persistent(keep)
            .fetch_one(ex)
            .await?))
    }

    /// The first column of every row.
    pub(crate) async fn fetch_column<T>(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<Vec<T>, StoreError>
    where
        (T,): Record,
    {
        Ok(self.fetch_all::<(T,)>(stmt, args).await?.into_iter().map(|(v,)| v).collect())
    }

    /// The first column of the first row, if any.
    pub(crate) async fn fetch_value<T>(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<Option<T>, StoreError>
    where
        (T,): Record,
    {
        Ok(self.fetch_optional::<(T,)>(stmt, args).await?.map(|(v,)| v))
    }

    /// Runs an `INSERT` (without `RETURNING`) on SQLite and answers the rowid of its last row.
    pub(crate) async fn sqlite_last_rowid(
        self,
        stmt: &dyn Statement,
        args: &[Arg<'_>],
    ) -> Result<i64, StoreError> {
        let dialect = self.dialect();
        match self.conn {
            Handle::SqlitePool(pool) => sqlite_last_rowid(pool, dialect, stmt, args).await,
            Handle::SqliteReaders(readers) => {
                sqlite_last_rowid(&mut *readers.get().await?, dialect, stmt, args).await
            }
            Handle::SqliteConn(conn) => sqlite_last_rowid(conn, dialect, stmt, args).await,
            _ => Err(StoreError::Database(sqlx::Error::Protocol(
                "last rowid asked of a non-SQLite database".into(),
            ))),
        }
    }

    /// Runs an `INSERT … RETURNING id` and answers the new row's id: from `RETURNING` on
    /// SQLite and PostgreSQL, from `LAST_INSERT_ID()` on MySQL (whose dialect drops the clause).
    pub(crate) async fn insert_id<T>(self, stmt: &dyn Statement, args: &[Arg<'_>]) -> Result<T, StoreError>
    where
        (T,): Record,
        T: TryFrom<u64>,
    {
        let dialect = self.dialect();
        match self.conn {
            Handle::MySqlPool(pool) => mysql_insert_id(pool, dialect, stmt, args).await,
            Handle::MySqlConn(conn) => mysql_insert_id(conn, dialect, stmt, args).await,
            conn => Ok(Ex::new(conn, self.naming).fetch_one::<(T,)>(stmt, args).await?.0),
        }
    }
}

/// A multi-row `INSERT` on SQLite without `RETURNING`: the rowid of its last row. The trigger
/// path inserts hundreds of rows per statement, and sqlx's SQLite worker hands each returned
/// row to the caller's task separately (a thread wake-up and a copy of every value), which the
/// profile showed as the admin's largest cost; one statement result instead carries the id.
async fn sqlite_last_rowid<'e>(
    ex: impl sqlx::Executor<'e, Database = Sqlite>,
    dialect: Dialect,
    stmt: &dyn Statement,
    args: &[Arg<'_>],
) -> Result<i64, StoreError> {
    let _timed = Timed::start();
    let sql = stmt.sql(dialect);
    let done = sqlx::query_with::<Sqlite, _>(sql, Sqlite::arguments(args)?)
        .persistent(stmt.persistent(Backend::Sqlite))
        .execute(ex)
        .await?;
    Ok(done.last_insert_rowid())
}

/// `INSERT` on MySQL, which has no `RETURNING`: the `AUTO_INCREMENT` id it assigned.
async fn mysql_insert_id<'e, T: TryFrom<u64>>(
    ex: impl sqlx::Executor<'e, Database = MySql>,
    dialect: Dialect,
    stmt: &dyn Statement,
    args: &[Arg<'_>],
) -> Result<T, StoreError> {
    let _timed = Timed::start();
    let sql = stmt.sql(dialect);
    let done = sqlx::query_with::<MySql, _>(sql, MySql::arguments(args)?)
        .persistent(stmt.persistent(Backend::MySql))
        .execute(ex)
        .await?;
    let id = done.last_insert_id();
    T::try_from(id)
        .map_err(|_| StoreError::Database(sqlx::Error::Protocol(format!("inserted id {id} out of range"))))
}
