//! Contract checks for trigger logs, callbacks, the fail and lost monitors' queries, log
//! deletion and the dashboard report.

use anyhow::ensure;
use chrono::Duration;

use jobwheel_admin::store::{
    GroupId, HandleOutcome, HandleResult, JobId, LogClear, LogClearType, LogCounts, LogFilter, LogId,
    LogReport, LogStatusFilter, LogTriggerUpdate, MAX_HANDLE_MSG_CHARS, NewLog, Page, RegistryKey,
};

use crate::store::{Admins, at, group, job};

/// Which group each log belongs to (the callback check of group tokens); unknown ids are left out.
async fn log_groups(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    // A job of its own, so the other checks' log counts stay as they are.
    let job_id = a.add_job(&job(g, "grouped log")).await?;
    let log =
        a.insert_log(&NewLog { job_group: g, job_id, trigger_time: at("2030-01-01T00:00:00Z") }).await?;
    let found = b.log_groups(&[log, LogId(i64::MAX)]).await?;
    ensure!(found == [(log, g)], "{found:?}");
    ensure!(a.delete_job(job_id).await?);
    Ok(())
}

/// The runs of a group in flight ahead of a log (the group cap): its own group's logs with a
/// smaller id, not yet answered or accepted, without a result; failed triggers and finished runs
/// do not count.
async fn running_ahead(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let (g, other) = (group(&**a, "cap-app").await?, group(&**a, "cap-other").await?);
    let (job_id, other_job) =
        (a.add_job(&job(g, "capped")).await?, a.add_job(&job(other, "uncapped")).await?);
    let mut logs = Vec::new();
    for _ in 0..5 {
        logs.push(
            a.insert_log(&NewLog { job_group: g, job_id, trigger_time: at("2030-01-01T00:00:00Z") }).await?,
        );
    }
    a.insert_log(&NewLog { job_group: other, job_id: other_job, trigger_time: at("2030-01-01T00:00:00Z") })
        .await?;
    a.update_log_trigger(&triggered(logs[0], 200, "http://a/")).await?; // running
    a.update_log_trigger(&triggered(logs[1], 500, "http://a/")).await?; // failed trigger
    a.update_log_trigger(&triggered(logs[2], 200, "http://a/")).await?;
    a.apply_handle_result(&result(logs[2], 200, None)).await?; // finished
    // logs[3] is being triggered (trigger_code 0); logs[4] asks.
    let now = at("2030-01-01T00:00:00Z");
    ensure!(b.running_ahead(g, logs[4], now).await? == 2, "logs 0 and 3 are ahead");
    ensure!(b.running_ahead(g, logs[1], now).await? == 1, "only smaller ids count");
    ensure!(b.running_ahead(other, LogId(i64::MAX), now).await? == 1, "per group");
    // A row the pre-read staged for a later second is not running yet.
    let staged =
        a.insert_log(&NewLog { job_group: g, job_id, trigger_time: at("2030-01-01T00:00:04Z") }).await?;
    let last = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: now }).await?;
    ensure!(b.running_ahead(g, last, now).await? == 3, "logs 0, 3 and 4; not the staged one");
    ensure!(b.running_ahead(g, last, at("2030-01-01T00:00:04Z")).await? == 4, "its second has come");
    ensure!(staged.0 > 0);
    ensure!(a.delete_job(job_id).await? && a.delete_job(other_job).await?);
    ensure!(a.delete_group(g).await? && a.delete_group(other).await?);
    Ok(())
}

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    let g = group(&*admins.a, "logs-app").await?;
    let job_id = admins.a.add_job(&job(g, "logged job")).await?;
    trigger_and_callback(admins, g, job_id).await?;
    log_groups(admins, g).await?;
    crate::store::log_pieces::check(admins, g).await?;
    crate::store::flights::check(admins, g).await?;
    crate::store::approvals::check(admins, g).await?;
    running_ahead(admins).await?;
    list_filters(admins, g, job_id).await?;
    alarms(admins, g, job_id).await?;
    lost(admins, g, job_id).await?;
    clear(admins, g, job_id).await?;
    report(admins, g, job_id).await?;
    admins.a.delete_job(job_id).await?;
    admins.a.delete_group(g).await?;
    Ok(())
}

