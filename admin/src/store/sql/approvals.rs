//! `jobwheel_approval` (migration 0042): held module versions and grant changes
//! (`store/approval_store.rs`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::{ApprovalRow, ApprovalStatus, ApprovalStore, Decision, JobId, NewApproval, StoreError};

macro_rules! approval_columns {
    () => {
        "id, job_id, kind, version_id, digest, grant_body, widening, requested_by, requested_ms, \
         status, decided_by, decided_ms, note"
    };
}

static INSERT: Sql = Sql::new(
    "INSERT INTO jobwheel_approval (job_id, kind, version_id, digest, grant_body, widening, \
    requested_by, requested_ms, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0) RETURNING id",
);
static ONE: Sql = Sql::new(concat!("SELECT ", approval_columns!(), " FROM jobwheel_approval WHERE id = ?"));
/// `? IS NULL` spelled per argument: a job filter and a pending filter that are off match all.
static LIST: Sql = Sql::new(concat!(
    "SELECT ",
    approval_columns!(),
    " FROM jobwheel_approval WHERE (job_id = ? OR ? = 0) AND (status = 0 OR ? = 0) ORDER BY id DESC LIMIT ?"
));
static DECIDE: Sql = Sql::new(
    "UPDATE jobwheel_approval SET status = ?, decided_by = ?, decided_ms = ?, note = ? \
    WHERE id = ? AND status = 0",
);

#[async_trait]
impl ApprovalStore for SqlStore {
    async fn add_approval(&self, new: &NewApproval) -> Result<i64, StoreError> {
        let args = args![
            new.job_id,
            new.kind.as_str(),
            new.version_id,
            new.digest.as_deref(),
            new.grant_body.as_deref(),
            &new.widening,
            &new.requested_by,
            new.requested_ms
        ];
        self.ex().insert_id(&INSERT, &args).await
    }

    async fn approval(&self, id: i64) -> Result<Option<ApprovalRow>, StoreError> {
        self.ex().fetch_optional(&ONE, &args![id]).await
    }

    async fn approvals(
        &self,
        job: Option<JobId>,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        let (job_id, by_job) = (job.map_or(0, |j| j.0), i32::from(job.is_some()));
        let args = args![job_id, by_job, i32::from(pending_only), i64::from(limit)];
        self.ex().fetch_all(&LIST, &args).await
    }

    async fn decide_approval(&self, id: i64, decision: Decision<'_>) -> Result<bool, StoreError> {
        debug_assert!(decision.status != ApprovalStatus::Pending, "a decision approves or refuses");
        let args = args![decision.status as i16, decision.by, decision.at_ms, decision.note, id];
        Ok(self.ex().execute(&DECIDE, &args).await? == 1)
    }
}
