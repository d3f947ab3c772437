//! How instants cross the database boundary.
//!
//! Upstream's `datetime` columns travel as epoch **seconds** between Rust and SQL, and each
//! backend converts in SQL (`datetime(?, 'unixepoch')`/`unixepoch(col)` on SQLite,
//! `to_timestamp($1)`/`EXTRACT(EPOCH FROM col)` on PostgreSQL, `FROM_UNIXTIME(?)`/
//! `UNIX_TIMESTAMP(col)` on MySQL). On MySQL that makes the session `time_zone` (sqlx default
//! `+00:00`, URL parameter `timezone=`) the zone a `datetime` is read in, which is what lets an
//! adopted database keep the local times upstream's JVM wrote. Sub-second parts are dropped on
//! the way in, on every backend, because upstream's `datetime` has second precision.

use chrono::{DateTime, Utc};
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Type};

/// Epoch seconds as bound into SQL for a `datetime` column.
pub(crate) fn secs(t: DateTime<Utc>) -> i64 {
    t.timestamp()
}

/// Optional variant of [`secs`].
pub(crate) fn opt_secs(t: Option<DateTime<Utc>>) -> Option<i64> {
    t.map(secs)
}

/// A `datetime` column as read: nullable epoch seconds, converted by the row types'
/// `#[sqlx(try_from = "DbSecs")]` fields.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DbSecs(Option<i64>);

impl<DB: Database> Type<DB> for DbSecs
where
    i64: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <i64 as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <i64 as Type<DB>>::compatible(ty)
    }
}

impl<'r, DB: Database> Decode<'r, DB> for DbSecs
where
    i64: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self(<Option<i64> as Decode<'r, DB>>::decode(value)?))
    }
}

/// A stored time outside chrono's range, or NULL where the row type needs a value.
#[derive(Debug, thiserror::Error)]
#[error("stored time {0:?} is not a valid instant")]
pub(crate) struct BadTime(Option<i64>);

impl TryFrom<DbSecs> for Option<DateTime<Utc>> {
    type Error = BadTime;

    fn try_from(value: DbSecs) -> Result<Self, BadTime> {
        match value.0 {
            None => Ok(None),
            Some(s) => DateTime::from_timestamp(s, 0).map(Some).ok_or(BadTime(Some(s))),
        }
    }
}
