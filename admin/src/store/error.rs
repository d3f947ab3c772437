//! The one error type callers of the store match on.

use std::path::PathBuf;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL's scheme names no backend. Only the scheme is kept: URLs carry passwords.
    #[error("unsupported database URL scheme {0:?}: use sqlite:, postgres:, postgresql:, mysql: or mariadb:")]
    UnsupportedScheme(String),
    /// The directory for a new SQLite file could not be created.
    #[error("cannot create the directory {path} for the SQLite database: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Applying the embedded migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// The database refused or failed a statement, or the connection broke.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// `xxl_job_lock` has no `schedule_lock` row. Upstream silently schedules without mutual
    /// exclusion in that case (duplicate triggers on every admin); we refuse instead.
    #[error(
        "the 'schedule_lock' row is missing from xxl_job_lock; restore it with: INSERT INTO xxl_job_lock (lock_name) VALUES ('schedule_lock')"
    )]
    MissingScheduleLock,
    /// Upstream's tables are half-way between two generations (3.5 renamed `job_desc` and
    /// `title` to `name`); jobwheel cannot tell which column to write.
    #[error(
        "the xxl-job schema is half-upgraded: {0}; finish upstream's upgrade (rename both columns) or undo it"
    )]
    MixedSchema(&'static str),
    /// A statement written for a batch of callers failed; each of them gets this.
    #[error("{0}")]
    Batched(std::sync::Arc<StoreError>),
    /// The caller that was writing a batch went away before it finished (shutdown).
    #[error("a batched database write was abandoned before it finished")]
    BatchAbandoned,
}

impl StoreError {
    /// Whether the database refused a duplicate of a unique key (an insert that lost a race,
    /// or found its row there already).
    pub fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Database(sqlx::Error::Database(db)) if db.is_unique_violation())
    }
}
