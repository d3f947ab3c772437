//! SQL written once, spoken three ways: the store's statements are kept in one neutral form and
//! translated for SQLite, PostgreSQL or MySQL/MariaDB the first time a backend uses them.
//!
//! The neutral form is SQLite-flavoured SQL with a few markers for what the dialects spell
//! differently (the whole list; anything else must be portable SQL):
//!
//! | neutral | SQLite | PostgreSQL | MySQL/MariaDB |
//! |---|---|---|---|
//! | `?` | `?` | `$1`, `$2`, … | `?` |
//! | `TS(x)` — epoch seconds → `datetime` | `datetime(x, 'unixepoch')` | `to_timestamp(x)` | `FROM_UNIXTIME(x)` |
//! | `EPOCH(col)` — `datetime` → epoch seconds | `unixepoch(col)` | `CAST(EXTRACT(EPOCH FROM col) AS BIGINT)` | `CAST(UNIX_TIMESTAMP(col) AS SIGNED)` |
//! | `I64(x)` — as a 64-bit integer | `x` | `CAST(x AS BIGINT)` | `CAST(x AS SIGNED)` |
//! | `ILIKE` | `LIKE` (ASCII case-insensitive) | `ILIKE` | `LIKE` (the collation ignores case) |
//! | ` FOR UPDATE` | dropped (the write lock serializes) | kept | kept |
//! | ` FOR UPDATE SKIP LOCKED` | dropped | kept | kept (MariaDB ≥ 10.6, MySQL ≥ 8.0) |
//! | ` FOR SHARE` | dropped | kept | ` LOCK IN SHARE MODE` (MariaDB's spelling) |
//! | ` NULLS LAST` | dropped (NULL sorts last in `DESC`) | kept | dropped (likewise) |
//! | ` RETURNING id` | kept | kept | dropped (the id comes from `LAST_INSERT_ID()`) |
//! | `ON CONFLICT (k) DO UPDATE SET c = excluded.c` | kept | kept | `ON DUPLICATE KEY UPDATE c = VALUES(c)` |
//!
//! MariaDB does not know MySQL 8's row alias, hence `VALUES(c)`.
//!
//! Two markers follow the schema's generation rather than the backend (`schema.rs`): `JOB_NAME`
//! is `xxl_job_info.job_desc` (`name` in xxl-job 3.5) and `GROUP_NAME` is `xxl_job_group.title`
//! (`name` in 3.5). A select list says `JOB_NAME AS job_desc`, so rows decode alike.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use super::Backend;
use super::schema::Naming;

/// What a statement's text depends on: the backend, and the names of the columns upstream
/// renamed in the schema generation the database holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect {
    pub(crate) backend: Backend,
    pub(crate) naming: Naming,
}

impl Dialect {
    pub(crate) const fn new(backend: Backend, naming: Naming) -> Self {
        Self { backend, naming }
    }

    /// This dialect's place among a [`Sql`]'s translations.
    fn slot(self) -> usize {
        let backend = match self.backend {
            Backend::Sqlite => 0,
            Backend::Postgres => 1,
            Backend::MySql => 2,
        };
        backend * 2 + usize::from(self.naming == Naming::Named)
    }
}

/// A static statement in neutral form with its per-dialect text, translated once on first use.
pub(crate) struct Sql {
    neutral: &'static str,
    /// Shared, not leaked: sqlx 0.9 takes a statement's text by value ([`SqlStr`]), and an
    /// `Arc` hands it over for the cost of a reference count. One slot per backend and naming.
    text: [OnceLock<Arc<str>>; 6],
}

impl Sql {
    /// A statement; nothing is translated until a backend asks for it.
    pub(crate) const fn new(neutral: &'static str) -> Self {
        Self {
            neutral,
            text: [
                OnceLock::new(),
                OnceLock::new(),
                OnceLock::new(),
                OnceLock::new(),
                OnceLock::new(),
                OnceLock::new(),
            ],
        }
    }

    /// The statement as `dialect` spells it, in the form sqlx runs.
    pub(crate) fn sql_str(&self, dialect: Dialect) -> SqlStr {
        AssertSqlSafe(Arc::clone(self.shared(dialect))).into_sql_str()
    }

