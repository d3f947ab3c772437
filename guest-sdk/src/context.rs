//! [`Context`]: what the runtime tells a job about this run, read from the environment.

use std::fmt;
use std::ops::Range;

use crate::abi;

/// Which slice of the work this run owns when the job is triggered with sharding
/// (xxl-job's `SHARDING_BROADCAST` route); `index` 0 of `total` 1 otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based index of this executor among the shards.
    pub index: i32,
    /// Number of shards, at least 1.
    pub total: i32,
}

impl Shard {
    /// Whether `item` belongs to this shard under modulo assignment (`item % total == index`).
    pub fn owns(&self, item: u64) -> bool {
        item % self.total as u64 == self.index as u64
    }

    /// This shard's contiguous block of `0..len`; the blocks of all shards partition `0..len`
    /// and differ in size by at most one.
    pub fn slice(&self, len: u64) -> Range<u64> {
        let (index, total) = (self.index as u64, self.total as u64);
        let start = len * index / total;
        let end = len * (index + 1) / total;
        start..end
    }
}

/// The run's inputs: parameter, ids, shard and, for a workflow node, the instance's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    param: String,
    job_id: i32,
    log_id: i64,
    shard: Shard,
    workflow_context: Option<String>,
    workflow_item: Option<String>,
    fire_key: String,
    scheduled_time: i64,
}

/// An ABI environment variable holds a value the SDK cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError {
    variable: &'static str,
    value: String,
    expected: &'static str,
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "environment variable {} is {:?}, expected {}", self.variable, self.value, self.expected)
    }
}

impl std::error::Error for ContextError {}

impl Context {
    /// Builds a context directly, e.g. to unit-test a job function on the host.
    ///
    /// # Panics
    /// If `shard` is not `0 <= index < total`.
    pub fn new(param: impl Into<String>, job_id: i32, log_id: i64, shard: Shard) -> Context {
        assert!(0 <= shard.index && shard.index < shard.total, "invalid shard {shard:?}");
        let fire_key = format!("log:{log_id}");
        Context {
            param: param.into(),
            job_id,
            log_id,
            shard,
            workflow_context: None,
            workflow_item: None,
            fire_key,
            scheduled_time: 0,
        }
    }

    /// The same context for a fire with `fire_key` scheduled for `scheduled_time` (epoch ms),
    /// e.g. to unit-test a job that keys its side effects on the fire.
    pub fn with_fire(mut self, fire_key: impl Into<String>, scheduled_time: i64) -> Context {
        self.fire_key = fire_key.into();
        self.scheduled_time = scheduled_time;
        self
    }

    /// The same context as a workflow node's run with `workflow_context` (JSON text), e.g. to
    /// unit-test a node's function on the host.
    pub fn with_workflow_context(mut self, workflow_context: impl Into<String>) -> Context {
        self.workflow_context = Some(workflow_context.into());
        self
    }

    /// The same context as a map item's run for `workflow_item` (JSON text).
    pub fn with_workflow_item(mut self, workflow_item: impl Into<String>) -> Context {
        self.workflow_item = Some(workflow_item.into());
        self
    }

    /// Reads the context from the `JOBWHEEL_*` environment variables. Missing variables take
    /// neutral defaults (empty param, ids 0, shard 0 of 1), so a job also runs under a plain
    /// `wasmtime run job.wasm`; present but malformed ones are an error.
    pub fn from_env() -> Result<Context, ContextError> {
        let param = std::env::var(abi::ENV_PARAM).unwrap_or_default();
        let job_id = number(abi::ENV_JOB_ID, 0)?;
        let log_id = number(abi::ENV_LOG_ID, 0)?;
        let index: i32 = number(abi::ENV_SHARD_INDEX, 0)?;
        let total: i32 = number(abi::ENV_SHARD_TOTAL, 1)?;
        if total < 1 {
            return Err(invalid(abi::ENV_SHARD_TOTAL, total.to_string(), "a shard total of at least 1"));
        }
        if !(0..total).contains(&index) {
            return Err(invalid(
                abi::ENV_SHARD_INDEX,
                index.to_string(),
                "a shard index below the shard total",
            ));
        }
        let workflow_context = std::env::var(abi::ENV_WORKFLOW_CONTEXT).ok();
        let workflow_item = std::env::var(abi::ENV_WORKFLOW_ITEM).ok();
        // Absent (an older executor, `wasmtime run`): the run is a fire of its own.
        let fire_key = std::env::var(abi::ENV_FIRE_KEY).unwrap_or_else(|_| format!("log:{log_id}"));
        let scheduled_time = number(abi::ENV_SCHEDULED_TIME, 0)?;
        Ok(Context {
            param,
            job_id,
            log_id,
            shard: Shard { index, total },
            workflow_context,
            workflow_item,
            fire_key,
            scheduled_time,
        })
    }