fn triggered(log_id: LogId, code: i32, address: &str) -> LogTriggerUpdate {
    LogTriggerUpdate {
        log_id,
        trigger_time: at("2030-01-01T00:00:00Z"),
        trigger_code: code,
        trigger_msg: Some("触发调度：<br>address：x".to_owned()),
        executor_address: Some(address.to_owned()),
        executor_handler: Some("demoJobHandler".to_owned()),
        executor_param: Some("param".to_owned()),
        executor_sharding_param: Some("0/2".to_owned()),
        executor_fail_retry_count: 2,
    }
}

fn result(log_id: LogId, code: i32, msg: Option<&str>) -> HandleResult {
    HandleResult {
        log_id,
        handle_time: at("2030-01-01T00:00:07.750Z"),
        handle_code: code,
        handle_msg: msg.map(str::to_owned),
    }
}

async fn trigger_and_callback(Admins { a, b }: &Admins, g: GroupId, job_id: JobId) -> anyhow::Result<()> {
    let t = at("2030-01-01T00:00:00Z");
    let id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: t }).await?;
    let fresh = b.load_log(id).await?.expect("inserted log");
    ensure!(fresh.trigger_code == 0 && fresh.handle_code == 0 && fresh.alarm_status == 0);
    ensure!(fresh.trigger_time == Some(t) && fresh.handle_time.is_none());
    ensure!(fresh.job_group == g && fresh.job_id == job_id && fresh.executor_address.is_none());

    ensure!(a.update_log_trigger(&triggered(id, 200, "http://e:9999/")).await?);
    let sent = b.load_log(id).await?.expect("log");
    ensure!(sent.trigger_code == 200 && sent.executor_sharding_param.as_deref() == Some("0/2"));
    ensure!(sent.trigger_msg.as_deref() == Some("触发调度：<br>address：x"));
    ensure!(sent.executor_fail_retry_count == 2 && sent.executor_param.as_deref() == Some("param"));
    ensure!(!a.update_log_trigger(&triggered(LogId(i64::MAX), 200, "x")).await?);

    ensure!(a.apply_handle_result(&result(LogId(i64::MAX), 200, None)).await? == HandleOutcome::NotFound);
    let applied = a.apply_handle_result(&result(id, 200, Some("done"))).await?;
    let HandleOutcome::Applied(row) = applied else { anyhow::bail!("not applied: {applied:?}") };
    ensure!(row.handle_code == 200 && row.handle_msg == "done" && row.job_id == job_id);
    ensure!(row.handle_time == at("2030-01-01T00:00:07Z"));
    // The answer is what was stored, without reading the row back.
    let stored = b.load_log(id).await?.expect("log");
    ensure!(stored.handle_time == Some(row.handle_time) && stored.handle_msg.as_deref() == Some("done"));
    ensure!(b.apply_handle_result(&result(id, 500, Some("late"))).await? == HandleOutcome::Repeated);
    ensure!(b.load_log(id).await?.expect("log").handle_code == 200, "repeat ignored");

    // complete(): the final write, unguarded, message cut to upstream's limit.
    let long = "界".repeat(MAX_HANDLE_MSG_CHARS + 10);
    ensure!(a.complete_log(&result(id, 200, Some(&long))).await?);
    let completed = b.load_log(id).await?.expect("log");
    ensure!(completed.handle_msg.map(|m| m.chars().count()) == Some(MAX_HANDLE_MSG_CHARS));
    ensure!(!a.complete_log(&result(LogId(i64::MAX), 200, None)).await?);

    // An old message gets the callback's appended after "<br>" (kill/lost flows write first).
    let other = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: t }).await?;
    let mut with_msg = result(other, 0, Some("first"));
    with_msg.handle_code = 0;
    a.complete_log(&with_msg).await?;
    let applied = b.apply_handle_result(&result(other, 502, Some("timeout"))).await?;
    let HandleOutcome::Applied(row) = applied else { anyhow::bail!("not applied: {applied:?}") };
    ensure!(row.handle_msg == "first<br>timeout" && row.handle_code == 502);

    // Two admins racing callbacks for one log: exactly one applies.
    for round in 0..10 {
        let id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: t }).await?;
        let (ra, rb) = tokio::join!(
            spawn_apply(a.clone(), result(id, 200, Some("a"))),
            spawn_apply(b.clone(), result(id, 500, Some("b"))),
        );
        let (ra, rb) = (ra?, rb?);
        let applied = [&ra, &rb].iter().filter(|o| matches!(o, HandleOutcome::Applied(_))).count();
        let repeated = [&ra, &rb].iter().filter(|o| **o == &HandleOutcome::Repeated).count();
        ensure!(applied == 1 && repeated == 1, "round {round}: {ra:?} / {rb:?}");
        let stored = a.load_log(id).await?.expect("log");
        let msg = stored.handle_msg.unwrap_or_default();
        ensure!(msg == "a" || msg == "b", "one writer's message only: {msg:?}");
    }
    Ok(())
}