    /// The statement as `dialect` spells it.
    fn shared(&self, dialect: Dialect) -> &Arc<str> {
        self.text[dialect.slot()].get_or_init(|| Arc::from(translate(self.neutral, dialect)))
    }
}

/// Translates neutral SQL (see the module header) for `dialect`.
pub(crate) fn translate(neutral: &str, dialect: Dialect) -> Cow<'_, str> {
    let needs_work = neutral.contains(['?', '('])
        || neutral.contains(" FOR ")
        || neutral.contains("ILIKE")
        || neutral.contains("_NAME");
    if !needs_work {
        return Cow::Borrowed(neutral);
    }
    let backend = dialect.backend;
    let mut sql = Cow::Borrowed(neutral);
    match backend {
        Backend::Sqlite => {
            sql = replace(sql, " FOR UPDATE SKIP LOCKED", "");
            sql = replace(sql, " FOR UPDATE", "");
            sql = replace(sql, " FOR SHARE", "");
            sql = replace(sql, " NULLS LAST", "");
        }
        Backend::Postgres => {}
        Backend::MySql => {
            sql = replace(sql, " FOR SHARE", " LOCK IN SHARE MODE");
            sql = replace(sql, " NULLS LAST", "");
            sql = replace(sql, " RETURNING id", "");
            if let Some(start) = sql.find("ON CONFLICT (")
                && let Some(len) = sql[start..].find(") DO UPDATE SET ")
            {
                let end = start + len + ") DO UPDATE SET ".len();
                sql = Cow::Owned(format!("{}ON DUPLICATE KEY UPDATE {}", &sql[..start], &sql[end..]));
            }
        }
    }
    let mut out = String::with_capacity(sql.len() + 32);
    Translator { backend, naming: dialect.naming, placeholders: 0 }.write(&sql, &mut out);
    Cow::Owned(out)
}

fn replace<'a>(sql: Cow<'a, str>, from: &str, to: &str) -> Cow<'a, str> {
    if sql.contains(from) { Cow::Owned(sql.replace(from, to)) } else { sql }
}

/// The token-level part of [`translate`]: placeholders and the function-like markers.
struct Translator {
    backend: Backend,
    naming: Naming,
    /// Placeholders numbered so far (PostgreSQL), across nested markers.
    placeholders: usize,
}

impl Translator {
    fn write(&mut self, sql: &str, out: &mut String) {
        let bytes = sql.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i];
            if c == b'\'' {
                // A string literal is copied as it is (no marker or placeholder inside).
                let end = sql[i + 1..].find('\'').map_or(sql.len(), |n| i + 1 + n + 1);
                out.push_str(&sql[i..end]);
                i = end;
            } else if c == b'?' {
                self.placeholders += 1;
                match self.backend {
                    Backend::Postgres => {
                        out.push('$');
                        out.push_str(&self.placeholders.to_string());
                    }
                    Backend::Sqlite | Backend::MySql => out.push('?'),
                }
                i += 1;
            } else if c.is_ascii_alphabetic() || c == b'_' {
                let end = sql[i..]
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .map_or(sql.len(), |n| i + n);
                i = self.word(sql, i, end, out);
            } else {
                let end = sql[i..]
                    .find(|ch: char| ch == '\'' || ch == '?' || ch.is_ascii_alphabetic() || ch == '_');
                let end = end.map_or(sql.len(), |n| i + n.max(1));
                out.push_str(&sql[i..end]);
                i = end;
            }
        }
    }

    /// Writes the word `sql[start..end]` (a marker with its argument, if it is one) and answers
    /// where to go on.
    fn word(&mut self, sql: &str, start: usize, end: usize, out: &mut String) -> usize {
        let word = &sql[start..end];
        let marker = matches!(word, "TS" | "EPOCH" | "I64") && sql[end..].starts_with('(');
        if marker {
            let close = matching_paren(sql, end);
            let mut inner = String::new();
            self.write(&sql[end + 1..close], &mut inner);
            let b = self.backend;
            let text = match (word, b) {
                ("TS", Backend::Sqlite) => format!("datetime({inner}, 'unixepoch')"),
                ("TS", Backend::Postgres) => format!("to_timestamp({inner})"),
                ("TS", Backend::MySql) => format!("FROM_UNIXTIME({inner})"),
                ("EPOCH", Backend::Sqlite) => format!("unixepoch({inner})"),
                ("EPOCH", Backend::Postgres) => format!("CAST(EXTRACT(EPOCH FROM {inner}) AS BIGINT)"),
                ("EPOCH", Backend::MySql) => format!("CAST(UNIX_TIMESTAMP({inner}) AS SIGNED)"),
                (_, Backend::Sqlite) => inner,
                (_, Backend::Postgres) => format!("CAST({inner} AS BIGINT)"),
                (_, Backend::MySql) => format!("CAST({inner} AS SIGNED)"),
            };
            out.push_str(&text);
            return close + 1;
        }
        match (word, self.backend) {
            ("JOB_NAME" | "GROUP_NAME", _) if self.naming == Naming::Named => out.push_str("name"),
            ("JOB_NAME", _) => out.push_str("job_desc"),
            ("GROUP_NAME", _) => out.push_str("title"),
            ("ILIKE", Backend::Sqlite | Backend::MySql) => out.push_str("LIKE"),
            ("excluded", Backend::MySql) if sql[end..].starts_with('.') => {
                // `excluded.col` → `VALUES(col)`.
                let col_end = sql[end + 1..]
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                    .map_or(sql.len(), |n| end + 1 + n);
                out.push_str("VALUES(");
                out.push_str(&sql[end + 1..col_end]);
                out.push(')');
                return col_end;
            }
            _ => out.push_str(word),
        }
        end
    }
}

