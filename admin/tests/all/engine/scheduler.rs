//! The schedule cycle with controlled time: due, ring pushes, misfires, FIX_RATE chains, cron
//! edge cases, §5.8's stop/start rules, FIX_DELAY parking, and crash recovery of ring claims
//! (that one on every backend).

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::engine::{FIX_DELAY_PARKED, Placement, Recovery, TriggerType, ring_second};
use jobwheel_admin::store::{JobId, Store};

use crate::engine::support::{Db, FakeExecutor, T0, engine_with, group, job, load, logs};

async fn setup() -> anyhow::Result<(Db, Arc<dyn Store>, Arc<FakeExecutor>, Arc<ManualClock>)> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    Ok((db, store, Arc::new(FakeExecutor::default()), Arc::new(ManualClock::new(T0))))
}

#[tokio::test]
async fn due_job_fires_now_then_rings_its_next_second() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let id = store.add_job(&job(g, T0 - 200)).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(report.pre_read, 1);
    assert_eq!(report.fires.len(), 2, "{report:?}");
    assert_eq!(report.fires[0].placement, Placement::Now);
    assert_eq!(report.fires[0].fire_time_ms, T0 - 200);
    // Refreshed from now (T0 → next whole second T0+1000), pushed into the ring because it
    // lies within 5 s, then refreshed again from there.
    assert_eq!(report.fires[1].placement, Placement::Ring(ring_second(T0 + 1000)));
    assert_eq!(report.fires[1].fire_time_ms, T0 + 1000);
    let stored = load(&*store, id).await?;
    assert_eq!((stored.trigger_last_time, stored.trigger_next_time), (T0 + 1000, T0 + 2000));

    engine.triggers().wait_idle().await;
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 2, "the fire and the ring's staged row");
    assert_eq!(rows[0].trigger_code, 200);
    assert!(rows[0].trigger_msg.as_deref().unwrap_or_default().contains("Cron触发"));
    assert_eq!(rows[1].trigger_code, 0, "staged, waiting for its second");

    let fired = engine.scheduler().drain_ring(ring_second(T0 + 1000));
    assert_eq!(fired.len(), 1);
    engine.triggers().wait_idle().await;
    let rows = logs(&*store, id).await?;
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r.trigger_code == 200));
    assert_eq!(fake.runs().len(), 2);
    // Both claims were consumed: nothing is left for recovery.
    assert!(store.pending_claims(i64::MAX).await?.is_empty());
    Ok(())
}

#[tokio::test]
async fn job_within_the_window_goes_to_the_ring_and_refreshes_from_its_next_time() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, T0 + 3000);
    j.schedule_conf = Some("0/10 * * * * ?".to_owned());
    let id = store.add_job(&j).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(report.fires.len(), 1);
    assert_eq!(report.fires[0].placement, Placement::Ring(3));
    let stored = load(&*store, id).await?;
    assert_eq!((stored.trigger_last_time, stored.trigger_next_time), (T0 + 3000, T0 + 10_000));
    assert_eq!(engine.scheduler().ring_len(), 1);
    // A wake-up two seconds late still finds the slot.
    assert_eq!(engine.scheduler().drain_ring(5).len(), 1);
    engine.triggers().wait_idle().await;
    assert_eq!(fake.runs().len(), 1);
    Ok(())
}

#[tokio::test]
async fn misfire_do_nothing_skips_and_fire_once_now_fires_as_misfire() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut skip = job(g, T0 - 6000);
    skip.schedule_conf = Some("0 0 * * * ?".to_owned());
    let skip = store.add_job(&skip).await?;
    let mut once = job(g, T0 - 6000);
    once.schedule_conf = Some("0 0 * * * ?".to_owned());
    once.misfire_strategy = "FIRE_ONCE_NOW".into();
    let once = store.add_job(&once).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(report.misfired, vec![skip, once]);
    assert_eq!(report.fires.len(), 1);
    assert_eq!(report.fires[0].job_id, once);
    assert_eq!(report.fires[0].trigger_type, TriggerType::Misfire);
    // Both refreshed from now: the next full hour.
    for id in [skip, once] {
        assert_eq!(load(&*store, id).await?.trigger_next_time, T0 + 3_600_000);
    }
    engine.triggers().wait_idle().await;
    // DO_NOTHING ran nothing; the skip is a missed-fire row (engine::missed_fire tests more).
    let skipped = logs(&*store, skip).await?;
    assert_eq!((skipped.len(), skipped[0].trigger_code), (1, 500));
    let rows = logs(&*store, once).await?;
    assert_eq!(rows.len(), 1);
    assert!(rows[0].trigger_msg.as_deref().unwrap_or_default().contains("调度过期补偿"));
    Ok(())
}