async fn spawn_apply(
    store: std::sync::Arc<dyn jobwheel_admin::store::Store>,
    result: HandleResult,
) -> anyhow::Result<HandleOutcome> {
    Ok(tokio::spawn(async move { store.apply_handle_result(&result).await }).await??)
}

async fn list_filters(Admins { a, b }: &Admins, g: GroupId, _job_id: JobId) -> anyhow::Result<()> {
    // A job of its own so the earlier checks' logs do not count.
    let job_id_2 = a.add_job(&job(g, "listed job")).await?;
    let day = |d: u32| at(&format!("2031-03-{d:02}T12:00:00Z"));
    let mut ids = Vec::new();
    // (trigger code, handle code) → success, trigger failed, running, handle failed, just inserted.
    for (i, (tc, hc)) in [(200, 200), (500, 0), (200, 0), (200, 502), (0, 0)].into_iter().enumerate() {
        let d = u32::try_from(i)? + 1;
        let id = a.insert_log(&NewLog { job_group: g, job_id: job_id_2, trigger_time: day(d) }).await?;
        let mut update = triggered(id, tc, "http://e:1/");
        update.trigger_time = day(d);
        a.update_log_trigger(&update).await?;
        if hc != 0 {
            a.complete_log(&result(id, hc, Some("r"))).await?;
        }
        ids.push(id);
    }
    let list = |status: LogStatusFilter| {
        let filter = LogFilter { job_id: Some(job_id_2), status, ..LogFilter::default() };
        async move {
            let page = b.page_logs(&filter, Page { offset: 0, limit: 50 }).await?;
            anyhow::Ok((page.total, page.rows.into_iter().map(|r| r.id).collect::<Vec<_>>()))
        }
    };
    ensure!(list(LogStatusFilter::All).await? == (5, vec![ids[4], ids[3], ids[2], ids[1], ids[0]]));
    ensure!(list(LogStatusFilter::Success).await? == (1, vec![ids[0]]));
    ensure!(list(LogStatusFilter::Failed).await? == (2, vec![ids[3], ids[1]]));
    ensure!(list(LogStatusFilter::Running).await? == (1, vec![ids[2]]));
    ensure!(LogStatusFilter::from_code(-1) == LogStatusFilter::All);
    ensure!(LogStatusFilter::from_code(2) == LogStatusFilter::Failed);

    let ranged = LogFilter {
        job_group: Some(g),
        job_id: Some(job_id_2),
        trigger_from: Some(day(2)),
        trigger_to: Some(day(4)),
        ..LogFilter::default()
    };
    let page = b.page_logs(&ranged, Page { offset: 1, limit: 1 }).await?;
    ensure!(page.total == 3 && page.rows.len() == 1 && page.rows[0].id == ids[2], "{page:?}");
    // Part of the executor address, in any case.
    let by_address = |address: &str| LogFilter {
        job_id: Some(job_id_2),
        executor_address: Some(address.to_owned()),
        ..LogFilter::default()
    };
    ensure!(b.page_logs(&by_address("E:1"), Page { offset: 0, limit: 50 }).await?.total == 5);
    ensure!(b.page_logs(&by_address("e:2"), Page { offset: 0, limit: 50 }).await?.total == 0);
    let other_group = LogFilter { job_group: Some(GroupId(g.0 + 1000)), ..LogFilter::default() };
    ensure!(b.page_logs(&other_group, Page { offset: 0, limit: 5 }).await?.total == 0);
    a.delete_job(job_id_2).await?;
    Ok(())
}

