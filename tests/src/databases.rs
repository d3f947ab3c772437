//! Fresh PostgreSQL schemas and MySQL/MariaDB databases for multi-process tests, on the
//! servers named by `JOBWHEEL_TEST_POSTGRES_URL` / `JOBWHEEL_TEST_MYSQL_URL`. Under `CI` a
//! missing URL is an error (the suites must run there); elsewhere the test is skipped.

use anyhow::Context as _;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Postgres,
    MySql,
}

/// A database created for one test; [`FreshDatabase::drop_it`] removes it.
#[derive(Debug)]
pub struct FreshDatabase {
    /// The URL to give the admins.
    pub url: String,
    server: Server,
    base: String,
    name: String,
}

impl FreshDatabase {
    /// A new empty schema (PostgreSQL) or database (MySQL); `None` outside CI without a URL.
    pub async fn create(server: Server) -> anyhow::Result<Option<FreshDatabase>> {
        let var = match server {
            Server::Postgres => "JOBWHEEL_TEST_POSTGRES_URL",
            Server::MySql => "JOBWHEEL_TEST_MYSQL_URL",
        };
        let base = match std::env::var(var) {
            Ok(url) => url,
            Err(_) if std::env::var_os("CI").is_some() => anyhow::bail!("{var} must be set in CI"),
            Err(_) => return Ok(None),
        };
        let name = format!("jobwheel_sys_{:016x}", rand_u64());
        let url = match server {
            Server::Postgres => {
                let pool = sqlx::PgPool::connect(&base).await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}"))).execute(&pool).await?;
                pool.close().await;
                let sep = if base.contains('?') { '&' } else { '?' };
                format!("{base}{sep}options[search_path]={name}")
            }
            Server::MySql => {
                let pool = sqlx::MySqlPool::connect(&base).await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name} CHARACTER SET utf8mb4")))
                    .execute(&pool)
                    .await?;
                pool.close().await;
                with_database(&base, &name)?
            }
        };
        Ok(Some(FreshDatabase { url, server, base, name }))
    }

    /// Drops the schema or database.
    pub async fn drop_it(self) -> anyhow::Result<()> {
        match self.server {
            Server::Postgres => {
                let pool = sqlx::PgPool::connect(&self.base).await?;
                // An admin may still be running on the schema (a test dropping it under an
                // admin, on purpose): `DROP … CASCADE` locks every table and can deadlock with
                // the admin's pre-read, and PostgreSQL may pick the drop as the victim.
                let drop = format!("DROP SCHEMA {} CASCADE", self.name);
                let mut attempt = 0;
                loop {
                    match sqlx::query(sqlx::AssertSqlSafe(drop.as_str())).execute(&pool).await {
                        Err(sqlx::Error::Database(e))
                            if attempt < 5 && e.code().as_deref() == Some("40P01") =>
                        {
                            attempt += 1;
                        }
                        result => {
                            result?;
                            break;
                        }
                    }
                }
                pool.close().await;
            }
            Server::MySql => {
                let pool = sqlx::MySqlPool::connect(&self.base).await?;
                sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {}", self.name)))
                    .execute(&pool)
                    .await?;
                pool.close().await;
            }
        }
        Ok(())
    }
}

/// A random number from the clock and the process id: names only need to differ between runs
/// sharing a server.
fn rand_u64() -> u64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    (nanos as u64) ^ (u64::from(std::process::id()) << 32)
}

/// `mysql://user@host:port/old?x` → `mysql://user@host:port/<database>?x`.
fn with_database(base: &str, database: &str) -> anyhow::Result<String> {
    let (before_query, query) = base.split_once('?').map_or((base, None), |(b, q)| (b, Some(q)));
    let authority = before_query.find("://").context("URL without scheme")? + 3;
    let path = before_query[authority..].find('/').map_or(before_query.len(), |i| i + authority);
    Ok(match query {
        Some(query) => format!("{}/{database}?{query}", &before_query[..path]),
        None => format!("{}/{database}", &before_query[..path]),
    })
}

/// Runs one statement of a test's or benchmark's own (never input) straight on the database at
/// `url`, past any store: a change behind the admins' backs, or a bulk start or stop. The rows it
/// changed.
pub async fn execute_sql(url: &str, sql: String) -> anyhow::Result<u64> {
    use sqlx::Executor as _;
    let sql = sqlx::AssertSqlSafe(sql);
    Ok(match url.split(':').next().unwrap_or_default() {
        "sqlite" => sqlx::SqlitePool::connect(url).await?.execute(sql).await?.rows_affected(),
        "mysql" => sqlx::MySqlPool::connect(url).await?.execute(sql).await?.rows_affected(),
        _ => sqlx::PgPool::connect(url).await?.execute(sql).await?.rows_affected(),
    })
}
