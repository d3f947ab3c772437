//! Job log files: `{log-path}/{yyyy-MM-dd}/{logId}.log`, one per run (upstream `XxlJobFileAppender`).
//!
//! The date directory is the executor's local date of the trigger's `logDateTime`; admin and
//! executor agree on the file because both pass the same epoch milliseconds and only the
//! executor formats it. Writes are bounded per run so a runaway job cannot fill the disk.

mod cleaner;
mod read;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{Local, TimeZone};

pub(crate) use cleaner::spawn_cleaner;
pub(crate) use read::read_log;

/// The log directory layout rooted at `--log-path`.
#[derive(Debug, Clone)]
pub(crate) struct LogDir {
    root: PathBuf,
}

impl LogDir {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Where script GLUE source files are written.
    pub(crate) fn glue_source_dir(&self) -> PathBuf {
        self.root.join("gluesource")
    }

    /// Where undeliverable callbacks are spooled.
    pub(crate) fn callback_spool_dir(&self) -> PathBuf {
        self.root.join("callbacklogs")
    }

    /// `{root}/{yyyy-MM-dd}/{log_id}.log`, the date in the executor's local time zone.
    pub(crate) fn file_for(&self, log_date_time: i64, log_id: i64) -> PathBuf {
        let day = Local
            .timestamp_millis_opt(log_date_time)
            .earliest()
            .map_or_else(|| "1970-01-01".to_owned(), |t| t.format("%Y-%m-%d").to_string());
        self.root.join(day).join(format!("{log_id}.log"))
    }
}

/// The writer of one run's job log. Clones share the file and the size budget.
#[derive(Clone)]
pub(crate) struct JobLog {
    inner: Arc<Mutex<Writer>>,
}

struct Writer {
    file: Option<File>,
    path: PathBuf,
    source: String,
    written: u64,
    limit: u64,
    truncated: bool,
}

impl JobLog {
    /// Opens (creating directories as needed) the log file for appending. If the file cannot be
    /// opened the run still proceeds; its lines go to the executor's own log instead.
    pub(crate) fn open(path: PathBuf, source: String, limit: u64) -> Self {
        let file = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&path));
        let (file, written) = match file {
            Ok(f) => {
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                (Some(f), len)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot open job log file");
                (None, 0)
            }
        };
        let writer = Writer { file, path, source, written, limit, truncated: false };
        Self { inner: Arc::new(Mutex::new(writer)) }
    }

    /// Appends `yyyy-MM-dd HH:mm:ss [source] message`.
    pub(crate) fn line(&self, message: &str) {
        let mut w = self.lock();
        let stamp = Local::now().format("%Y-%m-%d %H:%M:%S");
        let text = format!("{stamp} [{}] {message}\n", w.source);
        w.write(&text);
    }

    /// Appends `text` as is, adding a final newline if it lacks one.
    pub(crate) fn raw(&self, text: &str) {
        let mut w = self.lock();
        if text.ends_with('\n') {
            w.write(text);
        } else {
            w.write(&format!("{text}\n"));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Writer> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Writer {
    fn write(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        let len = text.len() as u64;
        if self.written.saturating_add(len) > self.limit {
            self.truncated = true;
            let note = format!(
                "[jobwheel] job log truncated: this run's log reached its limit of {} bytes; \
                 further output is discarded\n",
                self.limit
            );
            self.write_unchecked(&note);
            return;
        }
        self.write_unchecked(text);
    }

    fn write_unchecked(&mut self, text: &str) {
        self.written = self.written.saturating_add(text.len() as u64);
        let Some(file) = self.file.as_mut() else {
            tracing::info!(target: "jobwheel::joblog", path = %self.path.display(), "{}", text.trim_end());
            return;
        };
        if let Err(e) = file.write_all(text.as_bytes()) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot write job log");
        }
    }
}

/// Appends one timestamped line to an existing run's log (used after the run, e.g. for the
/// callback outcome). A missing file is created, as upstream does.
pub(crate) fn append_line(path: &Path, message: &str) {
    JobLog::open(path.to_path_buf(), "callback".to_owned(), u64::MAX).line(message);
}