/// The index of the `)` closing the `(` at `open`. Neutral SQL is ours, so an unbalanced
/// marker is a bug in a constant, caught by the first test that runs the statement.
fn matching_paren(sql: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in sql[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced marker in store SQL: {sql}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(neutral: &str) -> [String; 3] {
        [Backend::Sqlite, Backend::Postgres, Backend::MySql]
            .map(|b| translate(neutral, Dialect::new(b, Naming::Classic)).into_owned())
    }

    #[test]
    fn renamed_columns_follow_the_schema() {
        let neutral =
            "SELECT JOB_NAME AS job_desc FROM xxl_job_info WHERE JOB_NAME ILIKE ? AND note = 'JOB_NAME'";
        let [s, _, _] = all(neutral);
        assert_eq!(
            s,
            "SELECT job_desc AS job_desc FROM xxl_job_info WHERE job_desc LIKE ? AND note = 'JOB_NAME'"
        );
        let named = translate(neutral, Dialect::new(Backend::Postgres, Naming::Named));
        assert_eq!(
            named,
            "SELECT name AS job_desc FROM xxl_job_info WHERE name ILIKE $1 AND note = 'JOB_NAME'"
        );
        let group =
            translate("UPDATE xxl_job_group SET GROUP_NAME = ?", Dialect::new(Backend::MySql, Naming::Named));
        assert_eq!(group, "UPDATE xxl_job_group SET name = ?");
        assert_eq!(all("SELECT GROUP_NAME AS title FROM g")[0], "SELECT title AS title FROM g");
    }

    #[test]
    fn placeholders_are_numbered_for_postgres_only() {
        let [s, p, m] = all("UPDATE t SET a = ?, b = '?' WHERE id = ?");
        assert_eq!(s, "UPDATE t SET a = ?, b = '?' WHERE id = ?");
        assert_eq!(p, "UPDATE t SET a = $1, b = '?' WHERE id = $2");
        assert_eq!(m, s);
    }

    #[test]
    fn time_markers_nest_and_keep_numbering() {
        let [s, p, m] = all("SELECT EPOCH(add_time) AS add_time FROM t WHERE a = ? AND b <= TS(?) LIMIT ?");
        assert_eq!(
            s,
            "SELECT unixepoch(add_time) AS add_time FROM t WHERE a = ? AND b <= datetime(?, 'unixepoch') LIMIT ?"
        );
        assert_eq!(
            p,
            "SELECT CAST(EXTRACT(EPOCH FROM add_time) AS BIGINT) AS add_time FROM t WHERE a = $1 AND b <= to_timestamp($2) LIMIT $3"
        );
        assert_eq!(
            m,
            "SELECT CAST(UNIX_TIMESTAMP(add_time) AS SIGNED) AS add_time FROM t WHERE a = ? AND b <= FROM_UNIXTIME(?) LIMIT ?"
        );
        let [s, p, m] = all("SELECT I64(COALESCE(SUM(n), 0)), TS(v.v_time) FROM STATS(x)");
        assert_eq!(s, "SELECT COALESCE(SUM(n), 0), datetime(v.v_time, 'unixepoch') FROM STATS(x)");
        assert_eq!(p, "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT), to_timestamp(v.v_time) FROM STATS(x)");
        assert_eq!(m, "SELECT CAST(COALESCE(SUM(n), 0) AS SIGNED), FROM_UNIXTIME(v.v_time) FROM STATS(x)");
    }

    #[test]
    fn keywords_follow_the_dialect() {
        let [s, p, m] = all("SELECT a FROM t WHERE d ILIKE ? ORDER BY x DESC NULLS LAST FOR UPDATE");
        assert_eq!(s, "SELECT a FROM t WHERE d LIKE ? ORDER BY x DESC");
        assert_eq!(p, "SELECT a FROM t WHERE d ILIKE $1 ORDER BY x DESC NULLS LAST FOR UPDATE");
        assert_eq!(m, "SELECT a FROM t WHERE d LIKE ? ORDER BY x DESC FOR UPDATE");
        let [s, _, m] = all("INSERT INTO t (a) VALUES (?) RETURNING id");
        assert_eq!(s, "INSERT INTO t (a) VALUES (?) RETURNING id");
        assert_eq!(m, "INSERT INTO t (a) VALUES (?)");
        let [s, p, m] = all("SELECT a FROM t WHERE b = 1 FOR UPDATE SKIP LOCKED");
        assert_eq!(s, "SELECT a FROM t WHERE b = 1");
        assert_eq!(p, "SELECT a FROM t WHERE b = 1 FOR UPDATE SKIP LOCKED");
        assert_eq!(m, p);
        let [s, p, m] = all("SELECT a FROM t WHERE b = 1 FOR SHARE");
        assert_eq!(s, "SELECT a FROM t WHERE b = 1");
        assert_eq!(p, "SELECT a FROM t WHERE b = 1 FOR SHARE");
        assert_eq!(m, "SELECT a FROM t WHERE b = 1 LOCK IN SHARE MODE");
    }

    #[test]
    fn upserts_become_on_duplicate_key_on_mysql() {
        let neutral = "INSERT INTO r (k, v, t) VALUES (?, ?, TS(?)) ON CONFLICT (k, v) DO UPDATE SET t = excluded.t, v2 = excluded.v2";
        let [s, p, m] = all(neutral);
        assert_eq!(
            s,
            "INSERT INTO r (k, v, t) VALUES (?, ?, datetime(?, 'unixepoch')) ON CONFLICT (k, v) DO UPDATE SET t = excluded.t, v2 = excluded.v2"
        );
        assert!(p.contains("ON CONFLICT (k, v) DO UPDATE SET t = excluded.t"), "{p}");
        assert_eq!(
            m,
            "INSERT INTO r (k, v, t) VALUES (?, ?, FROM_UNIXTIME(?)) ON DUPLICATE KEY UPDATE t = VALUES(t), v2 = VALUES(v2)"
        );
    }

    #[test]
    fn static_statements_are_translated_once_per_backend() {
        static Q: Sql = Sql::new("SELECT a FROM t WHERE id = ?");
        let pg = Dialect::new(Backend::Postgres, Naming::Classic);
        assert_eq!(Q.sql_str(pg).as_str(), "SELECT a FROM t WHERE id = $1");
        assert!(Arc::ptr_eq(Q.shared(pg), Q.shared(pg)), "translated once");
        assert_eq!(
            Q.sql_str(Dialect::new(Backend::Sqlite, Naming::Named)).as_str(),
            "SELECT a FROM t WHERE id = ?"
        );
    }
}
