//! Per-job time zones (jobwheel extension) through the scheduler, with controlled time: DST
//! gaps and overlaps in `America/New_York`, the same cron in two zones, and the fallback for a
//! stored name that is not a zone. The engine's own zone is UTC (`engine_with`), so every
//! expectation below only holds if the job's zone is the one used.
//!
//! The DST scenarios run on SQLite always and on PostgreSQL/MySQL when their URLs are set: the
//! zone reaches the engine through each backend's `due_jobs`/`load_job` join.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{Engine, Placement};
use jobwheel_admin::store::{GroupId, JobId, Store};

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, load, logs};

/// Epoch ms of an RFC 3339 instant.
pub(crate) fn ms(rfc3339: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(rfc3339).expect("valid instant").timestamp_millis()
}

/// RFC 3339 (UTC) of epoch ms, for readable assertions.
pub(crate) fn utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).expect("valid time").to_rfc3339()
}

pub(crate) struct Harness {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) engine: Arc<Engine>,
    pub(crate) clock: Arc<ManualClock>,
    group: GroupId,
}

impl Harness {
    pub(crate) async fn new(db: &Db) -> anyhow::Result<Self> {
        let store = db.connect().await?;
        let clock = Arc::new(ManualClock::new(T0));
        let engine = engine_with(
            store.clone(),
            Arc::new(FakeExecutor::default()),
            clock.clone(),
            UpstreamAlarms::default(),
        );
        let group = group(&*store, "tz-app", &["http://a:9999/"]).await?;
        Ok(Self { store, engine, clock, group })
    }

    /// A running CRON job with `conf`, next fire `next_ms`, in `zone`.
    pub(crate) async fn cron_job(
        &self,
        conf: &str,
        next_ms: i64,
        zone: Option<&str>,
    ) -> anyhow::Result<JobId> {
        let mut j = job(self.group, next_ms);
        j.schedule_conf = Some(conf.to_owned());
        let id = self.store.add_job(&j).await?;
        self.store.set_job_time_zone(id, zone).await?;
        Ok(id)
    }

    /// One pre-read at `now_ms` with the clock there too; the fire times it planned for `id`.
    pub(crate) async fn cycle(&self, now_ms: i64, id: JobId) -> anyhow::Result<Vec<String>> {
        self.clock.set(now_ms);
        let report = self.engine.scheduler().schedule_cycle(now_ms).await?;
        self.engine.triggers().wait_idle().await;
        Ok(report.fires.iter().filter(|f| f.job_id == id).map(|f| utc(f.fire_time_ms)).collect())
    }

    pub(crate) async fn next(&self, id: JobId) -> anyhow::Result<String> {
        Ok(utc(load(&*self.store, id).await?.trigger_next_time))
    }

    /// The trigger times of the job's log rows, oldest first.
    pub(crate) async fn logged(&self, id: JobId) -> anyhow::Result<Vec<String>> {
        Ok(logs(&*self.store, id)
            .await?
            .iter()
            .map(|r| r.trigger_time.map(|t| t.to_rfc3339()).unwrap_or_default())
            .collect())
    }
}

/// `0 30 2 * * ?` in New York: 02:30 does not exist on 2024-03-10, so after 03-09 02:30 EST
/// the next fire is 03-11 02:30 EDT, and a pre-read where 03-10's would have been finds nothing.
async fn spring_forward(db: &Db) -> anyhow::Result<()> {
    let h = Harness::new(db).await?;
    let id = h.cron_job("0 30 2 * * ?", ms("2024-03-09T07:30:00Z"), Some("America/New_York")).await?;

    assert_eq!(h.cycle(ms("2024-03-09T07:30:00Z"), id).await?, ["2024-03-09T07:30:00+00:00"]);
    assert_eq!(h.next(id).await?, "2024-03-11T06:30:00+00:00", "03-10 is skipped");
    // 02:30 of 03-10 read as EDT (06:30Z) and as EST (07:30Z, which is 03:30 EDT, where Java
    // resolves the gap): nothing is due at either.
    for now in ["2024-03-10T06:30:00Z", "2024-03-10T07:30:00Z"] {
        assert!(h.cycle(ms(now), id).await?.is_empty(), "no fire at {now}");
    }
    assert_eq!(h.cycle(ms("2024-03-11T06:30:00Z"), id).await?, ["2024-03-11T06:30:00+00:00"]);
    assert_eq!(h.next(id).await?, "2024-03-12T06:30:00+00:00");
    assert_eq!(h.logged(id).await?, ["2024-03-09T07:30:00+00:00", "2024-03-11T06:30:00+00:00"]);
    Ok(())
}

