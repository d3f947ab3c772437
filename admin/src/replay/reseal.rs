//! Flight records under a rotated secret key (`jobwheel-admin secrets rotate-key`,
//! `secret_key.rs`): each record is opened with the old key and sealed with the new one, and the
//! digests it holds of the secrets its run used — keyed per job by a key derived from the admin's
//! key — are computed again under the new one, so a run recorded before the rotation still
//! replays after it. A digest is carried over only when the secret's current value still matches
//! it under the old key; one whose secret changed since stays as it was (its replay would be
//! refused either way).
//!
//! Page by page, each page in one transaction, and idempotent: a record that already opens with
//! the new key is left alone, so a rotation interrupted here is finished by running it again.

use std::collections::{BTreeMap, HashMap};

use jobwheel_protocol::flight::{RecordView, secret_digest};

use super::stored::{deflate, inflate};

use crate::sealing::SecretBox;
use crate::store::{FlightRow, JobId, LogId, Store, StoreError, VariableOwner};

/// Records read and written per transaction.
const PAGE: u32 = 200;

/// What a pass over the records did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resealed {
    /// Sealed anew under the new key.
    pub resealed: u64,
    /// Already under the new key (an interrupted rotation run again).
    pub already: u64,
    /// Opened by neither key: left as they are (they did not open before the rotation either).
    pub unopened: u64,
}

/// Re-seals every flight record sealed with `old` under `new`. The stored secrets are already
/// under `new` when this runs (they are re-sealed first, in one transaction).
pub async fn reseal_flights(
    store: &dyn Store,
    old: &SecretBox,
    new: &SecretBox,
) -> Result<Resealed, StoreError> {
    let mut done = Resealed::default();
    let mut secrets: HashMap<JobId, BTreeMap<String, String>> = HashMap::new();
    let mut after = LogId(0);
    loop {
        let page = store.flight_page(after, PAGE).await?;
        let Some((last, _)) = page.last() else { break };
        after = last.log_id;
        let mut bodies = Vec::with_capacity(page.len());
        for (row, job) in &page {
            if new.open_flight(row.log_id.0, &row.body).is_ok() {
                done.already += 1;
                continue;
            }
            let Ok(deflated) = old.open_flight(row.log_id.0, &row.body) else {
                done.unopened += 1;
                continue;
            };
            if !secrets.contains_key(job) {
                let opened = job_secrets(store, new, *job).await?;
                secrets.insert(*job, opened);
            }
            let known = secrets.get(job).cloned().unwrap_or_default();
            let json = redigested(&inflated(row, &deflated), old, new, *job, &known);
            bodies.push((row.log_id, new.seal_flight(row.log_id.0, &deflate(&json))));
            done.resealed += 1;
        }
        store.replace_flight_bodies(&bodies).await?;
    }
    Ok(done)
}

/// The record's JSON (empty for a record past the limit, which keeps only its reason).
fn inflated(row: &FlightRow, deflated: &[u8]) -> String {
    let mut json = String::new();
    // A body that does not inflate is kept as what inflated of it: it did not replay before.
    let _ = inflate(row, deflated, &mut json);
    json
}

/// `json` with each secret digest that matches the secret's current value under `old`'s key for
/// `job` replaced by the digest under `new`'s. A digest is 64 hex digits, so replacing its text
/// touches nothing else of the record.
fn redigested(
    json: &str,
    old: &SecretBox,
    new: &SecretBox,
    job: JobId,
    known: &BTreeMap<String, String>,
) -> String {
    let Ok(view) = serde_json::from_str::<RecordView>(json) else { return json.to_owned() };
    let (old_key, new_key) = (old.journal_digest_key(job), new.journal_digest_key(job));
    let mut json = json.to_owned();
    for (name, digest) in view.secrets() {
        if let Some(value) = known.get(name)
            && secret_digest(&old_key, value) == digest
        {
            json = json.replace(digest, &secret_digest(&new_key, value));
        }
    }
    json
}

/// The secrets a run of `job` gets, by name (the job's replace its group's), opened with `key`.
async fn job_secrets(
    store: &dyn Store,
    key: &SecretBox,
    job: JobId,
) -> Result<BTreeMap<String, String>, StoreError> {
    let Some(row) = store.load_job(job).await? else { return Ok(BTreeMap::new()) };
    let group = row.job.job_group;
    let mut rows = store.trigger_variables(group.0, job).await?;
    rows.sort_by_key(|v| v.job_id != 0);
    let mut secrets = BTreeMap::new();
    for variable in rows.into_iter().filter(|v| v.secret != 0) {
        let owner = if variable.job_id != 0 { VariableOwner::Job(job) } else { VariableOwner::Group(group) };
        if let Ok(value) = key.open(owner, &variable.name, &variable.value) {
            secrets.insert(variable.name, value);
        }
    }
    Ok(secrets)
}
