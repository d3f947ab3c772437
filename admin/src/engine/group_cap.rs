//! The per-group cap on runs in flight (jobwheel extension; `docs/scheduling.md`, "Concurrency
//! cap and priorities"): an administrator sets how many runs of an executor group may be in
//! flight across all its executors, and the trigger path refuses one more.
//!
//! "In flight" is read from the logs, which every admin shares: the group's logs without a
//! result whose trigger did not fail. A trigger counts only the runs *ahead* of its own log row
//! (smaller ids), so of two triggers racing for the last place the older one wins instead of
//! both being refused. A refused trigger fails like any trigger that could not start — code 500
//! with the reason in its trigger message — so the job's retries and alarm apply as upstream
//! defines them; the cap does not queue runs in the admin.

use super::EngineError;
use crate::metrics::AdminMetrics;
use crate::store::{GroupId, LogId, Store};

/// `Some(reason)` when the group's runs in flight ahead of `log_id` (triggered at
/// `trigger_time_ms`) have reached its cap.
pub(super) async fn group_cap_refusal(
    store: &dyn Store,
    metrics: &AdminMetrics,
    group: GroupId,
    max_running: Option<i32>,
    log_id: LogId,
    trigger_time_ms: i64,
) -> Result<Option<String>, EngineError> {
    let Some(max) = max_running.and_then(|m| u64::try_from(m).ok()) else { return Ok(None) };
    let at = super::fire::to_datetime(trigger_time_ms);
    let running = store.running_ahead(group, log_id, at).await?;
    if running < max {
        return Ok(None);
    }
    metrics.group_cap_refusal();
    tracing::info!(group = group.0, running, max, "trigger refused: the group's cap on runs in flight");
    Ok(Some(format!(
        "not started: executor group {group} has {running} of its {max} runs in flight \
             (its cap, set on the Executors page); the run counts as failed and its retries apply"
    )))
}
