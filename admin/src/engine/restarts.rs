//! Runs left behind by an executor that restarted on the same address (jobwheel addition).
//!
//! Upstream's lost-job monitor closes a running log only once its executor's address has left
//! the registry. An executor restarted on its old address (a fixed port under systemd's
//! `Restart=on-failure`, a pod keeping its IP) never leaves it, so the runs its predecessor
//! took down would stay "running" forever — and park their FIX_DELAY job and hold a slot of
//! their group's cap with them. jobwheel executors send an `incarnation` in their registry
//! beats; when the edge sees one it has not seen for an address, [`Completion::executor_restarted`]
//! asks the process now at that address which of the runs the database has as running there it
//! still owes a result for (`/outstanding`), and closes the others as lost.
//!
//! Why that is exact: the executor adds a run to what it owes before its `/run` answers, so
//! before the admin stores the run as triggered, and removes it only once an admin stored its
//! result; results a killed predecessor journaled are owed by its successor. The running logs
//! are read *before* the executor is asked, so any of them the new process accepted is either
//! still owed in its answer or already closed by its callback (and the close below is a no-op
//! under the repeat guard). What it assumes: one executor process per address, as routing does.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::EngineError;
use super::complete::Completion;
use super::fire::to_datetime;
use super::i18n::texts;
use crate::store::{GroupId, HandleResult, LogId};

/// How often the new process is asked before giving up (it may still be starting to serve).
const ATTEMPTS: u32 = 5;
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Upstream's failure code for a result.
const FAIL: i32 = 500;

impl Completion {
    /// A jobwheel executor at `address` reported an incarnation this admin had not seen for it:
    /// closes, in the background, the runs its predecessor left open.
    pub fn executor_restarted(self: &Arc<Self>, address: &str) {
        let (completion, address) = (Arc::clone(self), address.to_owned());
        self.tracker.spawn(async move {
            match completion.close_runs_of_predecessor(&address).await {
                Ok(closed) if !closed.is_empty() => {
                    tracing::warn!(%address, count = closed.len(), "runs left open by a restarted executor closed as lost");
                }
                Ok(_) => {}
                Err(error) => tracing::warn!(%address, %error, "cannot check the runs of a restarted executor"),
            }
        });
    }

    /// One check of `address`: the running logs there that its current process does not owe a
    /// result for are failed as lost and completed (retry, alarm, FIX_DELAY, group cap).
    pub async fn close_runs_of_predecessor(&self, address: &str) -> Result<Vec<LogId>, EngineError> {
        let running = self.store.running_log_ids_at(address).await?;
        let mut by_group: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
        for (log, group) in running {
            by_group.entry(group.0).or_default().push(log.0);
        }
        let t = texts(self.lang);
        let mut closed = Vec::new();
        for (group, asked) in by_group {
            let owed = self.ask_outstanding(GroupId(group), address, &asked).await?;
            for log_id in asked.into_iter().filter(|id| !owed.contains(id)).map(LogId) {
                let result = HandleResult {
                    log_id,
                    handle_time: to_datetime(self.clock.now_ms()),
                    handle_code: FAIL,
                    handle_msg: Some(t.restart_lost.replace("{address}", address)),
                };
                if self.apply_and_complete(result).await? {
                    closed.push(log_id);
                }
            }
        }
        self.metrics.lost(closed.len());
        Ok(closed)
    }

    /// `/outstanding` with the group's credentials, a few times while the process comes up.
    async fn ask_outstanding(
        &self,
        group: GroupId,
        address: &str,
        asked: &[i64],
    ) -> Result<HashSet<i64>, EngineError> {
        let client = self.clients.for_group(group).await;
        let mut attempt = 1;
        loop {
            match client.outstanding(address, asked).await {
                Ok(runs) => return Ok(runs.log_ids.into_iter().collect()),
                Err(msg) if attempt >= ATTEMPTS => {
                    return Err(EngineError::Executor { code: FAIL, msg: Some(msg) });
                }
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
        }
    }
}
