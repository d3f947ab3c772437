//! Shared scheduling: several admins on one PostgreSQL or MySQL database each pre-read a share
//! of the jobs, instead of taking turns on upstream's schedule lock (docs/engine.md, "Shared
//! scheduling"; the lease rules are in `store/sql/leases.rs`).
//!
//! Every pre-read first says "I am scheduling" (`jobwheel_scheduler`), counts the admins that
//! said so within the lease time, and asks for its fair share of the
//! [`SCHEDULE_PARTITIONS`](crate::store::SCHEDULE_PARTITIONS): `ceil(32 / live admins)`. An admin that joins makes the others'
//! share smaller, so they give partitions up at their next pre-read and it takes them; an
//! admin that dies stops renewing, drops out of the count and its leases run out, so the
//! others' share grows and they take its partitions — within [`LEASE_MS`] plus a pre-read,
//! which is less than the 5 s the pre-read looks ahead, so no trigger of a dead admin's
//! partition is late because of the hand-over (its already-claimed triggers are recovered from
//! the durable ring as before).
//!
//! Exactly-once does not rest on the clocks: a partition's jobs are only pre-read by a
//! transaction holding its lease row locked, and the next holder reads after that commit.

use std::sync::Arc;

use super::EngineError;
use crate::metrics::AdminMetrics;
use crate::store::PARTITION_COUNT as PARTITIONS;
use crate::store::{LeaseRequest, ScheduleTx, Store};

/// How long a lease (and an admin's place in the count) lasts without renewal. Renewed every
/// second by the pre-read; must stay below [`super::PRE_READ_MS`] minus a pre-read's length.
pub const LEASE_MS: i64 = 3000;
/// Admins silent this long are deleted from `jobwheel_scheduler` (they left nothing behind).
const FORGET_NODE_MS: i64 = 3_600_000;

/// The partitions one of `live` admins should hold: all of them rounded up, so the shares
/// always cover every partition.
pub fn fair_share(live: usize) -> usize {
    PARTITIONS.div_ceil(live.max(1))
}

/// A name for this admin process in the lease table: its address, plus a random suffix so a
/// restarted admin (a new process at the same address) never inherits a dead one's leases by
/// accident.
pub fn schedule_node_name(admin_address: &str) -> String {
    let address: String = admin_address.chars().take(80).collect();
    format!("{address}#{:08x}", rand::random::<u32>())
}

/// This admin's part in scheduling: the whole schedule under upstream's lock, or (shared
/// scheduling) its leased partitions.
pub(crate) struct Leases {
    store: Arc<dyn Store>,
    /// This process's name in `jobwheel_scheduler` (`None`: exclusive scheduling).
    node: Option<String>,
    metrics: Arc<AdminMetrics>,
}

impl Leases {
    pub(crate) fn new(store: Arc<dyn Store>, node: Option<String>, metrics: Arc<AdminMetrics>) -> Self {
        Self { store, node, metrics }
    }

    /// Whether the schedule is shared with other admins.
    pub(crate) fn shared(&self) -> bool {
        self.node.is_some()
    }

    /// Opens a pre-read at `now_ms`: under upstream's exclusive lock over every job, or, when
    /// this admin shares the scheduling, over the partitions it leases.
    pub(super) async fn begin(&self, now_ms: i64) -> Result<Box<dyn ScheduleTx>, EngineError> {
        let Some(node) = self.node.as_deref() else {
            self.metrics.schedule_partitions(PARTITIONS);
            return Ok(self.store.begin_schedule().await?);
        };
        let live =
            self.store.scheduler_heartbeat(node, now_ms, now_ms - LEASE_MS, now_ms - FORGET_NODE_MS).await?;
        let request = LeaseRequest { node, now_ms, until_ms: now_ms + LEASE_MS, share: fair_share(live) };
        let shared = self.store.begin_shared_schedule(&request).await?;
        if shared.taken > 0 || shared.released > 0 {
            tracing::info!(
                live,
                taken = shared.taken,
                released = shared.released,
                held = shared.partitions.len(),
                "schedule partitions changed"
            );
        }
        self.metrics.schedule_partitions(shared.partitions.len());
        Ok(shared.tx)
    }

    /// On shutdown: gives this admin's partitions back at once, so the others take them at
    /// their next pre-read rather than when the leases run out.
    pub(super) async fn leave(&self) {
        let Some(node) = self.node.as_deref() else { return };
        if let Err(error) = self.store.leave_schedule(node).await {
            tracing::warn!(%error, "cannot release the schedule partitions; they expire in {LEASE_MS} ms");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_partition() {
        assert_eq!(fair_share(0), 32);
        assert_eq!(fair_share(1), 32);
        assert_eq!(fair_share(2), 16);
        assert_eq!(fair_share(3), 11);
        assert!(fair_share(5) * 5 >= 32);
    }

    #[test]
    fn node_names_differ_per_process_start() {
        let (a, b) = (schedule_node_name("http://10.0.0.1:8080"), schedule_node_name("http://10.0.0.1:8080"));
        assert!(a.starts_with("http://10.0.0.1:8080#"), "{a}");
        assert_ne!(a, b);
        assert!(schedule_node_name(&"x".repeat(300)).len() <= 100);
    }
}