#[tokio::test]
async fn fix_rate_chains_from_the_previous_next_time() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake, clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, T0 + 1000);
    j.schedule_type = "FIX_RATE".into();
    j.schedule_conf = Some("7".to_owned());
    let id = store.add_job(&j).await?;

    let mut fire_times = Vec::new();
    for step in 0..4 {
        let report = engine.scheduler().schedule_cycle(T0 + step * 7000).await?;
        fire_times.extend(report.fires.iter().map(|f| f.fire_time_ms - T0));
    }
    assert_eq!(fire_times, vec![1000, 8000, 15_000, 22_000]);
    assert_eq!(load(&*store, id).await?.trigger_next_time, T0 + 29_000);
    Ok(())
}

#[tokio::test]
async fn cron_edge_cases_through_the_scheduler() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake, clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    // Last day of the month after a fire at 2030-01-01: 2030-01-31 00:00 UTC.
    let mut last_day = job(g, T0 - 100);
    last_day.schedule_conf = Some("0 0 0 L * ?".to_owned());
    let last_day = store.add_job(&last_day).await?;
    // Nearest weekday to the 15th of February 2030 (a Friday) … from 2030-01-01.
    let mut weekday = job(g, T0 - 100);
    weekday.schedule_conf = Some("0 0 12 15W * ?".to_owned());
    let weekday = store.add_job(&weekday).await?;
    // The second Monday (2#2) of the month.
    let mut nth = job(g, T0 - 100);
    nth.schedule_conf = Some("0 0 9 ? * 2#2".to_owned());
    let nth = store.add_job(&nth).await?;
    // A year in the past: no next time → the job is stopped (upstream).
    let mut expired = job(g, T0 - 100);
    expired.schedule_conf = Some("0 0 0 1 1 ? 2020".to_owned());
    let expired = store.add_job(&expired).await?;

    engine.scheduler().schedule_cycle(T0).await?;
    let rfc = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).map(|t| t.to_rfc3339());
    assert_eq!(
        rfc(load(&*store, last_day).await?.trigger_next_time).as_deref(),
        Some("2030-01-31T00:00:00+00:00")
    );
    assert_eq!(
        rfc(load(&*store, weekday).await?.trigger_next_time).as_deref(),
        Some("2030-01-15T12:00:00+00:00")
    );
    assert_eq!(
        rfc(load(&*store, nth).await?.trigger_next_time).as_deref(),
        Some("2030-01-14T09:00:00+00:00")
    );
    let stopped = load(&*store, expired).await?;
    assert_eq!((stopped.trigger_status, stopped.trigger_last_time, stopped.trigger_next_time), (0, 0, 0));
    Ok(())
}

#[tokio::test]
async fn stop_start_rules_of_upstream() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock, UpstreamAlarms::default());
    let g = group(&*store, "app", &["http://a:9999/"]).await?;
    let id = store.add_job(&job(g, T0 + 2000)).await?;

    // Stopped: status 0, times 0 — the pre-read does not see it.
    store.stop_job(id, crate::engine::support::at_ms(T0)).await?;
    assert_eq!(engine.scheduler().schedule_cycle(T0).await?.pre_read, 0);

    // Started: next computed from now + 5 s, so the first pre-read at `now` skips it and the
    // one 5 s later takes it.
    let next = jobwheel_admin::cron::next_trigger_time(
        jobwheel_admin::cron::ScheduleType::Cron,
        "* * * * * ?",
        chrono_tz::UTC,
        T0 + 5000,
    )?
    .unwrap_or_default();
    store.start_job(id, next, crate::engine::support::at_ms(T0)).await?;
    assert_eq!(next, T0 + 6000);
    assert_eq!(engine.scheduler().schedule_cycle(T0).await?.pre_read, 0);
    assert_eq!(engine.scheduler().schedule_cycle(T0 + 1000).await?.fires.len(), 1);
    assert!(fake.runs().is_empty(), "a ring push does not fire before its second");
    Ok(())
}

