//! The store's shared-scheduling area: admins on one PostgreSQL or MySQL database that each
//! pre-read a share of the jobs (docs/engine.md, "Shared scheduling").
//!
//! Jobs fall into [`SCHEDULE_PARTITIONS`] partitions by id. An admin ("node") leases partitions
//! in `jobwheel_schedule_lease` and pre-reads only their jobs; it holds each leased row locked
//! (`FOR UPDATE SKIP LOCKED`) for the whole pre-read, so two pre-reads never read the same job
//! at once, whatever the clocks say. Leases that are not renewed expire and go to the others.

use async_trait::async_trait;

use super::{ScheduleTx, StoreError};

/// How many partitions the jobs fall into (`id % 32`); the migration seeds one lease row each.
pub const SCHEDULE_PARTITIONS: i32 = 32;
/// [`SCHEDULE_PARTITIONS`] as a count.
pub(crate) const PARTITION_COUNT: usize = SCHEDULE_PARTITIONS.unsigned_abs() as usize;

/// A stored `jobwheel_schedule_lease` row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LeaseRow {
    /// The partition: the jobs with `id % 32 = part`.
    pub part: i32,
    /// The node holding it; `None` when released.
    pub owner: Option<String>,
    /// Until when the lease holds unless renewed, epoch ms (0 when released).
    pub lease_until_ms: i64,
}

/// What a shared pre-read asks for.
#[derive(Debug, Clone, Copy)]
pub struct LeaseRequest<'a> {
    /// This admin's name in the lease table (unique per process start).
    pub node: &'a str,
    /// Now, epoch ms: leases that ran out before it are free.
    pub now_ms: i64,
    /// The leases kept or taken are renewed until this time.
    pub until_ms: i64,
    /// How many partitions this node should hold (its fair share of the live nodes).
    pub share: usize,
}

/// A shared pre-read: the transaction holding the leased rows locked, and what it holds.
pub struct SharedSchedule {
    /// The pre-read; its `due_jobs` returns only jobs of `partitions`, and the claims it
    /// inserts record the node ([`ClaimRow::node`](super::ClaimRow::node)).
    pub tx: Box<dyn ScheduleTx>,
    /// The partitions this node holds for this pre-read, ascending.
    pub partitions: Vec<i32>,
    /// Partitions newly taken by this call (free or expired before).
    pub taken: usize,
    /// Partitions this node gave up because it held more than its share.
    pub released: usize,
}

/// Partition leases and the list of scheduling nodes.
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// Records that `node` is scheduling at `now_ms`, forgets nodes silent since before
    /// `forget_before_ms`, and answers how many nodes (this one included) were seen since
    /// `live_since_ms`.
    async fn scheduler_heartbeat(
        &self,
        node: &str,
        now_ms: i64,
        live_since_ms: i64,
        forget_before_ms: i64,
    ) -> Result<usize, StoreError>;
    /// Begins a shared pre-read: takes upstream's schedule lock row **shared** (`FOR SHARE`,
    /// so an admin taking it exclusively, as upstream does, still excludes every shared
    /// pre-read), then locks the lease rows this node holds or may take, skipping rows another
    /// pre-read has locked; keeps up to `share` of its own, releases the rest, takes free or
    /// expired ones up to `share`, and renews what it keeps until `until_ms`. Committing the
    /// returned transaction commits the leases with the pre-read's writes.
    async fn begin_shared_schedule(&self, lease: &LeaseRequest<'_>) -> Result<SharedSchedule, StoreError>;
    /// Releases every lease of `node` and forgets it (a clean shutdown), so the other nodes
    /// take its partitions at their next pre-read instead of after the lease runs out.
    async fn leave_schedule(&self, node: &str) -> Result<(), StoreError>;
    /// The nodes seen scheduling since `since_ms`, by name.
    async fn live_schedulers(&self, since_ms: i64) -> Result<Vec<String>, StoreError>;
    /// Every lease row, by partition.
    async fn schedule_leases(&self) -> Result<Vec<LeaseRow>, StoreError>;
}
