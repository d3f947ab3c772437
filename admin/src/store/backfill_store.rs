//! The store's backfills (`jobwheel_backfill`, `jobwheel_backfill_fire`; docs/backfill.md).
//! Handing scheduled times out happens in a [`BackfillTx`], which holds the backfill's row
//! lock, so of two admins sweeping one hands each time out.

use async_trait::async_trait;

use super::{
    BackfillKind, BackfillProgress, BackfillRow, FireRun, GroupId, NewBackfill, StoreError, UnsentFire,
};

/// Backfills and the times they handed out.
#[async_trait]
pub trait BackfillStore: Send + Sync {
    /// Inserts a backfill; its id.
    async fn add_backfill(&self, new: &NewBackfill) -> Result<i64, StoreError>;
    /// One backfill.
    async fn load_backfill(&self, id: i64) -> Result<Option<BackfillRow>, StoreError>;
    /// Backfills newest first, of one target when given, of `groups` (all when `None`), at most
    /// `limit`.
    async fn list_backfills(
        &self,
        target: Option<(BackfillKind, i64)>,
        groups: Option<&[GroupId]>,
        limit: u32,
    ) -> Result<Vec<BackfillRow>, StoreError>;
    /// Running backfills, oldest first, at most `limit`.
    async fn running_backfills(&self, limit: u32) -> Result<Vec<i64>, StoreError>;
    /// Cancels a running backfill; false if it was not running.
    async fn cancel_backfill(&self, id: i64, now_ms: i64) -> Result<bool, StoreError>;
    /// How its runs stand.
    async fn backfill_progress(&self, id: i64) -> Result<BackfillProgress, StoreError>;
    /// Opens a backfill with its row locked; `None` if absent.
    async fn begin_backfill(&self, id: i64) -> Result<Option<Box<dyn BackfillTx>>, StoreError>;
    /// Records what ran a handed-out time.
    async fn set_fire_run(&self, fire: i64, run: FireRun) -> Result<(), StoreError>;
    /// Handed-out times never sent, claimed before `claimed_before_ms`, at most `limit`.
    async fn unsent_fires(&self, claimed_before_ms: i64, limit: u32) -> Result<Vec<UnsentFire>, StoreError>;
    /// Claims an unsent time for sending (guarded by its old claim); false if another admin did.
    async fn reclaim_fire(&self, fire: &UnsentFire, now_ms: i64) -> Result<bool, StoreError>;
}

/// One backfill under its row lock. Dropping it without `commit` rolls back.
#[async_trait]
pub trait BackfillTx: Send {
    /// The backfill as locked.
    fn backfill(&self) -> &BackfillRow;
    /// Its handed-out times whose run is not over (or not sent yet).
    async fn in_flight(&mut self) -> Result<i64, StoreError>;
    /// Whether its target already ran `scheduled_ms`: a job's log row of that second whose
    /// trigger reached an executor (the schedule's fires log their scheduled second), a
    /// backfill's trigger of that time, or a workflow's instance of that fire time.
    async fn ran_before(&mut self, scheduled_ms: i64) -> Result<bool, StoreError>;
    /// Hands `scheduled_ms` out; the fire's id.
    async fn add_fire(&mut self, scheduled_ms: i64, now_ms: i64) -> Result<i64, StoreError>;
    /// Moves the cursor on, adds to the counts, and sets the state (and end time).
    async fn advance(&mut self, cursor_ms: i64, handed: i32, skipped: i32) -> Result<(), StoreError>;
    /// Ends it in `status` with `message`.
    async fn end(
        &mut self,
        status: super::BackfillStatus,
        message: Option<&str>,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Commits.
    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
}