/// `0 0/30 * * * ?` in New York across the 2024-11-03 fall-back: docs/scheduling.md rule 2,
/// 00:30 EDT → 01:00 EST → 01:30 EST → 02:00 EST; the first pass of 01:xx (EDT) never fires.
async fn fall_back(db: &Db) -> anyhow::Result<()> {
    let h = Harness::new(db).await?;
    let id = h.cron_job("0 0/30 * * * ?", ms("2024-11-03T04:30:00Z"), Some("America/New_York")).await?;

    let mut fired = Vec::new();
    // Every half hour in UTC from 00:30 EDT to 02:00 EST, including 01:00 and 01:30 EDT.
    for now in ["04:30", "05:00", "05:30", "06:00", "06:30", "07:00"] {
        fired.extend(h.cycle(ms(&format!("2024-11-03T{now}:00Z")), id).await?);
    }
    let expected = [
        "2024-11-03T04:30:00+00:00", // 00:30 EDT
        "2024-11-03T06:00:00+00:00", // 01:00 EST
        "2024-11-03T06:30:00+00:00", // 01:30 EST
        "2024-11-03T07:00:00+00:00", // 02:00 EST
    ];
    assert_eq!(fired, expected);
    assert_eq!(h.logged(id).await?, expected);
    assert_eq!(h.next(id).await?, "2024-11-03T07:30:00+00:00");
    Ok(())
}

/// A scenario on one database, boxed so that one `fn` pointer serves every backend.
pub(crate) type Scenario = for<'a> fn(&'a Db) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>;

/// Runs `scenario` on SQLite, then on PostgreSQL and MySQL when their URLs are set.
pub(crate) async fn on_every_backend(scenario: Scenario) -> anyhow::Result<()> {
    let sqlite = Db::sqlite().await?;
    scenario(&sqlite).await?;
    for db in [Db::postgres().await?, Db::mysql().await?].into_iter().flatten() {
        let result = scenario(&db).await;
        db.cleanup().await?;
        result?;
    }
    Ok(())
}

#[tokio::test]
async fn spring_forward_gap_skips_the_day_on_every_backend() -> anyhow::Result<()> {
    on_every_backend(|db| Box::pin(spring_forward(db))).await
}

#[tokio::test]
async fn fall_back_overlap_fires_the_standard_time_pass_on_every_backend() -> anyhow::Result<()> {
    on_every_backend(|db| Box::pin(fall_back(db))).await
}

#[tokio::test]
async fn same_cron_fires_at_each_zones_own_instant() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let h = Harness::new(&db).await?;
    let now = ms("2024-06-01T00:00:00Z");
    let shanghai = h.cron_job("0 0 9 * * ?", now - 1000, Some("Asia/Shanghai")).await?;
    let berlin = h.cron_job("0 0 9 * * ?", now - 1000, Some("Europe/Berlin")).await?;
    let utc_job = h.cron_job("0 0 9 * * ?", now - 1000, None).await?;

    h.cycle(now, shanghai).await?;
    // 09:00 CST (UTC+8), 09:00 CEST (UTC+2), and 09:00 in the engine's zone (UTC).
    assert_eq!(h.next(shanghai).await?, "2024-06-01T01:00:00+00:00");
    assert_eq!(h.next(berlin).await?, "2024-06-01T07:00:00+00:00");
    assert_eq!(h.next(utc_job).await?, "2024-06-01T09:00:00+00:00");

    let report = h.engine.scheduler().schedule_cycle(ms("2024-06-01T01:00:00Z")).await?;
    let fired: Vec<JobId> = report.fires.iter().map(|f| f.job_id).collect();
    assert_eq!(fired, [shanghai]);
    assert_eq!(report.fires[0].placement, Placement::Now);
    let report = h.engine.scheduler().schedule_cycle(ms("2024-06-01T07:00:00Z")).await?;
    assert_eq!(report.fires.iter().map(|f| f.job_id).collect::<Vec<_>>(), [berlin]);
    h.engine.triggers().wait_idle().await;
    Ok(())
}

#[tokio::test]
async fn a_stored_name_that_is_no_zone_falls_back_to_the_engine_zone() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let h = Harness::new(&db).await?;
    let now = ms("2024-06-01T00:00:00Z");
    let id = h.cron_job("0 0 9 * * ?", now - 1000, Some("Mars/Olympus_Mons")).await?;

    h.cycle(now, id).await?;
    // The job keeps running, on the engine's zone (UTC).
    assert_eq!(h.next(id).await?, "2024-06-01T09:00:00+00:00");
    assert_eq!(load(&*h.store, id).await?.trigger_status, 1);
    Ok(())
}
