//! The store's one body: every trait area (groups, jobs, schedule and claims, logs, reports,
//! users, credentials, Wasm modules, the trigger path's batches) written once in neutral SQL
//! (`dialect.rs`) over whichever database [`SqlStore`] holds.
//!
//! Where the backends need different *statement shapes* rather than different spellings (MySQL
//! without `RETURNING` or `UPDATE … FROM`), the method says so with a `match` on
//! [`Backend`](super::Backend); everything else is one code path.

use super::db::Ex;
use super::dialect::Sql;
use super::pool::Db;
use super::{Backend, Store, StoreError};

// Column lists as macros so that statements stay `static`s built with `concat!`.

/// `xxl_job_info` columns in [`JobRow`](super::JobRow) order, times as epoch seconds.
macro_rules! job_columns {
    () => {
        "id, job_group, JOB_NAME AS job_desc, EPOCH(add_time) AS add_time, EPOCH(update_time) AS update_time, \
         author, alarm_email, schedule_type, schedule_conf, misfire_strategy, \
         executor_route_strategy, executor_handler, executor_param, executor_block_strategy, \
         executor_timeout, executor_fail_retry_count, glue_type, glue_source, glue_remark, \
         EPOCH(glue_updatetime) AS glue_updatetime, child_jobid, trigger_status, \
         trigger_last_time, trigger_next_time"
    };
}

/// `xxl_job_log` columns in [`LogRow`](super::LogRow) order.
macro_rules! log_columns {
    () => {
        "id, job_group, job_id, executor_address, executor_handler, executor_param, \
         executor_sharding_param, executor_fail_retry_count, \
         EPOCH(trigger_time) AS trigger_time, trigger_code, trigger_msg, \
         EPOCH(handle_time) AS handle_time, handle_code, handle_msg, alarm_status"
    };
}

mod alarms;
mod approvals;
mod audit;
mod backfills;
mod batch;
mod calendars;
mod credentials;
mod fire_sends;
mod flights;
mod grants;
mod groups;
mod instance_tx;
mod jobs;
mod leases;
mod log_pieces;
mod logs;
mod outcomes;
mod reports;
mod schedule;
mod tags;
mod users;
mod wasm;
mod workflow_alarms;
mod workflow_children;
mod workflow_items;
mod workflows;

/// The [`Store`] over a connected database of any backend.
#[derive(Debug, Clone)]
pub(crate) struct SqlStore {
    db: Db,
}

impl SqlStore {
    pub(crate) fn new(db: Db) -> Self {
        Self { db }
    }

    /// Statements on the pool.
    fn ex(&self) -> Ex<'_> {
        self.db.ex()
    }
}

/// The readiness probe's read.
static PING: Sql = Sql::new("SELECT I64(COUNT(*)) FROM xxl_job_lock");

#[async_trait::async_trait]
impl Store for SqlStore {
    fn backend(&self) -> Backend {
        self.db.backend()
    }

    fn schema(&self) -> super::Schema {
        self.db.schema()
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let _: Option<i64> = self.ex().fetch_value(&PING, &[]).await?;
        Ok(())
    }
}
