//! `QueryBuf`: neutral SQL assembled at run time — filters, `IN` lists, multi-row `VALUES` —
//! with its binds, translated per backend like a fixed [`Sql`](super::dialect::Sql).
//!
//! Batch statements (the trigger and callback paths') come in *shapes*: a list of n values is
//! padded up to the next of [`SHAPES`] by repeating its last value, and the statement is then
//! kept prepared. Why: a statement built per batch size was parsed and planned afresh for every
//! batch, and on SQLite that parse was a tenth of the admin's CPU at 1 000 triggers a second
//! (docs/benchmarks.md, issue 14); with ten sizes each connection prepares a shape once.

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use super::Backend;
use super::db::{Arg, Statement};
use super::dialect::{Dialect, translate};

/// Neutral SQL assembled at run time (filters, `IN` lists, multi-row `VALUES`), with its binds.
#[derive(Debug, Default)]
pub(crate) struct QueryBuf<'a> {
    sql: String,
    args: Vec<Arg<'a>>,
    /// Set by [`QueryBuf::keep`]: the text depends only on shapes, so preparing it once pays.
    keep: bool,
}

/// The list lengths batch statements are padded to (the largest is the batch chunk size).
pub(crate) const SHAPES: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 192, 256];

/// The shape a list of `n` values is padded to: the smallest of [`SHAPES`] ≥ `n` (`n` itself
/// beyond the largest, and for 0).
pub(crate) fn shape_len(n: usize) -> usize {
    SHAPES.iter().copied().find(|&s| s >= n).filter(|_| n > 0).unwrap_or(n)
}

/// `items` padded to [`shape_len`] by repeating the last one. Only for lists where a repeat
/// changes nothing: an `IN` list, or the rows of an update joined on their key.
pub(crate) fn padded<T: Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut items: Vec<T> = items.into_iter().collect();
    if let Some(last) = items.last().cloned() {
        items.resize(shape_len(items.len()), last);
    }
    items
}

impl<'a> QueryBuf<'a> {
    pub(crate) fn new(sql: &str) -> Self {
        Self { sql: sql.to_owned(), args: Vec::new(), keep: false }
    }

    /// Marks the statement as one of a few shapes (its lists were [`padded`]): it is prepared
    /// once per connection and kept, like a fixed statement.
    pub(crate) fn keep(&mut self) -> &mut Self {
        self.keep = true;
        self
    }

    /// Appends `?, ?, …` bound to `values` [`padded`] to their shape (an `IN` list's inside).
    pub(crate) fn bind_shaped<T: Into<Arg<'a>> + Clone>(
        &mut self,
        values: impl IntoIterator<Item = T>,
    ) -> &mut Self {
        self.bind_list(padded(values))
    }

    /// Appends SQL text.
    pub(crate) fn push(&mut self, sql: &str) -> &mut Self {
        self.sql.push_str(sql);
        self
    }

    /// Appends a `?` bound to `value`.
    pub(crate) fn bind(&mut self, value: impl Into<Arg<'a>>) -> &mut Self {
        self.sql.push('?');
        self.args.push(value.into());
        self
    }

    /// Appends `?, ?, …` bound to `values` (an `IN` list's inside).
    pub(crate) fn bind_list<T: Into<Arg<'a>>>(&mut self, values: impl IntoIterator<Item = T>) -> &mut Self {
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            self.bind(v);
        }
        self
    }

    /// The binds, in placeholder order.
    pub(crate) fn args(&self) -> &[Arg<'a>] {
        &self.args
    }
}

impl Statement for QueryBuf<'_> {
    fn sql(&self, dialect: Dialect) -> SqlStr {
        // Safe by construction: values go in binds, the text holds only the store's own SQL.
        AssertSqlSafe(translate(&self.sql, dialect).into_owned()).into_sql_str()
    }

    /// Not on PostgreSQL, which plans a kept statement for any values (a generic plan after
    /// five runs): with the batches kept, triggers at 4 000/s fell a minute behind, and every
    /// sample of `pg_stat_activity` showed a claim batch running, not waiting. Planned per
    /// execution, as before, they keep up. (Why the cached plan was slow — e.g. planned while
    /// the claim table was nearly empty — was not pinned down; docs/benchmarks.md.)
    fn persistent(&self, backend: Backend) -> bool {
        self.keep && backend != Backend::Postgres
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_padded_to_the_next_shape_with_their_last_value() {
        assert_eq!(shape_len(0), 0);
        assert_eq!(shape_len(1), 1);
        assert_eq!(shape_len(3), 4);
        assert_eq!(shape_len(129), 192);
        assert_eq!(shape_len(256), 256);
        assert_eq!(shape_len(300), 300, "beyond the largest shape a list stays as it is");
        assert_eq!(padded([7, 8, 9]), vec![7, 8, 9, 9]);
        assert!(padded(Vec::<i32>::new()).is_empty());
    }

    #[test]
    fn a_shaped_list_binds_its_padding_and_is_kept() {
        let mut q = QueryBuf::new("SELECT id FROM t WHERE id IN (");
        q.bind_shaped([1_i64, 2, 3]).push(")").keep();
        assert_eq!(q.sql, "SELECT id FROM t WHERE id IN (?, ?, ?, ?)");
        assert_eq!(q.args().len(), 4);
        assert!(q.persistent(Backend::Sqlite) && q.persistent(Backend::MySql));
        assert!(!q.persistent(Backend::Postgres), "PostgreSQL plans a batch for its values");
        assert!(!QueryBuf::new("SELECT 1").persistent(Backend::Sqlite));
    }
}
