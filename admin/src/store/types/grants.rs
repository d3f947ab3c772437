//! Row and input types of Wasm job grants (jobwheel's own tables): a job's network policy and
//! limits, variables and secrets of groups and jobs, and the history of their changes.

use super::{GroupId, JobId};

/// A job's network policy and per-job limits (`jobwheel_job_grant`).
#[derive(Debug, Clone, PartialEq, Eq, Default, sqlx::FromRow)]
pub struct JobGrantRow {
    /// Policy entries, one per line (syntax: `jobwheel_protocol::net_policy`).
    pub http_allow: String,
    /// Requests per run; `None` = the executor's default.
    pub http_max_requests: Option<i32>,
    /// Response bytes per run.
    pub http_max_response_bytes: Option<i64>,
    /// Cap on each wait of one request, ms.
    pub http_timeout_ms: Option<i64>,
    /// Fuel budget of a run.
    pub fuel: Option<i64>,
    /// Memory limit of a run, bytes.
    pub memory_bytes: Option<i64>,
    /// The executor-group variables and secrets the job uses, one name per line; the others
    /// are not sent with its triggers.
    pub uses: Option<String>,
    /// 0: the job's runs are not recorded (docs/replay.md); `None` or 1: they are.
    pub record_runs: Option<i16>,
    /// The cap of a run's flight record, bytes; `None` = the default.
    pub journal_max_bytes: Option<i64>,
}

impl JobGrantRow {
    /// Whether the job's runs are recorded (on unless switched off).
    pub fn records_runs(&self) -> bool {
        self.record_runs != Some(0)
    }

    /// The names in [`Self::uses`].
    pub fn used_names(&self) -> std::collections::BTreeSet<&str> {
        self.uses.as_deref().unwrap_or_default().lines().map(str::trim).filter(|n| !n.is_empty()).collect()
    }
}

/// Whose variable: an executor group's (shared by its jobs) or one job's (wins over the group's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VariableOwner {
    /// An executor group.
    Group(GroupId),
    /// A job.
    Job(JobId),
}

impl VariableOwner {
    /// `(group_id, job_id)` as stored: 0 for the side that does not own it.
    pub fn columns(self) -> (i32, i32) {
        match self {
            VariableOwner::Group(group) => (group.0, 0),
            VariableOwner::Job(job) => (0, job.0),
        }
    }
}

/// A value sealed with the admin's secret key, as [`GrantStore::reseal_all`](crate::store::GrantStore::reseal_all)
/// hands it to the caller: a secret variable's or a group's access token.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedValue {
    /// The variable's owner; the group, for a group token.
    pub owner: VariableOwner,
    /// The variable's name; `None` for a group token.
    pub name: Option<String>,
    /// The sealed text.
    pub sealed: String,
    /// `Some(name)`: the URL and key of the alarm channel `name`, sealed under its name
    /// (`SecretBox::seal_channel`; `owner` and `name` are unused then).
    pub channel: Option<String>,
}

// The sealed text stays out of logs (it is ciphertext, but nobody needs to see it).
impl std::fmt::Debug for SealedValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedValue")
            .field("owner", &self.owner)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A stored variable or secret. For a secret, `value` is ciphertext (see `crate::sealing`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct VariableRow {
    /// 0 for a job's variable.
    pub group_id: i32,
    /// 0 for a group's variable.
    pub job_id: i32,
    /// Environment variable name.
    pub name: String,
    /// 1 for a secret.
    pub secret: i16,
    /// Plain value, or a secret's sealed value.
    pub value: String,
    /// Epoch ms of the last change.
    pub update_ms: i64,
}

/// One entry of a group's or job's grant history (never a secret value).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct GrantHistoryRow {
    /// Primary key.
    pub id: i64,
    /// Who changed it.
    pub author: String,
    /// What changed, in words.
    pub change_text: String,
    /// Epoch ms.
    pub add_ms: i64,
}
