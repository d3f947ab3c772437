//! The report monitor's day counts (`xxl_job_log_report`) against upstream's full recount of the
//! same logs, on every database: the monitor keeps five-minute slices and recounts only those
//! that can have changed (engine/report_slices.rs), so each change below — a callback, a row
//! inserted for an old second, a clear by *another* admin, a job deleted with its logs — must
//! show in the next pass, and a change it cannot see (a result for a row whose trigger had
//! failed) within one round of its turns.

use std::sync::Arc;

use anyhow::ensure;
use chrono::{DateTime, Duration, TimeZone as _, Utc};
use chrono_tz::Tz;
use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::Engine;
use jobwheel_admin::store::{
    GroupId, HandleResult, JobId, LogClear, LogCounts, LogId, LogTriggerUpdate, NewLog, Store,
};

use crate::engine::support::{Db, FakeExecutor, T0, engine_configured, group, job};

const MINUTE_MS: i64 = 60_000;

#[tokio::test]
async fn report_follows_the_logs_on_sqlite() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), async |db| scenario(db, chrono_tz::UTC).await).await
}

/// Nepal's days start at 18:15 UTC: whole slices still, a quarter-hour off UTC's.
#[tokio::test]
async fn report_follows_the_logs_in_a_quarter_hour_zone() -> anyhow::Result<()> {
    Db::run(Some(Db::sqlite().await?), async |db| scenario(db, chrono_tz::Asia::Kathmandu).await).await
}

#[tokio::test]
async fn report_follows_the_logs_on_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, async |db| scenario(db, chrono_tz::UTC).await).await
}

#[tokio::test]
async fn report_follows_the_logs_on_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, async |db| scenario(db, chrono_tz::UTC).await).await
}

/// Two admins (engines with their own connections) on one database.
struct Admins {
    a: Arc<Engine>,
    store_a: Arc<dyn Store>,
    store_b: Arc<dyn Store>,
    tz: Tz,
}

impl Admins {
    /// The three days the report covers at `now_ms`, oldest first, as `[from, next_day)`.
    fn days(&self, now_ms: i64) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let today =
            DateTime::from_timestamp_millis(now_ms).expect("time").with_timezone(&self.tz).date_naive();
        (0..3)
            .rev()
            .map(|back| {
                let day = today - Duration::days(back);
                let midnight = |d: chrono::NaiveDate| {
                    self.tz
                        .from_local_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
                        .earliest()
                        .expect("day")
                };
                (midnight(day).with_timezone(&Utc), midnight(day + Duration::days(1)).with_timezone(&Utc))
            })
            .collect()
    }

    /// Runs admin A's report pass at `now_ms`; the report rows and upstream's recount per day.
    async fn pass(&self, now_ms: i64) -> anyhow::Result<(Vec<(i32, i32, i32)>, Vec<(i32, i32, i32)>)> {
        self.a.report().report_and_clean(now_ms).await?;
        let days = self.days(now_ms);
        let rows = self.store_b.log_reports(days[0].0, days[2].0).await?;
        let reported = rows.iter().map(|r| (r.running_count, r.suc_count, r.fail_count)).collect();
        let mut recount = Vec::new();
        for (from, next_day) in days {
            let c: LogCounts = self.store_b.log_counts(from, next_day - Duration::seconds(1)).await?;
            recount.push((i32::try_from(c.running)?, i32::try_from(c.success)?, i32::try_from(c.failed())?));
        }
        Ok((reported, recount))
    }

    /// The report after a pass at `now_ms` must equal the recount.
    async fn agrees(&self, now_ms: i64, what: &str) -> anyhow::Result<()> {
        let (reported, recount) = self.pass(now_ms).await?;
        ensure!(reported == recount, "{what}: reported {reported:?}, recount {recount:?}");
        Ok(())
    }

    /// A log row for `job` triggered at `at`, with a trigger outcome (`0`: staged, none yet).
    async fn log(
        &self,
        g: GroupId,
        job: JobId,
        at: DateTime<Utc>,
        trigger_code: i32,
    ) -> anyhow::Result<LogId> {
        let id = self.store_a.insert_log(&NewLog { job_group: g, job_id: job, trigger_time: at }).await?;
        if trigger_code != 0 {
            self.store_a
                .update_log_trigger(&LogTriggerUpdate {
                    log_id: id,
                    trigger_time: at,
                    trigger_code,
                    trigger_msg: Some("test".to_owned()),
                    executor_address: Some("http://e:1/".to_owned()),
                    executor_handler: Some("demoJobHandler".to_owned()),
                    executor_param: None,
                    executor_sharding_param: None,
                    executor_fail_retry_count: 0,
                })
                .await?;
        }
        Ok(id)
    }

    async fn result(&self, id: LogId, code: i32, at_ms: i64) -> anyhow::Result<()> {
        let handle_time = DateTime::from_timestamp_millis(at_ms).expect("time");
        self.store_b
            .apply_handle_result(&HandleResult {
                log_id: id,
                handle_time,
                handle_code: code,
                handle_msg: None,
            })
            .await?;
        Ok(())
    }
}

