//! Partition leases for shared scheduling (`jobwheel_schedule_lease`, `jobwheel_scheduler`).
//!
//! Why the lease rows are read twice: a pre-read must lock only the rows it will hold — on
//! MySQL/MariaDB (REPEATABLE READ) a locking read even keeps the rows it scanned and did not
//! return — and a plain read inside the transaction would fix MySQL's snapshot before the locks
//! are taken. So the current leases are read plainly *before* the transaction and planned, the
//! transaction locks exactly the planned rows by primary key (`FOR UPDATE SKIP LOCKED`) and
//! plans again over what it got: a row another pre-read holds is skipped, never waited for,
//! and a row that changed hands meanwhile is left alone. The
//! pre-read's own plain `SELECT` of due jobs then comes after every lock, so it sees the commit
//! of whichever admin held the partition before.

use async_trait::async_trait;

use super::SqlStore;
use super::schedule::{SqlScheduleTx, lock_schedule_row};
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::pool::Tx;
use crate::store::{LeaseRequest, LeaseRow, LeaseStore, SharedSchedule, StoreError};

static SHARED_LOCK_ROW: Sql =
    Sql::new("SELECT lock_name FROM xxl_job_lock WHERE lock_name = 'schedule_lock' FOR SHARE");
static LEASES: Sql =
    Sql::new("SELECT part, owner, lease_until_ms FROM jobwheel_schedule_lease ORDER BY part");
static HEARTBEAT: Sql = Sql::new(
    "INSERT INTO jobwheel_scheduler (node, seen_ms) VALUES (?, ?) \
     ON CONFLICT (node) DO UPDATE SET seen_ms = excluded.seen_ms",
);
static FORGET_NODES: Sql = Sql::new("DELETE FROM jobwheel_scheduler WHERE seen_ms < ?");
static LIVE_NODE_NAMES: Sql =
    Sql::new("SELECT node FROM jobwheel_scheduler WHERE seen_ms >= ? ORDER BY node");
static LEAVE_LEASES: Sql =
    Sql::new("UPDATE jobwheel_schedule_lease SET owner = NULL, lease_until_ms = 0 WHERE owner = ?");
static LEAVE_NODE: Sql = Sql::new("DELETE FROM jobwheel_scheduler WHERE node = ?");

/// What one node does with the lease rows it could lock.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LeasePlan {
    /// Its own partitions it keeps (renewed).
    pub(crate) keep: Vec<i32>,
    /// Free or expired partitions it takes.
    pub(crate) take: Vec<i32>,
    /// Its own partitions beyond its share, given up.
    pub(crate) release: Vec<i32>,
}

/// How long a partition may lie free before a node already at its share takes it anyway.
///
/// Why: shares count the admins that heartbeat within the lease time, and a killed admin is
/// counted until its own leases run out. When admins die one after another (or one restarts
/// under a new name and dies again), the living ones' shares can add up to less than 32 while
/// a dead admin's partitions are already free: nobody had room for them, their jobs were not
/// pre-read, and a job found late resumes from now — its seconds in between never fired (the
/// chaos suite caught it on MariaDB). A free partition is taken regardless of the share once it
/// has been free this long: longer than a pre-read period, so a node below its share (one that
/// just joined) gets the rows given up for it first; short enough that a dead holder's
/// partition (claimed up to 5 s ahead, leased for 3 s) is pre-read again within 2 s of its
/// expiry, before its next fire is a second late. The taker gives the extra rows up again at
/// its next pre-read once the dead admin leaves the count.
pub(crate) const ORPHAN_MS: i64 = 1_500;

