//! Which generation of upstream's schema the database holds, read from its columns when the
//! store connects, and how the store's SQL names the columns that upstream renamed.
//!
//! jobwheel creates upstream 3.4.2's tables in a new database. An adopted one keeps the shape an
//! upstream admin made, and jobwheel reads and writes that shape rather than converting it, so
//! an upstream admin of the same generation can keep using the database (docs/storage.md has
//! the table of generations and what jobwheel adds to each):
//!
//! | generation | how it is recognised | what differs for jobwheel |
//! |---|---|---|
//! | 2.x (to 2.4.2) | `xxl_job_user` has no `token` | migrations add `token`, widen narrow columns |
//! | 3.0 – 3.4 | `xxl_job_info.job_desc`, `xxl_job_group.title` | nothing: jobwheel's own shape |
//! | 3.5 | `xxl_job_info.name`, `xxl_job_group.name` and `access_token` | renamed columns; a group's token is its `access_token` |

use std::future::Future;

use super::StoreError;

/// The generation of upstream's schema a database held when this admin connected to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// No upstream tables: jobwheel created them (3.4.2's shape).
    Created,
    /// xxl-job 2.x: no `xxl_job_user.token`, `job_desc` and `title`.
    V2,
    /// xxl-job 3.0 to 3.4: `job_desc` and `title`, `xxl_job_user.token`.
    V3,
    /// xxl-job 3.5: `name` in both tables and the group's own `access_token`.
    V35,
}

impl Generation {
    /// How the docs and the start-up log name it.
    pub fn label(self) -> &'static str {
        match self {
            Generation::Created => "created by jobwheel (xxl-job 3.4.2 tables)",
            Generation::V2 => "xxl-job 2.x",
            Generation::V3 => "xxl-job 3.0-3.4",
            Generation::V35 => "xxl-job 3.5",
        }
    }
}

/// How the store's SQL names the columns upstream 3.5 renamed (the `JOB_NAME` and `GROUP_NAME`
/// markers of `dialect.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Naming {
    /// `xxl_job_info.job_desc`, `xxl_job_group.title` (2.x to 3.4, and jobwheel's own tables).
    #[default]
    Classic,
    /// `xxl_job_info.name`, `xxl_job_group.name` (3.5).
    Named,
}

/// What the store knows of the database's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The generation found before jobwheel's migrations ran.
    pub found: Generation,
    pub(crate) naming: Naming,
    /// `xxl_job_group.access_token` exists (3.5): a group's token is kept there, in the clear as
    /// upstream keeps it, instead of sealed in `jobwheel_group_token`.
    pub group_token_column: bool,
}

/// Runs `migrate` between two reads of the schema with `columns_of` (the backend's catalogue
/// query; an empty list for a missing table): the generation is the one found before jobwheel's
/// migrations, the column names the ones after them.
pub(crate) async fn around_migrations<F, Fut>(
    columns_of: F,
    migrate: impl Future<Output = Result<(), sqlx::migrate::MigrateError>>,
) -> Result<Schema, StoreError>
where
    F: Fn(&'static str) -> Fut,
    Fut: Future<Output = Result<Vec<String>, sqlx::Error>>,
{
    let found = Columns::read(&columns_of).await?.generation();
    migrate.await?;
    let schema = Columns::read(&columns_of).await?.schema(found)?;
    if found != Generation::Created {
        tracing::info!(generation = found.label(), "running on an existing xxl-job schema");
    }
    Ok(schema)
}

/// The column names of the three upstream tables whose shape tells the generations apart.
#[derive(Debug, Default)]
struct Columns {
    info: Vec<String>,
    group: Vec<String>,
    user: Vec<String>,
}

impl Columns {
    /// Reads them with `columns_of(table)`, the backend's catalogue query (an empty list for a
    /// table that does not exist).
    async fn read<F, Fut>(columns_of: &F) -> Result<Self, StoreError>
    where
        F: Fn(&'static str) -> Fut,
        Fut: Future<Output = Result<Vec<String>, sqlx::Error>>,
    {
        let lower = |names: Vec<String>| names.into_iter().map(|n| n.to_ascii_lowercase()).collect();
        Ok(Self {
            info: lower(columns_of("xxl_job_info").await?),
            group: lower(columns_of("xxl_job_group").await?),
            user: lower(columns_of("xxl_job_user").await?),
        })
    }

    fn has(list: &[String], column: &str) -> bool {
        list.iter().any(|c| c == column)
    }

    /// The generation these columns belong to.
    fn generation(&self) -> Generation {
        if self.info.is_empty() {
            Generation::Created
        } else if Self::has(&self.info, "name") && !Self::has(&self.info, "job_desc") {
            Generation::V35
        } else if Self::has(&self.user, "token") {
            Generation::V3
        } else {
            Generation::V2
        }
    }

    /// The schema as the store uses it: `self` read after the migrations, `found` before.
    fn schema(&self, found: Generation) -> Result<Schema, StoreError> {
        let job_named = !Self::has(&self.info, "job_desc") && Self::has(&self.info, "name");
        let group_named = !Self::has(&self.group, "title") && Self::has(&self.group, "name");
        if job_named != group_named {
            return Err(StoreError::MixedSchema(if job_named {
                "xxl_job_info has 3.5's `name` but xxl_job_group still has `title`"
            } else {
                "xxl_job_group has 3.5's `name` but xxl_job_info still has `job_desc`"
            }));
        }
        let naming = if job_named { Naming::Named } else { Naming::Classic };
        Ok(Schema { found, naming, group_token_column: Self::has(&self.group, "access_token") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(info: &[&str], group: &[&str], user: &[&str]) -> Columns {
        let owned = |list: &[&str]| list.iter().map(|c| (*c).to_owned()).collect();
        Columns { info: owned(info), group: owned(group), user: owned(user) }
    }

    #[test]
    fn each_generation_is_recognised_by_its_columns() {
        assert_eq!(columns(&[], &[], &[]).generation(), Generation::Created);
        let v2 = columns(&["id", "job_desc"], &["id", "title"], &["id", "password"]);
        assert_eq!(v2.generation(), Generation::V2);
        let v3 = columns(&["id", "job_desc"], &["id", "title"], &["id", "token"]);
        assert_eq!(v3.generation(), Generation::V3);
        assert_eq!(v3.schema(Generation::V3).unwrap().naming, Naming::Classic);
        let v35 = columns(&["id", "name"], &["id", "name", "access_token"], &["id", "token"]);
        assert_eq!(v35.generation(), Generation::V35);
        let schema = v35.schema(Generation::V35).unwrap();
        assert_eq!(schema.naming, Naming::Named);
        assert!(schema.group_token_column);
    }

    #[test]
    fn a_half_renamed_schema_is_refused_with_what_is_wrong() {
        let half = columns(&["id", "name"], &["id", "title"], &["token"]);
        let error = half.schema(Generation::V35).unwrap_err().to_string();
        assert!(error.contains("xxl_job_group still has `title`"), "{error}");
    }
}
