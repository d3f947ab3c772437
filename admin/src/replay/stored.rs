//! Flight records at rest: the record's JSON, deflated, then sealed with the admin's secret key
//! under the log's id ([`SecretBox::seal_flight`]) — journals hold response bodies, headers and
//! variables. What stays readable beside the body is what the log page needs without opening
//! it: the module, whether the run can be replayed and why not, the record's size.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use jobwheel_protocol::HandleCallbackParam;
use jobwheel_protocol::flight::{MAX_JOURNAL_BYTES, RecordView};

use crate::sealing::SecretBox;
use crate::store::{FlightRow, LogId, LogOwner};

/// The rows to store for the records among `items`, filed under their logs' `owners` (a record
/// of a log that is not there is dropped, as its result is).
pub(crate) fn flight_rows(
    items: &[HandleCallbackParam],
    owners: &[LogOwner],
    seal: &SecretBox,
) -> Vec<FlightRow> {
    let owners: HashMap<LogId, &LogOwner> = owners.iter().map(|o| (o.log_id, o)).collect();
    items
        .iter()
        .filter_map(|item| {
            let record = item.flight.as_deref()?;
            let owner = owners.get(&LogId(item.log_id))?;
            Some(row(owner, record, seal))
        })
        .collect()
}

fn row(owner: &LogOwner, record: &str, seal: &SecretBox) -> FlightRow {
    let (module, replayable, reason) = if record.len() as u64 > MAX_JOURNAL_BYTES {
        (
            String::new(),
            false,
            Some(format!("the record is {} bytes, over the limit of {MAX_JOURNAL_BYTES}", record.len())),
        )
    } else {
        match serde_json::from_str::<RecordView>(record) {
            Ok(parsed) => {
                let why = parsed.journal.not_replayable;
                (parsed.module.chars().take(64).collect(), why.is_none(), why)
            }
            Err(e) => (String::new(), false, Some(format!("the executor's record cannot be read: {e}"))),
        }
    };
    // Past the limit only the reason is kept: an executor must not fill the database.
    let kept = if record.len() as u64 > MAX_JOURNAL_BYTES { "" } else { record };
    let deflated = deflate(kept);
    FlightRow {
        log_id: owner.log_id,
        module,
        replayable,
        reason,
        record_bytes: i32::try_from(record.len()).unwrap_or(i32::MAX),
        body: seal.seal_flight(owner.log_id.0, &deflated),
    }
}

/// The record `row` holds, opened and inflated: what the admin reads of it, and its JSON.
pub(crate) fn open_record(row: &FlightRow, seal: &SecretBox) -> Result<(RecordView, String), String> {
    let deflated = seal.open_flight(row.log_id.0, &row.body).map_err(|_| {
        "the run's record does not open with this admin's secret key (it was sealed under another key)"
            .to_owned()
    })?;
    let mut json = String::new();
    inflate(row, &deflated, &mut json).map_err(|e| format!("the run's record cannot be inflated: {e}"))?;
    let view = serde_json::from_str(&json).map_err(|e| format!("the run's record cannot be read: {e}"))?;
    Ok((view, json))
}

/// A record's JSON as it is stored before sealing: deflated.
pub(super) fn deflate(json: &str) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(json.len() / 3), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(json.as_bytes());
    encoder.finish().unwrap_or_default()
}

/// Inflates `row`'s opened body into `json`, reading no more than the record's size (and the
/// 2 MiB limit): what inflated stays in `json` when it stops with an error.
pub(super) fn inflate(row: &FlightRow, deflated: &[u8], json: &mut String) -> std::io::Result<usize> {
    let limit = u64::try_from(row.record_bytes).unwrap_or(0).min(MAX_JOURNAL_BYTES);
    DeflateDecoder::new(deflated).take(limit).read_to_string(json)
}
