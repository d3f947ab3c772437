//! The store's approvals (`jobwheel_approval`, migration 0042; docs/replay.md, "Capabilities
//! and approval"): module versions and grant changes that widen what a job may reach, held until
//! an administrator decides. Deciding is a guarded update, so of two administrators (or two
//! admins) deciding at once, one decides.

use async_trait::async_trait;

use super::{JobId, StoreError};

/// What an approval holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKind {
    /// A module version, stored as a candidate until approved.
    Module,
    /// A change of the job's grant, kept as its request body.
    Grant,
}

impl ApprovalKind {
    /// The stored (and shown) name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalKind::Module => "module",
            ApprovalKind::Grant => "grant",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "module" => Some(ApprovalKind::Module),
            "grant" => Some(ApprovalKind::Grant),
            _ => None,
        }
    }
}

/// An approval's state, stored as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalStatus {
    Pending = 0,
    Approved = 1,
    Refused = 2,
}

impl ApprovalStatus {
    /// The status of a stored code; unknown codes read as refused (nothing runs on them).
    pub fn from_code(code: i16) -> Self {
        match code {
            0 => ApprovalStatus::Pending,
            1 => ApprovalStatus::Approved,
            _ => ApprovalStatus::Refused,
        }
    }

    /// The shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Refused => "refused",
        }
    }
}

/// A request to hold.
#[derive(Debug, Clone)]
pub struct NewApproval {
    pub job_id: JobId,
    pub kind: ApprovalKind,
    /// The candidate version holding the module (module approvals).
    pub version_id: Option<i64>,
    /// The module's digest (module approvals): kept here too, as old versions are trimmed.
    pub digest: Option<String>,
    /// The grant request's JSON body (grant approvals).
    pub grant_body: Option<String>,
    /// What is new, as a JSON array of sentences.
    pub widening: String,
    pub requested_by: String,
    pub requested_ms: i64,
}

/// A stored approval.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ApprovalRow {
    pub id: i64,
    pub job_id: JobId,
    pub kind: String,
    pub version_id: Option<i64>,
    pub digest: Option<String>,
    pub grant_body: Option<String>,
    pub widening: String,
    pub requested_by: String,
    pub requested_ms: i64,
    pub status: i16,
    pub decided_by: Option<String>,
    pub decided_ms: i64,
    pub note: Option<String>,
}

/// A decision on a pending approval.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'a> {
    pub status: ApprovalStatus,
    pub by: &'a str,
    pub at_ms: i64,
    pub note: Option<&'a str>,
}

/// `jobwheel_approval`.
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Holds a request; its id.
    async fn add_approval(&self, new: &NewApproval) -> Result<i64, StoreError>;
    /// One approval.
    async fn approval(&self, id: i64) -> Result<Option<ApprovalRow>, StoreError>;
    /// Approvals newest first: of one job when given, pending only when asked, at most `limit`.
    async fn approvals(
        &self,
        job: Option<JobId>,
        pending_only: bool,
        limit: u32,
    ) -> Result<Vec<ApprovalRow>, StoreError>;
    /// Decides a pending approval; false when it was not pending (decided meanwhile).
    async fn decide_approval(&self, id: i64, decision: Decision<'_>) -> Result<bool, StoreError>;
}
