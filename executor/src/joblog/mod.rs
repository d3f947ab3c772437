//! Job logs: files `{log-path}/{yyyy-MM-dd}/{logId}.log`, one per run (upstream
//! `XxlJobFileAppender`), and/or lines shipped to the admins (`ship.rs`, `--job-logs`).
//!
//! The date directory is the executor's local date of the trigger's `logDateTime`; admin and
//! executor agree on the file because both pass the same epoch milliseconds and only the
//! executor formats it. Writes are bounded per run so a runaway job cannot fill the disk.

mod cleaner;
mod read;
mod ship;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{Local, TimeZone};

pub(crate) use cleaner::spawn_cleaner;
pub(crate) use read::read_log;
pub(crate) use ship::LogShipper;

/// The job logs rooted at `--log-path`, and the shipper when lines go to the admins.
#[derive(Clone)]
pub(crate) struct LogDir {
    root: PathBuf,
    files: bool,
    shipper: Option<Arc<LogShipper>>,
}

impl std::fmt::Debug for LogDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogDir")
            .field("root", &self.root)
            .field("files", &self.files)
            .field("ships", &self.shipper.is_some())
            .finish()
    }
}

impl LogDir {
    /// Files only (upstream's job logs).
    pub(crate) fn new(root: PathBuf) -> Self {
        Self { root, files: true, shipper: None }
    }

    /// Lines also (or only) shipped by `shipper`.
    pub(crate) fn shipping(root: PathBuf, files: bool, shipper: Arc<LogShipper>) -> Self {
        Self { root, files, shipper: Some(shipper) }
    }

    /// Whether runs write log files here (`/log` reads them).
    pub(crate) fn has_files(&self) -> bool {
        self.files
    }

    /// The writer of run `log_id`'s log, writing as `source`, at most `limit` bytes.
    pub(crate) fn open(&self, log_date_time: i64, log_id: i64, source: String, limit: u64) -> JobLog {
        let path = self.files.then(|| self.file_for(log_date_time, log_id));
        let ship = self.shipper.clone().map(|shipper| Shipped { shipper, log_id, log_date_time });
        JobLog::open(path, ship, source, limit)
    }

    /// Appends one timestamped line to an existing run's log (after the run, e.g. for the
    /// callback outcome). A missing file is created, as upstream does.
    pub(crate) fn append(&self, log_date_time: i64, log_id: i64, message: &str) {
        self.open(log_date_time, log_id, "callback".to_owned(), u64::MAX).line(message);
    }

    /// Whether lines are shipped to the admins (`--job-logs both|admin`).
    pub(crate) fn ships(&self) -> bool {
        self.shipper.is_some()
    }

    /// Sends the lines written so far to the admins now, when they are shipped.
    pub(crate) async fn flush(&self) {
        if let Some(shipper) = &self.shipper {
            shipper.flush().await;
        }
    }

    /// Nothing more will be written to run `log_id`'s log: the admin's rolling log may end.
    pub(crate) fn close(&self, log_date_time: i64, log_id: i64) {
        if let Some(shipper) = &self.shipper {
            shipper.push(log_id, log_date_time, "", true);
        }
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

/// Where a shipped log's lines go.
struct Shipped {
    shipper: Arc<LogShipper>,
    log_id: i64,
    log_date_time: i64,
}

struct Writer {
    file: Option<File>,
    /// `None` when runs write no files (`--job-logs admin`).
    path: Option<PathBuf>,
    ship: Option<Shipped>,
    source: String,
    written: u64,
    limit: u64,
    truncated: bool,
}

impl JobLog {
    /// Opens (creating directories as needed) the log file for appending, when there is one.
    /// If the file cannot be opened the run still proceeds; its lines go to the executor's own
    /// log instead (and to the admins when shipped).
    fn open(path: Option<PathBuf>, ship: Option<Shipped>, source: String, limit: u64) -> Self {
        let (file, written) = match &path {
            None => (None, 0),
            Some(path) => match path
                .parent()
                .map_or(Ok(()), fs::create_dir_all)
                .and_then(|()| OpenOptions::new().create(true).append(true).open(path))
            {
                Ok(f) => {
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    (Some(f), len)
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "cannot open job log file");
                    (None, 0)
                }
            },
        };
        let writer = Writer { file, path, ship, source, written, limit, truncated: false };
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
        if let Some(ship) = &self.ship {
            ship.shipper.push(ship.log_id, ship.log_date_time, text, false);
        }
        match (self.file.as_mut(), &self.path) {
            (Some(file), Some(path)) => {
                if let Err(e) = file.write_all(text.as_bytes()) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot write job log");
                }
            }
            (_, Some(path)) if self.ship.is_none() => {
                tracing::info!(target: "jobwheel::joblog", path = %path.display(), "{}", text.trim_end());
            }
            _ => {}
        }
    }
}
