//! Job log retention: deletes date directories older than `--log-retention-days`.
//!
//! Matches upstream 3.3+: a directory named `yyyy-MM-dd` is removed once today's local midnight
//! is later than its date plus N days; retention below 3 days disables cleaning. Runs at startup
//! and then once a day.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{Local, NaiveDate};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Below this, upstream disables cleanup rather than deleting logs of running jobs.
pub(crate) const MIN_RETENTION_DAYS: u32 = 3;

pub(crate) fn spawn_cleaner(
    tracker: &TaskTracker,
    root: PathBuf,
    retention_days: u32,
    shutdown: CancellationToken,
) {
    if retention_days < MIN_RETENTION_DAYS {
        tracing::info!(retention_days, "job log cleanup disabled (retention below 3 days)");
        return;
    }
    tracker.spawn(async move {
        loop {
            let root = root.clone();
            let today = Local::now().date_naive();
            let removed = tokio::task::spawn_blocking(move || clean(&root, today, retention_days))
                .await
                .unwrap_or_default();
            if removed > 0 {
                tracing::info!(removed, "removed expired job log directories");
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(Duration::from_secs(24 * 3600)) => {}
            }
        }
    });
}

/// Removes expired date directories under `root`; returns how many were removed.
pub(crate) fn clean(root: &std::path::Path, today: NaiveDate, retention_days: u32) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(date) = name.to_str().and_then(|n| NaiveDate::parse_from_str(n, "%Y-%m-%d").ok()) else {
            continue; // gluesource, callbacklogs and anything else that is not a date
        };
        let expired = date
            .checked_add_days(chrono::Days::new(u64::from(retention_days)))
            .is_some_and(|limit| today > limit);
        if expired && entry.path().is_dir() {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => removed += 1,
                Err(e) => tracing::warn!(dir = %entry.path().display(), error = %e, "cannot remove log dir"),
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_expired_date_directories() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["2026-11-01", "2026-11-17", "2026-11-18", "gluesource", "callbacklogs"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("2026-11-02"), b"a file, not a dir").unwrap();
        let today = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
        // 2026-11-17 + 3 days = 11-20 < 11-21 → expired; 11-18 + 3 = 11-21, not later → kept.
        assert_eq!(clean(dir.path(), today, 3), 2);
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["2026-11-02", "2026-11-18", "callbacklogs", "gluesource"]);
    }
}
