//! `QueryBuf`: neutral SQL assembled at run time — filters, `IN` lists, multi-row `VALUES` —
//! with its binds, translated per backend like a fixed [`Sql`](super::dialect::Sql).

use std::borrow::Cow;

use super::Backend;
use super::db::{Arg, Statement};
use super::dialect::translate;

/// Neutral SQL assembled at run time (filters, `IN` lists, multi-row `VALUES`), with its binds.
#[derive(Debug, Default)]
pub(crate) struct QueryBuf<'a> {
    sql: String,
    args: Vec<Arg<'a>>,
}

impl<'a> QueryBuf<'a> {
    pub(crate) fn new(sql: &str) -> Self {
        Self { sql: sql.to_owned(), args: Vec::new() }
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
    fn sql(&self, backend: Backend) -> Cow<'_, str> {
        translate(&self.sql, backend)
    }

    fn persistent(&self) -> bool {
        false
    }
}
