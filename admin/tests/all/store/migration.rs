//! What the migration tests share: a fresh, migrated database of each kind, raw SQL run on it
//! as an older admin (or the migration file itself) would, and a migration file's statement.

use jobwheel_tests::databases::{FreshDatabase, Server};

/// The kinds of database, as the migration folders name them.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Sqlite,
    Postgres,
    Mysql,
}

/// Runs `check` on a fresh, migrated database of `kind` (its URL), then drops the database.
pub(crate) async fn on_fresh(
    kind: Kind,
    check: impl AsyncFnOnce(&str) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let server = match kind {
        Kind::Sqlite => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("jobwheel.db").display());
            drop(jobwheel_admin::store::connect(&url).await?);
            return check(&url).await;
        }
        Kind::Postgres => Server::Postgres,
        Kind::Mysql => Server::MySql,
    };
    let Some(db) = FreshDatabase::create(server).await? else { return Ok(()) };
    let result = async {
        drop(jobwheel_admin::store::connect(&db.url).await?);
        check(&db.url).await
    }
    .await;
    db.drop_it().await?;
    result
}

/// Runs `sql` (one or more statements) on the database at `url`, outside the store.
pub(crate) async fn raw(kind: Kind, url: &str, sql: &str) -> anyhow::Result<()> {
    match kind {
        Kind::Sqlite => {
            let pool = sqlx::SqlitePool::connect(url).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned())).execute(&pool).await?;
            pool.close().await;
        }
        Kind::Postgres => {
            let pool = sqlx::PgPool::connect(url).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned())).execute(&pool).await?;
            pool.close().await;
        }
        Kind::Mysql => {
            let pool = sqlx::MySqlPool::connect(url).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned())).execute(&pool).await?;
            pool.close().await;
        }
    }
    Ok(())
}

/// The statement of `file` that starts with `start` and ends at its `;`.
pub(crate) fn statement<'a>(file: &'a str, start: &str) -> &'a str {
    statements(file, start).into_iter().next().unwrap_or_else(|| panic!("no {start} in the migration"))
}

/// Every statement of `file` that starts with `start`, each up to its `;`, in file order.
pub(crate) fn statements<'a>(file: &'a str, start: &str) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = file[from..].find(start).map(|a| from + a) {
        let end = file[at..].find(';').map_or(file.len(), |e| at + e + 1);
        found.push(&file[at..end]);
        from = end;
    }
    found
}
