//! The fire journal: the per-fire keys of exactly-once triggers this executor has taken, kept on
//! disk so that a key runs at most once here — across a resend by a recovering admin and across
//! this process's own SIGKILL (docs/engine.md, "The per-fire key").
//!
//! A trigger whose `deliveryMode` is `EXACTLY_ONCE` is *admitted* before it is queued: a key
//! seen before is not run again, and `/run` answers it with the first run's state — running (its
//! callback is on its way), ended (its result is sent again for the request's log id; the admin
//! keeps the first result it stored), or interrupted (a predecessor process took it and died:
//! it is failed, never re-run). A new key is appended to `{log-path}/callbacklogs/fires.journal`
//! and the file synced before the run is queued, so no crash can forget a run that started.
//! Ends are appended unsynced: a lost end reads as "interrupted" after a crash, and by then the
//! admin holds the real result, which the repeat guard keeps.
//!
//! Keys are kept for [`WINDOW`] (longer than any admin's recovery of an in-doubt fire); the file
//! is rewritten without older keys when the process starts.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a key is remembered.
pub(crate) const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

const FILE_NAME: &str = "fires.journal";

/// One line of the journal: a fire taken (`log` and `at` set) or ended (`code` set).
#[derive(Debug, Serialize, Deserialize)]
struct Line {
    #[serde(rename = "k")]
    key: String,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    log_id: Option<i64>,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    at_ms: Option<i64>,
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    code: Option<i32>,
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    msg: Option<String>,
}

impl Line {
    /// The line of a fire taken.
    fn taken(key: &str, log_id: i64, at_ms: i64) -> Self {
        Self { key: key.to_owned(), log_id: Some(log_id), at_ms: Some(at_ms), code: None, msg: None }
    }

    /// The line of a fire's end.
    fn ended(key: &str, code: i32, msg: &str) -> Self {
        Self { key: key.to_owned(), log_id: None, at_ms: None, code: Some(code), msg: Some(msg.to_owned()) }
    }
}

/// What the journal knows of one key.
#[derive(Debug, Clone)]
struct Fire {
    log_id: i64,
    at_ms: i64,
    ended: Option<(i32, String)>,
    /// Taken by this process (else by a predecessor, which may have died mid-run).
    ours: bool,
}

/// What `/run` does with an exactly-once trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Admission {
    /// A new key: run it.
    First,
    /// This process is running it (or has it queued): its callback is on its way.
    Running { log_id: i64 },
    /// It ran here and ended with this result.
    Ended { log_id: i64, code: i32, msg: String },
    /// A predecessor took it and died before its end was written: it is not run again.
    Interrupted { log_id: i64 },
}

/// The journal of one executor process.
#[derive(Debug)]
pub(crate) struct FireJournal {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    file: File,
    fires: HashMap<String, Fire>,
}

