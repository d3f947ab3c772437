//! The PostgreSQL backend: several admins may share one database.
//!
//! Upstream `datetime` columns are `timestamptz`, written with `to_timestamp($n)` from epoch
//! seconds and read with `EXTRACT(EPOCH FROM col)` (see `store/time.rs`), so the session time
//! zone never changes a value. Transactions run at the default READ COMMITTED level; the
//! statements that must not race lock rows (`FOR UPDATE`) or guard their `UPDATE`s.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres, Transaction};

use super::{Backend, Store, StoreError};

// Column lists as macros so that queries stay `const` strings built with `concat!`.

/// `xxl_job_info` columns in [`crate::store::JobRow`] order, times as epoch seconds.
macro_rules! job_columns {
    () => {
        "id, job_group, job_desc, CAST(EXTRACT(EPOCH FROM add_time) AS BIGINT) AS add_time, \
         CAST(EXTRACT(EPOCH FROM update_time) AS BIGINT) AS update_time, author, alarm_email, \
         schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, \
         executor_handler, executor_param, executor_block_strategy, executor_timeout, \
         executor_fail_retry_count, glue_type, glue_source, glue_remark, \
         CAST(EXTRACT(EPOCH FROM glue_updatetime) AS BIGINT) AS glue_updatetime, child_jobid, \
         trigger_status, trigger_last_time, trigger_next_time"
    };
}

/// `xxl_job_log` columns in [`crate::store::LogRow`] order.
macro_rules! log_columns {
    () => {
        "id, job_group, job_id, executor_address, executor_handler, executor_param, \
         executor_sharding_param, executor_fail_retry_count, \
         CAST(EXTRACT(EPOCH FROM trigger_time) AS BIGINT) AS trigger_time, trigger_code, \
         trigger_msg, CAST(EXTRACT(EPOCH FROM handle_time) AS BIGINT) AS handle_time, \
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

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

/// Store over a PostgreSQL database (the schema is the connection's `search_path`).
#[derive(Debug, Clone)]
pub(crate) struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects and migrates. The migrator takes an advisory lock, so admins starting together
    /// apply each migration once.
    pub(crate) async fn connect(url: &str) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new().max_connections(10).connect_with(options).await?;
        MIGRATOR.run(&pool).await?;
        Ok(Self { pool })
    }

    async fn begin_tx(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        Ok(self.pool.begin().await?)
    }

    /// A transaction for the batch statements (`batch_sql.rs`), which lock their rows.
    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>, StoreError> {
        self.begin_tx().await
    }
}

impl Store for PgStore {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }
}

super::credentials::credential_store!(PgStore, true);
super::batch_sql::batch_statements!(PgStore, sqlx::Postgres, "to_timestamp(", ")", " FOR UPDATE");
