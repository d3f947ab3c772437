//! The body of `PUT /api/v1/jobs/{id}/grant` (docs/api.md, "Wasm grants"): its checks, the grant
//! row it makes, and the changes between two rows in words for the grant's history. Kept apart
//! from the handler (`grants.rs`) because a change held for approval (`approvals.rs`) is stored
//! as this body and applied later by whoever approves it.

use std::collections::BTreeMap;

use jobwheel_protocol::net_policy::NetPolicy;
use serde::{Deserialize, Serialize};

use crate::http::ApiError;
use crate::store::JobGrantRow;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct JobGrantInput {
    #[serde(default)]
    pub(super) http_allow: Vec<String>,
    pub(super) http_max_requests: Option<i32>,
    pub(super) http_max_response_bytes: Option<i64>,
    pub(super) http_timeout_ms: Option<i64>,
    pub(super) fuel: Option<i64>,
    pub(super) memory_bytes: Option<i64>,
    /// Replaces the plain variables (secrets are set one by one).
    #[serde(default)]
    pub(super) variables: BTreeMap<String, String>,
    /// The executor group's variables and secrets the job uses, by name.
    #[serde(default)]
    pub(super) uses: Vec<String>,
    /// Record the job's runs for replay; on when left out.
    #[serde(default = "recording_on")]
    pub(super) record_runs: bool,
    /// The cap of a run's flight record, bytes.
    pub(super) journal_max_bytes: Option<i64>,
}

fn recording_on() -> bool {
    true
}

impl JobGrantInput {
    /// The grant row this body asks for, or a 400 naming what is wrong with it.
    pub(super) fn checked_row(&self) -> Result<JobGrantRow, ApiError> {
        NetPolicy::parse(&self.http_allow).map_err(|error| ApiError::BadRequest(error.to_string()))?;
        for (name, value) in [
            ("httpMaxRequests", self.http_max_requests.map(i64::from)),
            ("httpMaxResponseBytes", self.http_max_response_bytes),
            ("httpTimeoutMs", self.http_timeout_ms),
            ("fuel", self.fuel),
            ("memoryBytes", self.memory_bytes),
        ] {
            if value.is_some_and(|v| v < 1) {
                return Err(ApiError::BadRequest(format!(
                    "{name} must be at least 1, or left out for the executor's default"
                )));
            }
        }
        if let Some(cap) = self.journal_max_bytes {
            use jobwheel_protocol::flight::{MAX_JOURNAL_BYTES, MIN_JOURNAL_BYTES};
            if !(MIN_JOURNAL_BYTES..=MAX_JOURNAL_BYTES).contains(&u64::try_from(cap).unwrap_or(0)) {
                return Err(ApiError::BadRequest(format!(
                    "journalMaxBytes must be between {MIN_JOURNAL_BYTES} and {MAX_JOURNAL_BYTES}, or left out for the default ({})",
                    jobwheel_protocol::flight::DEFAULT_JOURNAL_BYTES
                )));
            }
        }
        let mut uses: Vec<String> =
            self.uses.iter().map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()).collect();
        uses.sort();
        uses.dedup();
        for name in &uses {
            super::grants::check_name(name)?;
        }
        Ok(JobGrantRow {
            http_allow: self
                .http_allow
                .iter()
                .map(|e| e.trim())
                .filter(|e| !e.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            http_max_requests: self.http_max_requests,
            http_max_response_bytes: self.http_max_response_bytes,
            http_timeout_ms: self.http_timeout_ms,
            fuel: self.fuel,
            memory_bytes: self.memory_bytes,
            uses: (!uses.is_empty()).then(|| uses.join("\n")),
            record_runs: Some(i16::from(self.record_runs)),
            journal_max_bytes: self.journal_max_bytes,
        })
    }
}

/// What changes from `before` to `row`, in words (the variables are compared where they are
/// replaced).
pub(super) fn changes(before: &JobGrantRow, row: &JobGrantRow) -> Vec<String> {
    let mut changes = Vec::new();
    if before.uses != row.uses {
        let shown = |uses: &Option<String>| uses.as_deref().unwrap_or_default().replace('\n', ", ");
        changes.push(format!(
            "group variables and secrets used: [{}] → [{}]",
            shown(&before.uses),
            shown(&row.uses)
        ));
    }
    if before.http_allow != row.http_allow {
        changes.push(format!(
            "network policy: [{}] → [{}]",
            before.http_allow.replace('\n', ", "),
            row.http_allow.replace('\n', ", ")
        ));
    }
    let limits = |g: &JobGrantRow| {
        (g.http_max_requests, g.http_max_response_bytes, g.http_timeout_ms, g.fuel, g.memory_bytes)
    };
    if limits(before) != limits(row) {
        changes.push(format!(
            "limits: requests {:?}, response bytes {:?}, timeout ms {:?}, fuel {:?}, memory bytes {:?}",
            row.http_max_requests,
            row.http_max_response_bytes,
            row.http_timeout_ms,
            row.fuel,
            row.memory_bytes
        ));
    }
    if (before.records_runs(), before.journal_max_bytes) != (row.records_runs(), row.journal_max_bytes) {
        changes.push(format!(
            "recording for replay: {}, journal cap {}",
            if row.records_runs() { "on" } else { "off" },
            row.journal_max_bytes.map_or("default".to_owned(), |cap| format!("{cap} bytes"))
        ));
    }
    changes
}