async fn alarms(Admins { a, b }: &Admins, g: GroupId, job_id: JobId) -> anyhow::Result<()> {
    let t = at("2030-06-01T00:00:00Z");
    let mut failed = Vec::new();
    // Every class of upstream's failure test: failed trigger, failed or timed-out run, success,
    // running, not yet triggered, and a success whose trigger code says otherwise.
    for (tc, hc) in
        [(500, 0), (200, 500), (200, 200), (200, 0), (0, 0), (200, 502), (500, 200), (-1, 0), (200, -1)]
    {
        let id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: t }).await?;
        a.update_log_trigger(&triggered(id, tc, "http://e:1/")).await?;
        if hc != 0 {
            a.complete_log(&result(id, hc, None)).await?;
        }
        if hc != 200 && !(hc == 0 && (tc == 0 || tc == 200)) {
            failed.push(id);
        }
    }
    let found = b.failed_log_ids(1000).await?;
    let ours: Vec<LogId> = found.iter().copied().filter(|id| failed.contains(id)).collect();
    ensure!(ours == failed, "failed logs by id: {found:?} vs {failed:?}");
    ensure!(b.failed_log_ids(1).await?.len() == 1, "limit");

    // jobwheel's parking until a retry is due: one admin parks each log, then the due ones are
    // read by due time (not id) and taken by one admin only.
    let (late, early) = (failed[0], failed[1]);
    let (pa, pb) = tokio::join!(a.defer_failure(late, 5_000), b.defer_failure(late, 5_000));
    ensure!(pa? ^ pb?, "exactly one admin parks log {late}");
    ensure!(a.defer_failure(early, 2_000).await?);
    ensure!(b.load_log(late).await?.expect("log").alarm_status == -2);
    let listed = b.failed_log_ids(1000).await?;
    ensure!(
        !listed.contains(&late) && !listed.contains(&early),
        "parked logs leave the scan of new failures"
    );
    ensure!(b.due_failure_ids(1_999, 10).await?.is_empty(), "nothing due yet");
    ensure!(b.due_failure_ids(5_000, 10).await? == [early, late], "earliest due first");
    ensure!(b.due_failure_ids(5_000, 1).await? == [early], "limit");
    for id in [early, late] {
        let (wa, wb) = tokio::join!(a.claim_due_failure(id), b.claim_due_failure(id));
        ensure!(wa? ^ wb?, "exactly one admin takes parked log {id}");
        ensure!(b.load_log(id).await?.expect("log").alarm_status == -1);
        ensure!(a.finish_alarm(id, 2).await?);
    }
    ensure!(b.due_failure_ids(i64::MAX, 10).await?.is_empty(), "taken logs leave the queue");
    ensure!(!a.defer_failure(late, 9_000).await?, "a handled log is not parked again");
    failed.retain(|id| ![late, early].contains(id));

    // Two admins' fail monitors race for each failed log: one wins, the other skips it.
    for &id in &failed {
        let (wa, wb) = tokio::join!(a.claim_alarm(id), b.claim_alarm(id));
        ensure!(wa? ^ wb?, "exactly one admin claims log {id}");
        ensure!(b.load_log(id).await?.expect("log").alarm_status == -1);
        ensure!(!b.failed_log_ids(1000).await?.contains(&id), "claimed logs are not listed again");
        ensure!(a.finish_alarm(id, 2).await?);
        ensure!(!a.finish_alarm(id, 3).await?, "only a locked alarm can be finished");
        ensure!(b.load_log(id).await?.expect("log").alarm_status == 2);
    }
    ensure!(!a.claim_alarm(failed[0]).await?);
    Ok(())
}