/// A FIX_DELAY job of `delay_s` seconds due just before T0, on an unregistered manual address.
async fn fix_delay_job(store: &dyn Store, delay_s: u32) -> anyhow::Result<JobId> {
    let g = group(store, "app", &["http://a:9999/"]).await?;
    let mut j = job(g, T0 - 100);
    j.schedule_type = "FIX_DELAY".into();
    j.schedule_conf = Some(delay_s.to_string());
    Ok(store.add_job(&j).await?)
}

#[tokio::test]
async fn fix_delay_parks_until_completion() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let id = fix_delay_job(&*store, 30).await?;

    let report = engine.scheduler().schedule_cycle(T0).await?;
    assert_eq!(report.fires.len(), 1, "no ring push while the run is open");
    assert_eq!(load(&*store, id).await?.trigger_next_time, FIX_DELAY_PARKED);
    engine.triggers().wait_idle().await;
    assert_eq!(engine.scheduler().schedule_cycle(T0 + 60_000).await?.pre_read, 0, "parked jobs are not read");

    let log_id = logs(&*store, id).await?[0].id;
    clock.set(T0 + 12_345);
    let callback = jobwheel_admin::protocol::HandleCallbackParam {
        log_id: log_id.0,
        log_date_tim: T0,
        handle_code: 200,
        handle_msg: "done".to_owned(),
        output: None,
        flight: None,
    };
    engine.completion().on_callbacks(vec![callback]).await?;
    let stored = load(&*store, id).await?;
    // Completion + 30 s, rounded up to a whole second.
    assert_eq!(stored.trigger_next_time, T0 + 43_000);
    assert_eq!(stored.trigger_last_time, T0 - 100);
    Ok(())
}

/// A FIX_DELAY job whose run never reports (its executor vanished) is re-armed when the
/// lost-job monitor closes the run, as a callback would: it does not stay parked forever.
#[tokio::test]
async fn fix_delay_rearms_when_the_lost_job_monitor_closes_its_run() -> anyhow::Result<()> {
    let (_db, store, fake, clock) = setup().await?;
    let engine = engine_with(store.clone(), fake.clone(), clock.clone(), UpstreamAlarms::default());
    let id = fix_delay_job(&*store, 30).await?;
    engine.scheduler().schedule_cycle(T0).await?;
    engine.triggers().wait_idle().await;
    assert_eq!(load(&*store, id).await?.trigger_next_time, FIX_DELAY_PARKED);

    // Upstream's lost-job rule: still running 10 minutes later on an unregistered executor.
    let later = T0 + 11 * 60_000;
    clock.set(later);
    let log_id = logs(&*store, id).await?[0].id;
    assert_eq!(engine.completion().mark_lost_jobs(later).await?, [log_id]);
    assert_eq!(load(&*store, id).await?.trigger_next_time, later + 30_000, "re-armed: completion + 30 s");
    Ok(())
}

