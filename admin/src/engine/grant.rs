//! The `wasmGrant` of a GLUE_WASM job's trigger: its network policy and limits, its own
//! variables and those of its executor group it names in `uses` (the job's win), and its
//! secrets (same rule) opened with the admin's key; and whether to record the run for replay
//! (docs/replay.md: on unless the job switched it off, when the admin has a secret key to seal
//! records with). Built per trigger, so a change applies to the next run without touching the
//! job's GLUE version.

use std::collections::{BTreeMap, BTreeSet};

use jobwheel_protocol::WasmGrant;
use jobwheel_protocol::flight::{DEFAULT_JOURNAL_BYTES, FlightGrant, MAX_JOURNAL_BYTES, MIN_JOURNAL_BYTES};

use super::EngineError;
use crate::sealing::SecretBox;
use crate::store::{JobGrantRow, JobRow, Store, VariableOwner};

/// The job's grant; `Ok(Err(reason))` when it cannot be built (a secret that does not
/// open), which fails the trigger with `reason`.
pub(super) async fn wasm_grant(
    store: &dyn Store,
    secret_box: Option<&SecretBox>,
    job: &JobRow,
) -> Result<Result<Option<WasmGrant>, String>, EngineError> {
    let row = store.load_job_grant(job.id).await?;
    let variables = store.trigger_variables(job.job.job_group.0, job.id).await?;
    // A group's variables and secrets go only to the jobs that name them (review M7): an
    // administrator's group secret must not reach every module a group member uploads.
    let uses: BTreeSet<String> =
        row.as_ref().map(|r| r.used_names().into_iter().map(str::to_owned).collect()).unwrap_or_default();
    let variables: Vec<_> =
        variables.into_iter().filter(|v| v.job_id != 0 || uses.contains(&v.name)).collect();
    let flight =
        secret_box.filter(|_| row.as_ref().is_none_or(JobGrantRow::records_runs)).map(|secret_box| {
            let cap = row.as_ref().and_then(|r| r.journal_max_bytes).and_then(|n| u64::try_from(n).ok());
            FlightGrant {
                digest_key: hex::encode(secret_box.journal_digest_key(job.id)),
                max_bytes: cap.unwrap_or(DEFAULT_JOURNAL_BYTES).clamp(MIN_JOURNAL_BYTES, MAX_JOURNAL_BYTES),
            }
        });
    if row.is_none() && variables.is_empty() && flight.is_none() {
        return Ok(Ok(None));
    }
    let mut grant = WasmGrant { flight, ..WasmGrant::default() };
    if let Some(row) = row {
        grant.http_allow =
            row.http_allow.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect();
        grant.http_max_requests = row.http_max_requests.and_then(|n| u32::try_from(n).ok());
        grant.http_max_response_bytes = row.http_max_response_bytes.and_then(|n| u64::try_from(n).ok());
        grant.http_timeout_ms = row.http_timeout_ms.and_then(|n| u64::try_from(n).ok());
        grant.fuel = row.fuel.and_then(|n| u64::try_from(n).ok());
        grant.memory_bytes = row.memory_bytes.and_then(|n| u64::try_from(n).ok());
    }
    // Group rows first, job rows second: a job's variable replaces its group's of the same
    // name, whichever kind either is.
    let (mut vars, mut secrets) = (BTreeMap::new(), BTreeMap::new());
    let mut ordered = variables;
    ordered.sort_by_key(|v| (v.job_id != 0, v.name.clone()));
    for variable in ordered {
        let owner = if variable.job_id != 0 {
            VariableOwner::Job(job.id)
        } else {
            VariableOwner::Group(crate::store::GroupId(variable.group_id))
        };
        vars.remove(&variable.name);
        secrets.remove(&variable.name);
        if variable.secret == 0 {
            vars.insert(variable.name, variable.value);
            continue;
        }
        let Some(secret_box) = secret_box else {
            return Ok(Err(format!(
                "the job's secret {} cannot be opened: this admin has no secret key",
                variable.name
            )));
        };
        match secret_box.open(owner, &variable.name, &variable.value) {
            Ok(value) => {
                secrets.insert(variable.name, value);
            }
            Err(error) => return Ok(Err(format!("the secret {}: {error}", variable.name))),
        }
    }
    grant.vars = vars;
    grant.secrets = secrets;
    Ok(Ok(Some(grant)))
}
