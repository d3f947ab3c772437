//! The files behind result callbacks, in `{log-path}/callbacklogs/`: each a JSON array of
//! results, written durably (temp file, fsync, rename, fsync of the directory).
//!
//! - `jobwheel-journal-{md5}.log`: a batch on its first trip to the admin. It is written before
//!   the batch is sent and deleted once an admin stored it, so a SIGKILL while the batch is on
//!   its way leaves it on disk.
//! - `xxl-job-callback-{md5}.log` (upstream's spool name): a batch no admin has stored yet; the
//!   retry task resends these and deletes each once an admin stored it.
//!
//! At start, journal files left by a previous process become spool files: their batches may or
//! may not have been stored, and the admin ignores a result it already has.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use jobwheel_protocol::HandleCallbackParam;
use md5::{Digest as _, Md5};

const JOURNAL_PREFIX: &str = "jobwheel-journal-";
const SPOOL_PREFIX: &str = "xxl-job-callback-";
const SUFFIX: &str = ".log";

/// Writes `batch` as a journal file before its first send; its path.
pub(crate) fn write_journal(dir: &Path, batch: &[HandleCallbackParam]) -> std::io::Result<PathBuf> {
    write_durably(dir, JOURNAL_PREFIX, batch)
}

/// Writes `batch` as a spool file for the retry task; its path.
pub(crate) fn write_spool(dir: &Path, batch: &[HandleCallbackParam]) -> std::io::Result<PathBuf> {
    write_durably(dir, SPOOL_PREFIX, batch)
}

/// Turns a journal file whose send failed into a spool file for the retry task.
pub(crate) fn journal_to_spool(journal: &Path) -> std::io::Result<PathBuf> {
    let name = journal.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let spooled = journal.with_file_name(name.replacen(JOURNAL_PREFIX, SPOOL_PREFIX, 1));
    std::fs::rename(journal, &spooled)?;
    sync_dir(journal.parent().unwrap_or(Path::new(".")));
    Ok(spooled)
}

/// At start: every journal file of a previous process becomes a spool file. How many.
pub(crate) fn recover_journal(dir: &Path) -> usize {
    let mut recovered = 0;
    for journal in files_with_prefix(dir, JOURNAL_PREFIX) {
        match journal_to_spool(&journal) {
            Ok(_) => recovered += 1,
            Err(e) => {
                tracing::error!(file = %journal.display(), error = %e, "cannot recover a callback journal file")
            }
        }
    }
    recovered
}

/// Spool files, oldest name first.
pub(crate) fn list_spool(dir: &Path) -> Vec<PathBuf> {
    files_with_prefix(dir, SPOOL_PREFIX)
}

/// The log ids of every result in the spool files (at start, before the retry task runs).
/// Unreadable files are skipped here; the retry task reports them.
pub(crate) fn spooled_log_ids(dir: &Path) -> Vec<i64> {
    let mut ids = Vec::new();
    for file in list_spool(dir) {
        let Ok(bytes) = std::fs::read(&file) else { continue };
        if let Ok(batch) = serde_json::from_slice::<Vec<HandleCallbackParam>>(&bytes) {
            ids.extend(batch.iter().map(|item| item.log_id));
        }
    }
    ids
}

pub(crate) async fn read_spool(path: &Path) -> anyhow::Result<Vec<HandleCallbackParam>> {
    let bytes = tokio::fs::read(path).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Vec::new());
    }
    Ok(serde_json::from_slice(&bytes)?)
}

/// `{dir}/{prefix}{md5 of the json}.log`, durably.
fn write_durably(dir: &Path, prefix: &str, batch: &[HandleCallbackParam]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec(batch).map_err(std::io::Error::other)?;
    let digest = hex::encode(Md5::digest(&json));
    let path = dir.join(format!("{prefix}{digest}{SUFFIX}"));
    let tmp = dir.join(format!(".{prefix}{digest}.tmp"));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(&json)?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    sync_dir(dir);
    Ok(path)
}

/// Makes a rename in `dir` itself durable.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

fn files_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(SUFFIX))
        })
        .collect();
    files.sort();
    files
}