async fn scenario(db: &Db, tz: Tz) -> anyhow::Result<()> {
    let (store_a, store_b) = (db.connect().await?, db.connect().await?);
    let clock = Arc::new(ManualClock::new(T0));
    let a = engine_configured(
        store_a.clone(),
        Arc::new(FakeExecutor::default()),
        clock,
        UpstreamAlarms::default(),
        |c| {
            c.time_zone = tz;
        },
    );
    let admins = Admins { a, store_a: store_a.clone(), store_b: store_b.clone(), tz };
    let g = group(&*store_a, "report", &[]).await?;
    let (job_x, job_y) = (store_a.add_job(&job(g, T0)).await?, store_a.add_job(&job(g, T0)).await?);
    // Noon of 2030-01-03 in the zone: the window is the 1st to the 3rd.
    let noon = tz.with_ymd_and_hms(2030, 1, 3, 12, 0, 0).single().expect("noon").timestamp_millis();
    let local = |d: u32, h: u32, m: u32, s: u32| {
        tz.with_ymd_and_hms(2030, 1, d, h, m, s).single().expect("time").with_timezone(&Utc)
    };

    // A day of each kind: succeeded, failed at the executor, failed to trigger, still running.
    let running = admins.log(g, job_x, local(3, 11, 0, 0), 200).await?;
    let mut failed_trigger = None;
    for (d, h, code, result) in [(1, 0, 200, 200), (1, 23, 200, 500), (2, 10, 500, 0), (3, 1, 200, 200)] {
        let id = admins.log(g, job_x, local(d, h, 59, 59), code).await?;
        if result != 0 {
            admins.result(id, result, noon).await?;
        } else {
            failed_trigger = Some(id);
        }
    }
    admins.log(g, job_y, local(2, 7, 0, 0), 200).await?;
    // Outside the window: neither counted nor kept.
    admins.log(g, job_x, local(4, 0, 0, 1), 200).await?;
    admins.agrees(noon, "the first pass").await?;

    let mut now = noon + MINUTE_MS;
    admins.result(running, 200, now).await?;
    admins.agrees(now, "a running row's result").await?;

    now += MINUTE_MS;
    admins.log(g, job_x, local(1, 3, 0, 0), 500).await?;
    admins.log(g, job_y, local(2, 4, 0, 0), 0).await?;
    admins.agrees(now, "rows inserted for old seconds (missed fires, a staged row)").await?;

    now += MINUTE_MS;
    let cleared = store_b
        .clear_logs(&LogClear {
            job_group: Some(g),
            job_id: Some(job_x),
            trigger_before: Some(local(1, 12, 0, 0)),
            keep_newest: 0,
        })
        .await?;
    ensure!(cleared == 2, "cleared {cleared}");
    admins.agrees(now, "logs cleared through the other admin").await?;

    now += MINUTE_MS;
    ensure!(store_b.delete_job(job_y).await?);
    admins.agrees(now, "a job deleted with its logs").await?;

    // A result for a row whose trigger had failed: settled rows are not watched, so only the
    // slice's turn shows it — within 288 passes (4 h 48 min), and not at the next pass.
    now += MINUTE_MS;
    admins.result(failed_trigger.expect("a failed trigger"), 200, now).await?;
    let mut passes = 0;
    loop {
        let (reported, recount) = admins.pass(now).await?;
        if reported == recount {
            break;
        }
        passes += 1;
        ensure!(passes <= 288, "not shown after {passes} passes: {reported:?} against {recount:?}");
        now += MINUTE_MS;
    }
    ensure!(passes > 0, "the change is one no rule watches, yet the next pass showed it");
    Ok(())
}
