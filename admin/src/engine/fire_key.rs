//! The per-fire key every trigger carries (`TriggerParam::fire_key`, docs/engine.md "The
//! per-fire key"): fixed by what was scheduled, so a job can tell a fire it already handled
//! from a new one.
//!
//! - A schedule's fire (CRON, FIX_RATE, FIX_DELAY; pre-read, ring or recovered claim), and a
//!   backfill's fire of a past scheduled time: `job:<job id>@<scheduled epoch ms>`, plus
//!   `#<index>/<total>` for a broadcast shard. Sent again — by a recovering admin, as the same
//!   claim, or by a backfill of a time the schedule already fired — it is the same key; it does
//!   not depend on which admin fired it or on the log row.
//! - A workflow node's run: `node:<instance id>/<node name>/<run id>` (plus the shard), one run
//!   row per fire of a node, so a rerun of the node is a new key; a map node's item adds
//!   `/item/<index>.<attempt>`, so each attempt of each item has its own.
//! - Any other fire (a manual or API run, a retry, a child job, a misfire's fire-once-now):
//!   `log:<log id>`. Each is a fire of its own with its own log row; sending it again keeps the
//!   row, and so the key.

use super::fire::TriggerRequest;
use crate::domain::TriggerType;
use crate::routing::Shard;
use crate::store::LogId;

/// The key of one trigger's shard (`shard` is `Some` only for a broadcast) and the time it
/// was scheduled for (`trigger_time_ms` for a fire no schedule made).
pub(super) fn fire_key(
    request: &TriggerRequest,
    shard: Option<Shard>,
    log_id: LogId,
    trigger_time_ms: i64,
) -> (String, i64) {
    let suffix = shard.map(|s| format!("#{}/{}", s.index, s.total)).unwrap_or_default();
    match (&request.node, request.trigger_type, request.scheduled_ms) {
        (Some(node), ..) => {
            // A map item's attempt: `/item/<index>.<attempt>` after its run's key.
            let item = node.item.map(|(idx, attempt)| format!("/item/{idx}.{attempt}")).unwrap_or_default();
            (format!("node:{}/{}/{}{item}{suffix}", node.instance.0, node.node, node.run.0), trigger_time_ms)
        }
        (None, TriggerType::Cron | TriggerType::Backfill, Some(scheduled_ms)) => {
            (format!("job:{}@{scheduled_ms}{suffix}", request.job_id.0), scheduled_ms)
        }
        _ => (format!("log:{}", log_id.0), trigger_time_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::NodeFire;
    use crate::store::{InstanceId, JobId, RunId};

    fn scheduled(job: i32, at: i64) -> TriggerRequest {
        TriggerRequest { scheduled_ms: Some(at), ..TriggerRequest::new(JobId(job), TriggerType::Cron) }
    }

    #[test]
    fn a_scheduled_fire_is_keyed_by_job_second_and_shard_not_by_its_log_row() {
        let at = 1_764_900_000_000;
        assert_eq!(fire_key(&scheduled(7, at), None, LogId(1), at), (format!("job:7@{at}"), at));
        assert_eq!(fire_key(&scheduled(7, at), None, LogId(2), at + 900).0, format!("job:7@{at}"));
        let shard = Some(Shard { index: 1, total: 3 });
        assert_eq!(fire_key(&scheduled(7, at), shard, LogId(3), at).0, format!("job:7@{at}#1/3"));
        assert_ne!(fire_key(&scheduled(7, at + 1000), None, LogId(1), at).0, format!("job:7@{at}"));
    }

    #[test]
    fn a_retry_a_manual_run_and_a_misfire_are_fires_of_their_own() {
        let at = 1_764_900_000_000;
        for trigger_type in [TriggerType::Retry, TriggerType::Manual, TriggerType::Misfire, TriggerType::Api]
        {
            let request =
                TriggerRequest { scheduled_ms: Some(at), ..TriggerRequest::new(JobId(7), trigger_type) };
            assert_eq!(fire_key(&request, None, LogId(42), at + 5), ("log:42".to_owned(), at + 5));
        }
    }

    #[test]
    fn a_workflow_node_is_keyed_by_its_run_row() {
        let node = NodeFire { instance: InstanceId(5), node: "load".into(), run: RunId(9), item: None };
        let request =
            TriggerRequest { node: Some(node), ..TriggerRequest::new(JobId(7), TriggerType::Workflow) };
        assert_eq!(fire_key(&request, None, LogId(42), 77), ("node:5/load/9".to_owned(), 77));
        let item =
            NodeFire { instance: InstanceId(5), node: "each".into(), run: RunId(9), item: Some((17, 2)) };
        let request =
            TriggerRequest { node: Some(item), ..TriggerRequest::new(JobId(7), TriggerType::Workflow) };
        assert_eq!(fire_key(&request, None, LogId(43), 77).0, "node:5/each/9/item/17.2");
    }
}
