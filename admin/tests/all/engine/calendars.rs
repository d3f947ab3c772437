//! Calendars and exclusion windows through the scheduler, with controlled time, on SQLite and
//! (when their URLs are set) PostgreSQL and MySQL: the rules reach the pre-read through each
//! backend's `job_days`. Excluded fires are never planned, so they are neither fired, nor
//! misfires, nor logged.

use jobwheel_admin::calendar::CalendarDays;
use jobwheel_admin::store::{CalendarId, DayRefs, JobId, NewCalendar, Store};

use crate::engine::support::Db;
use crate::engine::time_zones::{Harness, ms, on_every_backend, utc};

async fn calendar(store: &dyn Store, name: &str, days: serde_json::Value) -> anyhow::Result<CalendarId> {
    let days: CalendarDays = serde_json::from_value(days)?;
    let (normalized, _) = days.normalize()?;
    let calendar = NewCalendar {
        name: name.to_owned(),
        description: String::new(),
        days: serde_json::to_string(&normalized)?,
        update_ms: 0,
    };
    Ok(store.add_calendar(&calendar).await?)
}

/// One pre-read; the job's fire times and whether anything misfired.
async fn cycle(h: &Harness, at: &str, id: JobId) -> anyhow::Result<Vec<String>> {
    let now = ms(at);
    h.clock.set(now);
    let report = h.engine.scheduler().schedule_cycle(now).await?;
    h.engine.triggers().wait_idle().await;
    anyhow::ensure!(report.misfired.is_empty(), "no misfire at {at}: {:?}", report.misfired);
    Ok(report.fires.iter().filter(|f| f.job_id == id).map(|f| utc(f.fire_time_ms)).collect())
}

/// 09:00 in Shanghai, never on weekends or New Year's Day: Thursday 2026-12-31 fires, the next
/// fire is Monday 2027-01-04, and the pre-reads of the three days between find nothing due.
async fn year_boundary(db: &Db) -> anyhow::Result<()> {
    let h = Harness::new(db).await?;
    let holidays = calendar(
        &*h.store,
        "cn-rest-days",
        serde_json::json!({"weekdays": ["SAT", "SUN"], "yearly": ["01-01"]}),
    )
    .await?;
    let id = h.cron_job("0 0 9 * * ?", ms("2026-12-31T01:00:00Z"), Some("Asia/Shanghai")).await?;
    h.store.set_job_days(id, &DayRefs { never_on: vec![holidays], ..DayRefs::default() }).await?;

    assert_eq!(cycle(&h, "2026-12-31T01:00:00Z", id).await?, ["2026-12-31T01:00:00+00:00"]);
    assert_eq!(h.next(id).await?, "2027-01-04T01:00:00+00:00", "Fri 01-01, Sat and Sun are skipped");
    for day in ["2027-01-01", "2027-01-02", "2027-01-03"] {
        assert!(cycle(&h, &format!("{day}T01:00:00Z"), id).await?.is_empty(), "nothing due on {day}");
    }
    assert_eq!(cycle(&h, "2027-01-04T01:00:00Z", id).await?, ["2027-01-04T01:00:00+00:00"]);
    assert_eq!(h.logged(id).await?, ["2026-12-31T01:00:00+00:00", "2027-01-04T01:00:00+00:00"]);
    Ok(())
}

/// Every 15 minutes in New York, not between 00:45 and 02:30. On 2024-03-10 02:30 does not
/// exist (02:00 EST is 03:00 EDT): the first fire after 00:30 EST is 03:00 EDT.
async fn spring_forward_window(db: &Db) -> anyhow::Result<()> {
    let h = Harness::new(db).await?;
    let id = h.cron_job("0 0/15 * * * ?", ms("2024-03-10T05:30:00Z"), Some("America/New_York")).await?;
    let days = DayRefs { windows: "00:45-02:30".to_owned(), ..DayRefs::default() };
    h.store.set_job_days(id, &days).await?;

    assert_eq!(cycle(&h, "2024-03-10T05:30:00Z", id).await?, ["2024-03-10T05:30:00+00:00"]);
    assert_eq!(h.next(id).await?, "2024-03-10T07:00:00+00:00", "03:00 EDT, the gap's end");
    assert!(cycle(&h, "2024-03-10T06:00:00Z", id).await?.is_empty(), "01:00 EST is in the window");
    assert_eq!(cycle(&h, "2024-03-10T07:00:00Z", id).await?, ["2024-03-10T07:00:00+00:00"]);
    assert_eq!(h.next(id).await?, "2024-03-10T07:15:00+00:00");
    Ok(())
}

/// Every 30 minutes in New York, not between 01:00 and 02:00. On 2024-11-03 that hour happens
/// twice (EDT, then EST); both passes are excluded, so 00:30 EDT is followed by 02:00 EST.
async fn fall_back_window(db: &Db) -> anyhow::Result<()> {
    let h = Harness::new(db).await?;
    let id = h.cron_job("0 0/30 * * * ?", ms("2024-11-03T04:30:00Z"), Some("America/New_York")).await?;
    h.store.set_job_days(id, &DayRefs { windows: "01:00-02:00".to_owned(), ..DayRefs::default() }).await?;

    let mut fired = Vec::new();
    for now in ["04:30", "05:00", "05:30", "06:00", "06:30", "07:00"] {
        fired.extend(cycle(&h, &format!("2024-11-03T{now}:00Z"), id).await?);
    }
    assert_eq!(fired, ["2024-11-03T04:30:00+00:00", "2024-11-03T07:00:00+00:00"]);
    assert_eq!(h.next(id).await?, "2024-11-03T07:30:00+00:00");
    Ok(())
}

#[tokio::test]
async fn never_on_calendar_skips_new_year_and_weekend_on_every_backend() -> anyhow::Result<()> {
    on_every_backend(|db| Box::pin(year_boundary(db))).await
}

#[tokio::test]
async fn window_ending_in_a_dst_gap_resumes_at_the_gap_end_on_every_backend() -> anyhow::Result<()> {
    on_every_backend(|db| Box::pin(spring_forward_window(db))).await
}

#[tokio::test]
async fn window_excludes_both_passes_of_a_repeated_hour_on_every_backend() -> anyhow::Result<()> {
    on_every_backend(|db| Box::pin(fall_back_window(db))).await
}

/// An "only on" calendar whose days are all past leaves the job no next time: the scheduler
/// stops it, as upstream does for a cron expression with no future time.
#[tokio::test]
async fn only_on_calendar_with_no_future_day_stops_the_job() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let h = Harness::new(&db).await?;
    let past = calendar(&*h.store, "past", serde_json::json!({"dates": ["2020-01-01"]})).await?;
    let id = h.cron_job("0 0 9 * * ?", ms("2026-06-01T09:00:00Z"), None).await?;
    h.store.set_job_days(id, &DayRefs { only_on: vec![past], ..DayRefs::default() }).await?;

    // The fire already planned goes out; after it the rules allow no time, so the job stops.
    assert_eq!(cycle(&h, "2026-06-01T09:00:00Z", id).await?, ["2026-06-01T09:00:00+00:00"]);
    let job = crate::engine::support::load(&*h.store, id).await?;
    assert_eq!((job.trigger_status, job.trigger_next_time), (0, 0));
    Ok(())
}