/// Keeps the node's own partitions up to its share (lowest first), gives up the rest, and fills
/// the share from the free or expired ones (lowest first). A live lease of another node is
/// never taken, whatever the share says: it is the other node's to give up. Beyond the share it
/// takes the partitions free for [`ORPHAN_MS`] (a given-up row is free from when it was given
/// up: `lease_until_ms` then records that time).
pub(crate) fn plan_leases(rows: &[LeaseRow], node: &str, now_ms: i64, share: usize) -> LeasePlan {
    let mut plan = LeasePlan::default();
    for row in rows {
        if row.owner.as_deref() == Some(node) {
            if plan.keep.len() < share { plan.keep.push(row.part) } else { plan.release.push(row.part) }
        }
    }
    let free = |row: &&LeaseRow| {
        (row.owner.is_none() || row.lease_until_ms < now_ms) && row.owner.as_deref() != Some(node)
    };
    for row in rows.iter().filter(free) {
        let orphan = row.lease_until_ms < now_ms - ORPHAN_MS;
        if plan.keep.len() + plan.take.len() < share || orphan {
            plan.take.push(row.part);
        }
    }
    plan
}

impl LeasePlan {
    /// Every row the plan touches, ascending.
    fn rows(&self) -> Vec<i32> {
        let mut rows: Vec<i32> = self.keep.iter().chain(&self.take).chain(&self.release).copied().collect();
        rows.sort_unstable();
        rows
    }
}

/// Renews `held` until the lease's end and releases `release` (free from `now_ms`, see
/// [`ORPHAN_MS`]), in one upsert by primary key:
/// on MariaDB an `UPDATE … WHERE part IN (…)` of this small table scans it whole and, under
/// REPEATABLE READ, would lock every row, even the other admins' ones.
async fn write_leases(
    tx: &mut Tx,
    lease: &LeaseRequest<'_>,
    held: &[i32],
    release: &[i32],
) -> Result<(), StoreError> {
    if held.is_empty() && release.is_empty() {
        return Ok(());
    }
    let mut q = QueryBuf::new("INSERT INTO jobwheel_schedule_lease (part, owner, lease_until_ms) VALUES ");
    let rows = held.iter().map(|p| (*p, Some(lease.node), lease.until_ms));
    let released = release.iter().map(|p| (*p, None, lease.now_ms));
    for (i, (part, owner, until)) in rows.chain(released).enumerate() {
        q.push(if i == 0 { "(" } else { ", (" })
            .bind(part)
            .push(", ")
            .bind(owner)
            .push(", ")
            .bind(until)
            .push(")");
    }
    q.push(
        " ON CONFLICT (part) DO UPDATE SET owner = excluded.owner, lease_until_ms = excluded.lease_until_ms",
    );
    tx.ex().execute(&q, q.args()).await?;
    Ok(())
}

#[async_trait]
impl LeaseStore for SqlStore {
    async fn scheduler_heartbeat(
        &self,
        node: &str,
        now_ms: i64,
        live_since_ms: i64,
        forget_before_ms: i64,
    ) -> Result<usize, StoreError> {
        self.ex().execute(&HEARTBEAT, &args![node, now_ms]).await?;
        self.ex().execute(&FORGET_NODES, &args![forget_before_ms]).await?;
        Ok(self.live_schedulers(live_since_ms).await?.len().max(1))
    }

    async fn begin_shared_schedule(&self, lease: &LeaseRequest<'_>) -> Result<SharedSchedule, StoreError> {
        let seen: Vec<LeaseRow> = self.ex().fetch_all(&LEASES, &[]).await?;
        let wanted = plan_leases(&seen, lease.node, lease.now_ms, lease.share).rows();
        let mut tx = self.db.begin().await?;
        lock_schedule_row(&mut tx, &SHARED_LOCK_ROW).await?;
        let locked: Vec<LeaseRow> = if wanted.is_empty() {
            Vec::new()
        } else {
            let mut q = QueryBuf::new(
                "SELECT part, owner, lease_until_ms FROM jobwheel_schedule_lease WHERE part IN (",
            );
            q.bind_list(wanted.iter().copied()).push(") ORDER BY part FOR UPDATE SKIP LOCKED");
            tx.ex().fetch_all(&q, q.args()).await?
        };
        let plan = plan_leases(&locked, lease.node, lease.now_ms, lease.share);
        let mut held: Vec<i32> = plan.keep.iter().chain(&plan.take).copied().collect();
        held.sort_unstable();
        write_leases(&mut tx, lease, &held, &plan.release).await?;
        let schedule = SqlScheduleTx {
            tx,
            id_step: self.db.id_step(),
            partitions: Some(held.clone()),
            node: Some(lease.node.to_owned()),
        };
        Ok(SharedSchedule {
            tx: Box::new(schedule),
            partitions: held,
            taken: plan.take.len(),
            released: plan.release.len(),
        })
    }

