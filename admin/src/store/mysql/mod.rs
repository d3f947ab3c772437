//! The MySQL/MariaDB backend: upstream's own database, several admins may share it.
//!
//! Upstream `datetime` columns stay `datetime` (an adopted xxl-job database keeps working) and
//! are converted in SQL with `FROM_UNIXTIME(?)`/`UNIX_TIMESTAMP(col)`, i.e. in the session
//! `time_zone`: sqlx sets `+00:00` unless the URL says `?timezone=…`, which is how a database
//! holding upstream's JVM-local times is read correctly (see `docs/storage.md`). Transactions
//! run at InnoDB's default REPEATABLE READ; racing statements lock rows (`FOR UPDATE`) or guard
//! their `UPDATE`s, which always read the latest committed row.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::mysql::{MySqlConnectOptions, MySqlPoolOptions, MySqlQueryResult};
use sqlx::{MySql, MySqlPool, Transaction};

use super::{Backend, Store, StoreError};

// Column lists as macros so that queries stay `const` strings built with `concat!`.

/// `xxl_job_info` columns in [`crate::store::JobRow`] order, times as epoch seconds.
macro_rules! job_columns {
    () => {
        "id, job_group, job_desc, CAST(UNIX_TIMESTAMP(add_time) AS SIGNED) AS add_time, \
         CAST(UNIX_TIMESTAMP(update_time) AS SIGNED) AS update_time, author, alarm_email, \
         schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, \
         executor_handler, executor_param, executor_block_strategy, executor_timeout, \
         executor_fail_retry_count, glue_type, glue_source, glue_remark, \
         CAST(UNIX_TIMESTAMP(glue_updatetime) AS SIGNED) AS glue_updatetime, child_jobid, \
         trigger_status, trigger_last_time, trigger_next_time"
    };
}

/// `xxl_job_log` columns in [`crate::store::LogRow`] order.
macro_rules! log_columns {
    () => {
        "id, job_group, job_id, executor_address, executor_handler, executor_param, \
         executor_sharding_param, executor_fail_retry_count, \
         CAST(UNIX_TIMESTAMP(trigger_time) AS SIGNED) AS trigger_time, trigger_code, \
         trigger_msg, CAST(UNIX_TIMESTAMP(handle_time) AS SIGNED) AS handle_time, \
         handle_code, handle_msg, alarm_status"
    };
}

mod groups;
mod jobs;
mod logs;
mod reports;
mod schedule;
mod users;
mod wasm;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/mysql");

/// Store over a MySQL or MariaDB database.
#[derive(Debug, Clone)]
pub(crate) struct MySqlStore {
    pool: MySqlPool,
}

impl MySqlStore {
    /// Connects and migrates. The migrator takes a named lock (`GET_LOCK`), so admins starting
    /// together apply each migration once.
    pub(crate) async fn connect(url: &str) -> Result<Self, StoreError> {
        let options = MySqlConnectOptions::from_str(url)?;
        let pool = MySqlPoolOptions::new().max_connections(10).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    async fn begin_tx(&self) -> Result<Transaction<'static, MySql>, StoreError> {
        Ok(self.pool.begin().await?)
    }
}

impl Store for MySqlStore {
    fn backend(&self) -> Backend {
        Backend::MySql
    }
}

/// The `AUTO_INCREMENT` id of an `INSERT` (MySQL has no `RETURNING`; MariaDB's is not used so
/// one code path serves both).
fn inserted_id<T: TryFrom<u64>>(done: &MySqlQueryResult) -> Result<T, StoreError> {
    let id = done.last_insert_id();
    T::try_from(id)
        .map_err(|_| StoreError::Database(sqlx::Error::Protocol(format!("inserted id {id} out of range"))))
}

super::credentials::credential_store!(MySqlStore, false);
