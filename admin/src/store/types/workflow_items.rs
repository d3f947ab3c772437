//! A map node's items (`jobwheel_workflow_item`): one row per element of the array the node maps
//! over, with the state of its current attempt (the run states: due, fired, succeeded, failed,
//! stopped) and what it reported.

use super::{LogId, RunId, RunStatus};

/// A fired item with what its log row says (`xxl_job_log` and `jobwheel_workflow_output`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ItemLog {
    /// The item row.
    pub id: i64,
    /// Its place in the array, from 0.
    pub idx: i32,
    /// 1 for the first attempt.
    pub attempt: i32,
    /// The current attempt's log row.
    pub log_id: LogId,
    /// Its trigger code (0 while on its way).
    pub trigger_code: i32,
    /// Its handle code (0 while running).
    pub handle_code: i32,
    /// The executor's message.
    pub handle_msg: Option<String>,
    /// The output a jobwheel executor reported with the result.
    pub output: Option<String>,
}

impl ItemLog {
    /// The attempt's outcome as a node run's log reads (the runner settles both alike).
    pub fn as_run_log(&self, run: RunId) -> super::RunLog {
        super::RunLog {
            run_id: run,
            log_id: self.log_id,
            trigger_code: self.trigger_code,
            handle_code: self.handle_code,
            handle_msg: self.handle_msg.clone(),
            output: self.output.clone(),
        }
    }
}

/// An item taken to fire: DUE → FIRED with its new log row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenItem {
    /// Its place in the array.
    pub idx: i32,
    /// The attempt fired.
    pub attempt: i32,
    /// The item (JSON).
    pub item: String,
    /// Its log row.
    pub log_id: LogId,
}

/// How many items of a map run are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemCounts {
    /// Every item.
    pub total: i64,
    /// Waiting to be fired (or to be retried).
    pub due: i64,
    /// Running.
    pub running: i64,
    /// Succeeded.
    pub succeeded: i64,
    /// Failed after their retries.
    pub failed: i64,
    /// Stopped with their instance.
    pub stopped: i64,
}

impl ItemCounts {
    /// Adds `count` items in `status`.
    pub fn add(&mut self, status: RunStatus, count: i64) {
        self.total += count;
        match status {
            RunStatus::Due => self.due += count,
            RunStatus::Fired => self.running += count,
            RunStatus::Succeeded => self.succeeded += count,
            RunStatus::Failed => self.failed += count,
            _ => self.stopped += count,
        }
    }
}

/// One item as the API lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ItemRow {
    /// Its place in the array, from 0.
    pub idx: i32,
    /// Its current attempt.
    pub attempt: i32,
    /// Its state.
    pub status: RunStatus,
    /// The current attempt's log row.
    pub log_id: Option<LogId>,
    /// The item (JSON).
    pub item: String,
    /// What it reported (JSON).
    pub output: Option<String>,
    /// Why it failed.
    pub message: Option<String>,
}
