//! Row and input types of the audit log (`jobwheel_audit`, jobwheel's own table).

use super::UserId;

/// One management change to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAudit {
    /// Epoch ms.
    pub at_ms: i64,
    /// Who, if the caller was authenticated (a failed login has only a name).
    pub user_id: Option<UserId>,
    pub username: String,
    /// The client's address (behind a trusted proxy: the address it forwarded).
    pub client: String,
    /// What was done, e.g. `job.update`, `wasm.upload`, `session.login`.
    pub action: String,
    /// What it was done to, e.g. `job 12`, `group 3`, `user 5`; empty when nothing in particular.
    pub target: String,
    /// The request's own words where the resource does not say it (a trigger's parameter, a
    /// clear's filter), as JSON.
    pub detail: Option<String>,
    /// The resource before and after, as JSON; secret values never appear.
    pub before_json: Option<String>,
    pub after_json: Option<String>,
}

/// A recorded change.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AuditRow {
    pub id: i64,
    pub at_ms: i64,
    pub user_id: Option<i32>,
    pub username: String,
    pub client: String,
    pub action: String,
    pub target: String,
    pub detail: Option<String>,
    pub before_json: Option<String>,
    pub after_json: Option<String>,
}

/// Filters of the audit list; `None` means "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// `username =`.
    pub username: Option<String>,
    /// `action LIKE …%` (`job.` matches every job action).
    pub action_prefix: Option<String>,
    /// `target =` (`job 12`).
    pub target: Option<String>,
    /// `at_ms >=`.
    pub from_ms: Option<i64>,
    /// `at_ms <`.
    pub to_ms: Option<i64>,
}