    /// The job parameter (xxl-job `executorParams`), empty when none was given.
    pub fn param(&self) -> &str {
        &self.param
    }

    /// This run's shard.
    pub fn shard(&self) -> Shard {
        self.shard
    }

    /// The job's id.
    pub fn job_id(&self) -> i32 {
        self.job_id
    }

    /// The log id of this run (unique per trigger).
    pub fn log_id(&self) -> i64 {
        self.log_id
    }

    /// The fire's key: the same when the same fire is delivered again (one job's scheduled
    /// second and shard, or one workflow node run), different for a retry, a manual run or any
    /// other fire of its own. Key side effects on it to do them once (docs/engine.md, "The
    /// per-fire key").
    pub fn fire_key(&self) -> &str {
        &self.fire_key
    }

    /// When the fire was scheduled for, epoch ms: the scheduled second even when the run is
    /// late or delivered again; the trigger time of a fire no schedule made; 0 outside jobwheel.
    pub fn scheduled_time(&self) -> i64 {
        self.scheduled_time
    }

    /// The workflow instance's context when this run is a workflow node: JSON text of an
    /// object holding the instance's start input and each finished node's output under the
    /// node's name (parse it with the JSON crate of your choice). `None` outside a workflow.
    /// A node hands data on with [`crate::set_output`].
    pub fn workflow_context(&self) -> Option<&str> {
        self.workflow_context.as_deref()
    }

    /// The item this run is for when it is one item of a workflow map node: JSON text of one
    /// element of the array the node maps over. `None` otherwise; an item's run gets no
    /// [`Context::workflow_context`] (what every item needs comes in the node's parameter).
    pub fn workflow_item(&self) -> Option<&str> {
        self.workflow_item.as_deref()
    }

    /// A variable set on the job or its executor group (the job's wins), `None` when unset.
    /// Variables reach the guest as environment variables of the same name.
    pub fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    /// A secret of the job or its executor group, `None` when unset. Secrets also arrive as
    /// environment variables; the executor masks their values in the job log, so printing one
    /// shows `****` — but do not rely on that: keep secrets out of your output.
    pub fn secret(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

fn number<T: std::str::FromStr>(variable: &'static str, default: T) -> Result<T, ContextError> {
    match std::env::var(variable) {
        Ok(value) => value.trim().parse().map_err(|_| invalid(variable, value, "a decimal integer")),
        Err(std::env::VarError::NotPresent) => Ok(default),
        Err(std::env::VarError::NotUnicode(value)) => {
            Err(invalid(variable, value.to_string_lossy().into_owned(), "a decimal integer"))
        }
    }
}

fn invalid(variable: &'static str, value: String, expected: &'static str) -> ContextError {
    ContextError { variable, value, expected }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_partition_the_range() {
        for total in 1..7 {
            let mut covered = Vec::new();
            for index in 0..total {
                covered.extend(Shard { index, total }.slice(20));
            }
            assert_eq!(covered, (0..20).collect::<Vec<_>>(), "total {total}");
        }
    }

    #[test]
    fn owns_is_modulo_assignment() {
        let shard = Shard { index: 1, total: 3 };
        let owned: Vec<u64> = (0..10).filter(|i| shard.owns(*i)).collect();
        assert_eq!(owned, vec![1, 4, 7]);
    }
}