/// Crash recovery on one database: admin A claims and "dies" before firing; admin B fires
/// the claim exactly once; A's late ring drain then finds the claim consumed.
async fn recovery_contract(db: &Db) -> anyhow::Result<()> {
    let store_a = db.connect().await?;
    let store_b = db.connect().await?;
    let fake = Arc::new(FakeExecutor::default());
    let a =
        engine_with(store_a.clone(), fake.clone(), Arc::new(ManualClock::new(T0)), UpstreamAlarms::default());
    let clock_b = Arc::new(ManualClock::new(T0));
    let b = engine_with(store_b.clone(), fake.clone(), clock_b.clone(), UpstreamAlarms::default());
    let g = group(&*store_a, "app", &["http://a:9999/"]).await?;
    let mut late = job(g, T0 + 2000);
    late.schedule_conf = Some("0 0 * * * ?".to_owned());
    let late = store_a.add_job(&late).await?;
    let mut lost = job(g, T0 + 2000);
    lost.schedule_conf = Some("0 0 * * * ?".to_owned());
    let lost = store_a.add_job(&lost).await?;

    // A claims both into its ring; neither is fired.
    assert_eq!(a.scheduler().schedule_cycle(T0).await?.fires.len(), 2);
    let pending = store_b.pending_claims(i64::MAX).await?;
    assert_eq!(pending.len(), 2);
    // Staged by A's pre-read: the rows B must fire instead of inserting its own.
    let staged: Vec<_> = pending.iter().map(|c| c.log_id.expect("staged row")).collect();

    // B, 3.5 s after the fire time: 3.5 s late ≤ 5 s → fired late, both of them (its clock
    // says so too: a take that late keeps the claim, with its take time, for the purge).
    clock_b.set(T0 + 5500);
    let done = b.scheduler().recovery().recover_claims(T0 + 5500).await?;
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done.iter().all(|(_, r)| *r == Recovery::FiredLate));
    b.triggers().wait_idle().await;
    // A wakes up and drains its ring: the claims are gone, nothing fires twice.
    a.scheduler().drain_ring(ring_second(T0 + 2000));
    a.triggers().wait_idle().await;
    let fired = [logs(&*store_a, late).await?, logs(&*store_a, lost).await?];
    for (rows, staged) in fired.iter().zip(&staged) {
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].id, rows[0].trigger_code), (*staged, 200), "the staged row fired");
        assert_eq!(rows[0].trigger_time, Some(crate::engine::support::at_ms(T0 + 2000)));
    }
    assert_eq!(fake.runs().len(), 2);
    // B's recovery again finds nothing.
    assert!(b.scheduler().recovery().recover_claims(T0 + 6000).await?.is_empty());

    // Second round: claims more than 5 s late follow the misfire rules.
    let mut fire_once = load(&*store_a, late).await?;
    fire_once.misfire_strategy = "FIRE_ONCE_NOW".into();
    fire_once.trigger_next_time = T0 + 10_000;
    store_a.update_job(late, &fire_once).await?;
    let mut do_nothing = load(&*store_a, lost).await?;
    do_nothing.trigger_next_time = T0 + 10_000;
    store_a.update_job(lost, &do_nothing).await?;
    assert_eq!(a.scheduler().schedule_cycle(T0 + 8000).await?.fires.len(), 2);
    clock_b.set(T0 + 20_000);
    let done = b.scheduler().recovery().recover_claims(T0 + 20_000).await?;
    let mut kinds: Vec<Recovery> = done.iter().map(|(_, r)| *r).collect();
    kinds.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(kinds, vec![Recovery::Discarded, Recovery::FiredMisfire]);
    b.triggers().wait_idle().await;
    let misfired = logs(&*store_a, late).await?;
    assert_eq!(misfired.len(), 2);
    assert!(misfired[1].trigger_msg.as_deref().unwrap_or_default().contains("调度过期补偿"));
    let lost_rows = logs(&*store_a, lost).await?;
    assert_eq!(lost_rows.len(), 2, "DO_NOTHING discards, and records the skip as a missed fire");
    assert_eq!((lost_rows[1].trigger_code, lost_rows[1].handle_code), (500, 0));
    assert!(store_a.pending_claims(i64::MAX).await?.is_empty());
    // Fired and discarded claims are purged later; pending ones never are.
    assert!(store_a.purge_claims(i64::MAX).await? >= 4);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_sqlite() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    recovery_contract(&db).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_postgres() -> anyhow::Result<()> {
    Db::run(Db::postgres().await?, recovery_contract).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_mysql() -> anyhow::Result<()> {
    Db::run(Db::mysql().await?, recovery_contract).await
}
