//! The log report and retention (upstream `JobLogReportHelper`, docs/upstream.md §5.7):
//! every minute, count today and the two days before into `xxl_job_log_report`; once a day,
//! delete logs older than the retention. jobwheel also purges fired/discarded ring claims here.
//! Upstream recounts all three days' logs every minute; the counts here are kept in slices and
//! only the slices that can have changed are recounted (`report_slices.rs`).

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Days, NaiveTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::EngineError;
use super::config::MIN_LOG_RETENTION_DAYS;
use super::fire::to_datetime;
use super::report_slices::Slices;
use crate::store::{LogClear, LogReport, Store};

/// Fired and discarded claims are kept this long (for diagnosis), then purged.
pub const CLAIM_KEEP_MS: i64 = 60 * 60 * 1000;
/// Retention runs at most once per this period (upstream: 24 h).
const CLEAN_EVERY_MS: i64 = 24 * 60 * 60 * 1000;

/// The report monitor, with the day retention last ran.
pub struct ReportMonitor {
    store: Arc<dyn Store>,
    /// The zone whose days the report counts (`EngineConfig::time_zone`).
    time_zone: Tz,
    /// Days of logs kept; below [`MIN_LOG_RETENTION_DAYS`] nothing is deleted.
    retention_days: u32,
    /// When log retention last ran (epoch ms; 0 = never).
    last_clean_ms: Mutex<i64>,
    /// The counts kept between passes (one pass at a time holds them).
    slices: tokio::sync::Mutex<Slices>,
}

impl ReportMonitor {
    /// A monitor counting days in `time_zone`, keeping `retention_days` of logs (the engine builds
    /// its own; `bench-monitors` times one alone).
    pub fn new(store: Arc<dyn Store>, time_zone: Tz, retention_days: u32) -> Self {
        Self {
            store,
            time_zone,
            retention_days,
            last_clean_ms: Mutex::new(0),
            slices: tokio::sync::Mutex::new(Slices::default()),
        }
    }

    /// One report pass at `now_ms`: the three day reports, the daily log clean-up (when due)
    /// and the claim purge. Returns the number of logs deleted.
    pub async fn report_and_clean(&self, now_ms: i64) -> Result<u64, EngineError> {
        let tz = self.time_zone;
        let now = to_datetime(now_ms);
        let today = now.with_timezone(&tz).date_naive();
        let days: Vec<(DateTime<Utc>, DateTime<Utc>)> = (0..3u64)
            .rev()
            .filter_map(|back| {
                let day = today.checked_sub_days(Days::new(back))?;
                Some((local_midnight(tz, day)?, local_midnight(tz, day.succ_opt()?)?))
            })
            .collect();
        let mut slices = self.slices.lock().await;
        if let (Some((first, _)), Some((_, end))) = (days.first(), days.last()) {
            slices.update(&*self.store, first.timestamp(), end.timestamp(), now_ms).await?;
        }
        for (from, next_day) in days {
            let counts = match slices.counts(from.timestamp(), next_day.timestamp()) {
                Some(counts) => counts,
                // Upstream's day end is 23:59:59.999; the store keeps whole seconds.
                None => self.store.log_counts(from, next_day - chrono::Duration::seconds(1)).await?,
            };
            let clamp = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
            self.store
                .upsert_log_report(&LogReport {
                    trigger_day: from,
                    running_count: clamp(counts.running),
                    suc_count: clamp(counts.success),
                    fail_count: clamp(counts.failed()),
                    update_time: now,
                })
                .await?;
        }
        drop(slices);

        let mut deleted = 0;
        let retention = self.retention_days;
        let clean_due = {
            let mut last = self.last_clean_ms.lock().unwrap_or_else(PoisonError::into_inner);
            let due = retention >= MIN_LOG_RETENTION_DAYS && now_ms - *last > CLEAN_EVERY_MS;
            if due {
                *last = now_ms;
            }
            due
        };
        if clean_due
            && let Some(before_day) = today.checked_sub_days(Days::new(u64::from(retention)))
            && let Some(before) = local_midnight(tz, before_day)
        {
            deleted = self
                .store
                .clear_logs(&LogClear { trigger_before: Some(before), ..LogClear::default() })
                .await?;
            tracing::info!(deleted, retention_days = retention, "old logs deleted");
            // The audit log is kept as long as the trigger logs (docs/api.md, "Audit log").
            let audited = self.store.purge_audit(before.timestamp_millis()).await?;
            if audited > 0 {
                tracing::info!(deleted = audited, retention_days = retention, "old audit entries deleted");
            }
            // So is the alarm delivery log, with its events (docs/alarms.md).
            let alarms = self.store.purge_alarms(before.timestamp_millis()).await?;
            if alarms > 0 {
                tracing::info!(deleted = alarms, retention_days = retention, "old alarm deliveries deleted");
            }
        }
        self.store.purge_claims(now_ms - CLAIM_KEEP_MS).await?;
        Ok(deleted)
    }
}

/// 00:00 of `day` in `tz` (the first instant of the day when midnight falls into a DST gap).
pub(crate) fn local_midnight<Tz: TimeZone>(tz: Tz, day: chrono::NaiveDate) -> Option<DateTime<Utc>> {
    (0..3)
        .filter_map(|hour| NaiveTime::from_hms_opt(hour, 0, 0))
        .find_map(|time| tz.from_local_datetime(&day.and_time(time)).earliest())
        .map(|t| t.with_timezone(&Utc))
}