async fn lost(Admins { a, b }: &Admins, g: GroupId, job_id: JobId) -> anyhow::Result<()> {
    let old = at("2032-01-01T00:00:00Z");
    let cutoff = at("2032-01-01T00:10:00Z");
    let make = |address: &'static str, time| async move {
        let id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: time }).await?;
        let mut update = triggered(id, 200, address);
        update.trigger_time = time;
        a.update_log_trigger(&update).await?;
        anyhow::Ok(id)
    };
    let gone = make("http://gone:1/", old).await?;
    let registered = make("http://alive:1/", old).await?;
    let recent = make("http://gone:1/", at("2032-01-01T00:30:00Z")).await?;
    let at_cutoff = make("http://gone:1/", cutoff).await?;
    let finished = make("http://gone:1/", old).await?;
    a.complete_log(&result(finished, 200, None)).await?;
    let key = RegistryKey {
        registry_group: "EXECUTOR".to_owned(),
        registry_key: "logs-app".to_owned(),
        registry_value: "http://alive:1/".to_owned(),
    };
    a.registry_upsert(&key, old).await?;
    let lost = b.lost_log_ids(cutoff).await?;
    ensure!(lost.contains(&gone) && lost.contains(&at_cutoff), "{lost:?}");
    for id in [registered, recent, finished] {
        ensure!(!lost.contains(&id), "{id} is not lost: {lost:?}");
    }
    a.registry_remove(&key).await?;

    // Stalled: never triggered (code 0) and no result, at or before the cut-off.
    let stalled = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: old }).await?;
    let fresh =
        a.insert_log(&NewLog { job_group: g, job_id, trigger_time: at("2032-01-01T00:30:00Z") }).await?;
    let answered = a.insert_log(&NewLog { job_group: g, job_id, trigger_time: old }).await?;
    a.complete_log(&result(answered, 200, None)).await?;
    let found = b.stalled_log_ids(cutoff).await?;
    ensure!(found.contains(&stalled), "{found:?}");
    for id in [fresh, answered, gone, finished] {
        ensure!(!found.contains(&id), "{id} is not stalled: {found:?}");
    }
    Ok(())
}

async fn clear(Admins { a, b }: &Admins, g: GroupId, _job_id: JobId) -> anyhow::Result<()> {
    let job_x = a.add_job(&job(g, "clear x")).await?;
    let job_y = a.add_job(&job(g, "clear y")).await?;
    let base = at("2033-01-01T00:00:00Z");
    for i in 0..2_205_i64 {
        let trigger_time = base + Duration::minutes(i);
        a.insert_log(&NewLog { job_group: g, job_id: job_x, trigger_time }).await?;
    }
    for i in 0..3 {
        let trigger_time = base + Duration::minutes(i);
        a.insert_log(&NewLog { job_group: g, job_id: job_y, trigger_time }).await?;
    }
    let count = |job: JobId| async move {
        let filter = LogFilter { job_id: Some(job), ..LogFilter::default() };
        anyhow::Ok(b.page_logs(&filter, Page { offset: 0, limit: 1 }).await?.total)
    };
    // Keep the newest 1 000 of job x: 1 205 go, in two batches of the delete loop.
    let keep = LogClearType::KeepNewest1k.to_clear(base, Some(g), Some(job_x));
    ensure!(
        keep == LogClear {
            job_group: Some(g),
            job_id: Some(job_x),
            trigger_before: None,
            keep_newest: 1_000
        }
    );
    ensure!(a.clear_logs(&keep).await? == 1_205);
    ensure!(count(job_x).await? == 1_000 && count(job_y).await? == 3);
    let oldest = b
        .page_logs(&LogFilter { job_id: Some(job_x), ..LogFilter::default() }, Page { offset: 999, limit: 1 })
        .await?;
    ensure!(oldest.rows[0].trigger_time == Some(base + Duration::minutes(1_205)), "the oldest went");

    // Retention: everything triggered at or before a time, any job (earlier checks' logs too).
    let cutoff = base + Duration::minutes(1_206);
    let older = LogFilter { trigger_to: Some(cutoff), ..LogFilter::default() };
    let expected = b.page_logs(&older, Page { offset: 0, limit: 1 }).await?.total;
    ensure!(expected >= 2 + 3, "two of x, all three of y, and older logs");
    let retention = LogClear { trigger_before: Some(cutoff), ..LogClear::default() };
    ensure!(a.clear_logs(&retention).await? == expected);
    ensure!(b.page_logs(&older, Page { offset: 0, limit: 1 }).await?.total == 0);
    ensure!(count(job_y).await? == 0);

    let month = LogClearType::from_code(1).expect("type 1").to_clear(base, Some(g), None);
    ensure!(month.trigger_before == Some(at("2032-12-01T00:00:00Z")) && month.keep_newest == 0);
    ensure!(
        LogClearType::from_code(4).map(|t| t.to_clear(base, None, None).trigger_before)
            == Some(Some(at("2032-01-01T00:00:00Z")))
    );
    ensure!(LogClearType::from_code(0).is_none() && LogClearType::from_code(10).is_none());
    ensure!(a.clear_logs(&month).await? == 0, "nothing that old");
    let all = LogClearType::from_code(9).expect("type 9").to_clear(base, Some(g), Some(job_x));
    ensure!(a.clear_logs(&all).await? == 998);
    ensure!(count(job_x).await? == 0);
    a.delete_job(job_x).await?;
    a.delete_job(job_y).await?;
    Ok(())
}