    async fn leave_schedule(&self, node: &str) -> Result<(), StoreError> {
        self.ex().execute(&LEAVE_LEASES, &args![node]).await?;
        self.ex().execute(&LEAVE_NODE, &args![node]).await?;
        Ok(())
    }

    async fn live_schedulers(&self, since_ms: i64) -> Result<Vec<String>, StoreError> {
        self.ex().fetch_column(&LIVE_NODE_NAMES, &args![since_ms]).await
    }

    async fn schedule_leases(&self) -> Result<Vec<LeaseRow>, StoreError> {
        self.ex().fetch_all(&LEASES, &[]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(part: i32, owner: Option<&str>, until: i64) -> LeaseRow {
        LeaseRow { part, owner: owner.map(str::to_owned), lease_until_ms: until }
    }

    #[test]
    fn a_node_keeps_its_share_releases_the_rest_and_fills_up_from_free_rows() {
        let now = 10_000;
        let rows = [
            row(0, Some("a"), now + 50),
            row(1, Some("a"), now + 50),
            row(2, Some("a"), now + 50),
            row(3, None, now),
        ];
        let plan = plan_leases(&rows, "a", now, 2);
        assert_eq!(plan, LeasePlan { keep: vec![0, 1], take: vec![], release: vec![2] });
        let plan = plan_leases(&rows, "b", now, 2);
        assert_eq!(plan, LeasePlan { keep: vec![], take: vec![3], release: vec![] });
    }

    #[test]
    fn a_partition_free_for_long_is_taken_beyond_the_share() {
        let now = 100_000;
        // "a" is at its share of 1; partition 1 was given up just now (for a newcomer), 2 ran
        // out 1 s ago, 3 ran out 2 s ago and nobody took it: only 3 is an orphan.
        let rows = [
            row(0, Some("a"), now + 3_000),
            row(1, None, now - 100),
            row(2, Some("dead"), now - 1_000),
            row(3, Some("dead"), now - ORPHAN_MS - 500),
        ];
        let plan = plan_leases(&rows, "a", now, 1);
        assert_eq!(plan, LeasePlan { keep: vec![0], take: vec![3], release: vec![] });
        // A node below its share takes the fresh ones too, lowest first.
        assert_eq!(plan_leases(&rows, "b", now, 2).take, vec![1, 2, 3]);
        // Next time round the taker gives back what exceeds its share.
        let held = [row(0, Some("a"), now + 3_000), row(3, Some("a"), now + 3_000)];
        assert_eq!(plan_leases(&held, "a", now + 1_000, 1).release, vec![3]);
    }

    #[test]
    fn expired_leases_are_free_and_live_ones_of_others_are_not() {
        let rows = [row(0, Some("a"), 5), row(1, Some("a"), 50), row(2, Some("b"), 9)];
        let plan = plan_leases(&rows, "c", 10, 32);
        assert_eq!(plan.take, vec![0, 2]);
        // Its own expired lease is still its own: kept, not "taken".
        let plan = plan_leases(&rows, "b", 10, 32);
        assert_eq!(plan, LeasePlan { keep: vec![2], take: vec![0], release: vec![] });
        assert_eq!(plan_leases(&rows, "a", 10, 1).rows(), vec![0, 1], "kept and released rows");
    }
}
