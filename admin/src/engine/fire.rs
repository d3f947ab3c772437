//! What one fire is, as every role hands it on: the [`TriggerRequest`] the trigger path takes
//! (from the ring, recovery, a retry, a child job, a workflow node or a user), the job row a
//! pre-read read with it ([`JobSnapshot`]) and the workflow node it fires ([`NodeFire`]). It sits
//! below the roles that make and take fires (scheduler, ring, recovery, trigger path,
//! workflows), so none of them has to import another to name one.

use std::sync::Arc;

pub(crate) use crate::clock::to_datetime;
use crate::domain::{DeliveryMode, TriggerType};
use crate::store::{ClaimId, InstanceId, JobId, JobRow, LogId, RunId};

/// One request to trigger a job (upstream's `trigger(jobId, triggerType, failRetryCount,
/// executorShardingParam, executorParam, addressList)`), plus the ring claim it consumes.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerRequest {
    /// The job.
    pub job_id: JobId,
    /// Why (only shown in `trigger_msg`).
    pub trigger_type: TriggerType,
    /// Remaining retries to record; `None` means the job's `executor_fail_retry_count`.
    pub fail_retry_count: Option<i32>,
    /// `"i/total"` of a retried broadcast shard: only that shard is re-run.
    pub sharding_param: Option<String>,
    /// Overrides the job's parameter when `Some` (manual triggers always pass one).
    pub executor_param: Option<String>,
    /// Overrides the group's addresses for this trigger when non-empty (manual trigger).
    pub address_list: Option<Vec<String>>,
    /// The durable ring claim this trigger fires (scheduled triggers only). Its log row is
    /// inserted by consuming the claim, so a claim fires at most once across admins.
    pub claim: Option<ClaimId>,
    /// The fire second a scheduled trigger is for (epoch ms): its lateness is measured from it.
    pub scheduled_ms: Option<i64>,
    /// The log row the pre-read staged for `claim` (pre-staged firing): firing takes the claim
    /// and uses this row instead of inserting one.
    pub staged_log: Option<LogId>,
    /// The job row the pre-read read, with the job epoch read before it: the trigger fires
    /// with it while the epoch has not moved, and reads the job otherwise.
    pub snapshot: Option<JobSnapshot>,
    /// Not to be sent before this time (epoch ms): the ring hands a second's triggers over
    /// ahead of it, so their database work is done when the second begins (`ring.rs`).
    pub release_ms: Option<i64>,
    /// The workflow instance's context, when this trigger runs a workflow node; sent to the
    /// executor with every shard (`TriggerParam::workflow_context`).
    pub workflow_context: Option<Arc<serde_json::Value>>,
    /// The item of a map node this trigger runs (`TriggerParam::workflow_item`).
    pub workflow_item: Option<Arc<serde_json::Value>>,
    /// Replaces the job's `executorTimeout` (a map node's `timeoutSecs`, per item).
    pub executor_timeout: Option<i32>,
    /// The workflow node this trigger fires (its per-fire key, `fire_key.rs`).
    pub node: Option<NodeFire>,
    /// The delivery mode when it is not the job's (a workflow node that sets its own).
    pub delivery: Option<DeliveryMode>,
    /// A map item's: when the result that freed its slot was stored. Its dispatch
    /// (`jobwheel_workflow_item_dispatch_seconds`) is measured to the executor's answer to
    /// `/run`, not to the log row's outcome write after it.
    pub dispatch_from: Option<std::time::Instant>,
}

impl TriggerRequest {
    /// A trigger of `job_id` with every optional part left to the job's configuration.
    pub fn new(job_id: JobId, trigger_type: TriggerType) -> Self {
        Self {
            job_id,
            trigger_type,
            fail_retry_count: None,
            sharding_param: None,
            executor_param: None,
            address_list: None,
            claim: None,
            scheduled_ms: None,
            staged_log: None,
            snapshot: None,
            release_ms: None,
            workflow_context: None,
            workflow_item: None,
            executor_timeout: None,
            node: None,
            delivery: None,
            dispatch_from: None,
        }
    }
}

/// A job row as a pre-read read it, and the job epoch ([`JobStore::job_epoch`]) it read just
/// before: while the epoch stands, no job was edited since and the row is current.
///
/// [`JobStore::job_epoch`]: crate::store::JobStore::job_epoch
#[derive(Debug, Clone, PartialEq)]
pub struct JobSnapshot {
    /// The row.
    pub row: Arc<JobRow>,
    /// The epoch read before the row.
    pub epoch: i64,
}

/// The workflow node a trigger fires: its instance, name and run row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFire {
    pub instance: InstanceId,
    pub node: String,
    pub run: RunId,
    /// A map node's item: its index and attempt.
    pub item: Option<(i32, i32)>,
}