impl FireJournal {
    /// Opens the journal in `dir`, forgetting keys taken before `now_ms - WINDOW`, and rewrites
    /// it with the rest (durably).
    pub(crate) fn open(dir: &Path, now_ms: i64) -> std::io::Result<FireJournal> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(FILE_NAME);
        let oldest = now_ms - i64::try_from(WINDOW.as_millis()).unwrap_or(i64::MAX);
        let mut fires = read(&path)?;
        fires.retain(|_, fire| fire.at_ms >= oldest);
        let file = rewrite(&path, &fires)?;
        Ok(FireJournal { inner: Mutex::new(Inner { file, fires }) })
    }

    /// Admits `key` for `log_id` at `now_ms`: a new key is written and synced before this
    /// returns `First`; a known one is answered with what became of it.
    pub(crate) fn admit(&self, key: &str, log_id: i64, now_ms: i64) -> std::io::Result<Admission> {
        let mut inner = self.lock();
        if let Some(fire) = inner.fires.get(key) {
            return Ok(match (&fire.ended, fire.ours) {
                (Some((code, msg)), _) => {
                    Admission::Ended { log_id: fire.log_id, code: *code, msg: msg.clone() }
                }
                (None, true) => Admission::Running { log_id: fire.log_id },
                (None, false) => Admission::Interrupted { log_id: fire.log_id },
            });
        }
        append(&mut inner.file, &Line::taken(key, log_id, now_ms))?;
        inner.file.sync_data()?;
        inner.fires.insert(key.to_owned(), Fire { log_id, at_ms: now_ms, ended: None, ours: true });
        Ok(Admission::First)
    }

    /// Records how the run of `key` ended (not synced: see the module comment).
    pub(crate) fn ended(&self, key: &str, code: i32, msg: &str) {
        let mut inner = self.lock();
        if let Err(error) = append(&mut inner.file, &Line::ended(key, code, msg)) {
            tracing::warn!(key, %error, "cannot write a run's end to the fire journal");
        }
        if let Some(fire) = inner.fires.get_mut(key) {
            fire.ended = Some((code, msg.to_owned()));
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Each critical section leaves the map consistent with what was appended.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The keys in the file at `path` (none if it is missing). A torn last line — a crash in the
/// middle of an append — is skipped: its fire was never admitted.
fn read(path: &Path) -> std::io::Result<HashMap<String, Fire>> {
    let mut fires = HashMap::new();
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(fires),
        Err(e) => return Err(e),
    };
    for text in BufReader::new(file).lines() {
        let Ok(line) = serde_json::from_str::<Line>(&text?) else { continue };
        match (line.log_id, line.at_ms, line.code) {
            (Some(log_id), Some(at_ms), _) => {
                fires.insert(line.key, Fire { log_id, at_ms, ended: None, ours: false });
            }
            (_, _, Some(code)) => {
                if let Some(fire) = fires.get_mut(&line.key) {
                    fire.ended = Some((code, line.msg.unwrap_or_default()));
                }
            }
            _ => {}
        }
    }
    Ok(fires)
}

/// Writes `fires` to `path` through a synced temporary file and a rename; the file opened for
/// appending.
fn rewrite(path: &Path, fires: &HashMap<String, Fire>) -> std::io::Result<File> {
    let temp: PathBuf = path.with_extension("journal.tmp");
    {
        let mut file = File::create(&temp)?;
        for (key, fire) in fires {
            append(&mut file, &Line::taken(key, fire.log_id, fire.at_ms))?;
            if let Some((code, msg)) = &fire.ended {
                append(&mut file, &Line::ended(key, *code, msg))?;
            }
        }
        file.sync_all()?;
    }
    std::fs::rename(&temp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    OpenOptions::new().append(true).open(path)
}

/// The wall clock in epoch ms (the journal's window is in wall time: it must hold across
/// restarts).
pub(crate) fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn append(file: &mut File, line: &Line) -> std::io::Result<()> {
    let mut text = serde_json::to_string(line).map_err(std::io::Error::other)?;
    text.push('\n');
    file.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_900_000_000_000;

    #[test]
    fn a_key_runs_once_and_a_repeat_gets_the_first_runs_state() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let journal = FireJournal::open(dir.path(), NOW)?;
        assert_eq!(journal.admit("job:1@5000", 10, NOW)?, Admission::First);
        assert_eq!(journal.admit("job:1@5000", 11, NOW)?, Admission::Running { log_id: 10 });
        journal.ended("job:1@5000", 200, "done");
        assert_eq!(
            journal.admit("job:1@5000", 10, NOW)?,
            Admission::Ended { log_id: 10, code: 200, msg: "done".into() }
        );
        assert_eq!(journal.admit("job:1@6000", 12, NOW)?, Admission::First);
        Ok(())
    }

    #[test]
    fn a_new_process_remembers_ends_and_calls_what_never_ended_interrupted() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        {
            let journal = FireJournal::open(dir.path(), NOW)?;
            journal.admit("job:1@5000", 10, NOW)?;
            journal.admit("job:1@6000", 11, NOW)?;
            journal.ended("job:1@5000", 500, "failed");
        }
        // A crash in the middle of an append leaves a torn line.
        OpenOptions::new().append(true).open(dir.path().join(FILE_NAME))?.write_all(b"{\"k\":\"job:1@7")?;
        let journal = FireJournal::open(dir.path(), NOW + 1)?;
        assert_eq!(
            journal.admit("job:1@5000", 10, NOW)?,
            Admission::Ended { log_id: 10, code: 500, msg: "failed".into() }
        );
        assert_eq!(journal.admit("job:1@6000", 11, NOW)?, Admission::Interrupted { log_id: 11 });
        assert_eq!(
            journal.admit("job:1@7000", 12, NOW)?,
            Admission::First,
            "the torn line never admitted it"
        );
        Ok(())
    }

    #[test]
    fn keys_older_than_the_window_are_forgotten_at_start() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        FireJournal::open(dir.path(), NOW)?.admit("job:1@5000", 10, NOW)?;
        let later = NOW + i64::try_from(WINDOW.as_millis()).unwrap_or(0) + 1;
        let journal = FireJournal::open(dir.path(), later)?;
        assert_eq!(journal.admit("job:1@5000", 20, later)?, Admission::First);
        let lines = std::fs::read_to_string(dir.path().join(FILE_NAME))?.lines().count();
        assert_eq!(lines, 1, "the rewrite dropped the old key");
        Ok(())
    }
}