async fn report(Admins { a, b }: &Admins, g: GroupId, job_id: JobId) -> anyhow::Result<()> {
    let day = at("2034-05-06T00:00:00Z");
    let end = day + Duration::days(1) - Duration::seconds(1);
    for (offset, tc, hc) in [(1, 200, 200), (2, 200, 200), (3, 200, 0), (4, 500, 0), (5, 200, 500)] {
        let trigger_time = day + Duration::hours(offset);
        let id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time }).await?;
        let mut update = triggered(id, tc, "http://e:1/");
        update.trigger_time = trigger_time;
        a.update_log_trigger(&update).await?;
        if hc != 0 {
            a.complete_log(&result(id, hc, None)).await?;
        }
    }
    // A log the next day must not count.
    a.insert_log(&NewLog { job_group: g, job_id, trigger_time: end + Duration::seconds(1) }).await?;
    let counts = b.log_counts(day, end).await?;
    ensure!(counts == LogCounts { total: 5, running: 1, success: 2 }, "{counts:?}");
    ensure!(counts.failed() == 2);
    ensure!(
        b.log_counts(at("1990-01-01T00:00:00Z"), at("1990-01-02T00:00:00Z")).await? == LogCounts::default()
    );

    let report = LogReport {
        trigger_day: day,
        running_count: 1,
        suc_count: 2,
        fail_count: 2,
        update_time: at("2034-05-06T01:00:00Z"),
    };
    a.upsert_log_report(&report).await?;
    let next_day = LogReport { trigger_day: day + Duration::days(1), suc_count: 7, ..report };
    b.upsert_log_report(&next_day).await?;
    // The upsert replaces the day's counts (unique i_trigger_day).
    let updated =
        LogReport { running_count: 0, suc_count: 3, update_time: at("2034-05-06T02:00:00Z"), ..report };
    a.upsert_log_report(&updated).await?;
    let rows = b.log_reports(day, day + Duration::days(2)).await?;
    ensure!(rows.len() == 2, "{rows:?}");
    ensure!(rows[0].trigger_day == Some(day) && rows[0].running_count == 0 && rows[0].suc_count == 3);
    ensure!(rows[0].fail_count == 2 && rows[0].update_time == Some(at("2034-05-06T02:00:00Z")));
    ensure!(rows[1].trigger_day == Some(day + Duration::days(1)) && rows[1].suc_count == 7);
    ensure!(b.log_reports(day, day).await?.len() == 1, "bounds are inclusive");
    let totals = b.log_report_totals().await?;
    ensure!(totals.running == 1 && totals.success == 10 && totals.failed == 4, "{totals:?}");
    Ok(())
}
