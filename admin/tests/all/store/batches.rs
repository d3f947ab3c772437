//! Contract checks for the batch methods of the trigger and callback paths: each must answer
//! exactly what its single-row counterpart would, row by row and in input order — including
//! duplicates within one batch, rows that are missing or already consumed, and two admins
//! racing the same batch.

use std::collections::BTreeSet;

use anyhow::ensure;
use jobwheel_admin::store::{
    ClaimId, GroupId, HandleOutcome, HandleResult, JobId, LogId, LogTriggerUpdate, NewClaim, NewLog,
};

use crate::store::{Admins, at, group, job};

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    let g = group(&*admins.a, "batch-app").await?;
    let j = admins.a.add_job(&job(g, "batched")).await?;
    load_jobs(admins, g, j).await?;
    claimed_logs(admins, g, j).await?;
    claim_batch_race(admins, g, j).await?;
    trigger_updates(admins, g, j).await?;
    handle_results(admins, g, j).await?;
    admins.a.delete_job(j).await?;
    Ok(())
}

async fn load_jobs(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let k = a.add_job(&job(g, "second")).await?;
    let rows = b.load_jobs(&[j, JobId(i32::MAX), k, j]).await?;
    let ids: BTreeSet<i32> = rows.iter().map(|r| r.id.0).collect();
    ensure!(ids == BTreeSet::from([j.0, k.0]), "existing jobs only: {ids:?}");
    let single = b.load_job(k).await?.expect("job");
    ensure!(rows.contains(&single), "the same row as load_job");
    ensure!(b.load_jobs(&[]).await?.is_empty());
    a.delete_job(k).await?;
    Ok(())
}

async fn claims(store: &dyn jobwheel_admin::store::Store, j: JobId, n: i64) -> anyhow::Result<Vec<ClaimId>> {
    let mut tx = store.begin_schedule().await?;
    let new: Vec<NewClaim> = (0..n)
        .map(|i| NewClaim { job_id: j, fire_time_ms: 2_000_000_000_000 + i, claimed_at_ms: 0 })
        .collect();
    let ids = tx.insert_claims(&new).await?;
    tx.commit().await?;
    Ok(ids)
}

async fn claimed_logs(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let ids = claims(&**a, j, 4).await?;
    let log = NewLog { job_group: g, job_id: j, trigger_time: at("2035-01-01T00:00:01Z") };
    ensure!(b.consume_claim_and_insert_log(ids[1], &log).await?.is_some());
    ensure!(a.discard_claim(ids[2]).await?);
    let batch =
        [(ids[0], log), (ids[1], log), (ids[2], log), (ids[3], log), (ids[0], log), (ClaimId(i64::MAX), log)];
    let got = a.consume_claims_and_insert_logs(&batch).await?;
    ensure!(got.len() == batch.len(), "one answer per item: {got:?}");
    let fired: Vec<bool> = got.iter().map(Option::is_some).collect();
    ensure!(fired == [true, false, false, true, false, false], "pending claims fire once: {got:?}");
    for log_id in got.iter().flatten() {
        let row = b.load_log(*log_id).await?.expect("log inserted with the claim");
        ensure!(row.job_id == j && row.job_group == g && row.trigger_code == 0 && row.handle_code == 0);
        ensure!(row.trigger_time == Some(log.trigger_time));
    }
    ensure!(got[0] != got[3], "distinct logs");
    ensure!(a.pending_claims(i64::MAX).await?.is_empty(), "nothing left pending");
    ensure!(b.consume_claims_and_insert_logs(&[]).await?.is_empty());
    Ok(())
}

async fn claim_batch_race(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let ids = claims(&**a, j, 40).await?;
    let log = NewLog { job_group: g, job_id: j, trigger_time: at("2035-01-01T00:00:02Z") };
    let items: Vec<(ClaimId, NewLog)> = ids.iter().map(|id| (*id, log)).collect();
    let (first, second) = (items.clone(), items.iter().rev().copied().collect::<Vec<_>>());
    let (a2, b2) = (a.clone(), b.clone());
    let (ra, rb) = tokio::join!(
        tokio::spawn(async move { a2.consume_claims_and_insert_logs(&first).await }),
        tokio::spawn(async move { b2.consume_claims_and_insert_logs(&second).await }),
    );
    let (ra, rb) = (ra??, rb??);
    let fired_by_a: Vec<bool> = ra.iter().map(Option::is_some).collect();
    let fired_by_b: Vec<bool> = rb.iter().rev().map(Option::is_some).collect();
    for (i, (fa, fb)) in fired_by_a.iter().zip(&fired_by_b).enumerate() {
        ensure!(fa != fb, "claim {i} fired by exactly one admin: a {fa}, b {fb}");
    }
    Ok(())
}

fn update(log_id: LogId, code: i32, address: &str) -> LogTriggerUpdate {
    LogTriggerUpdate {
        log_id,
        trigger_time: at("2030-01-01T00:00:03Z"),
        trigger_code: code,
        trigger_msg: Some(format!("触发调度：<br>{address}")),
        executor_address: Some(address.to_owned()),
        executor_handler: Some("demoJobHandler".to_owned()),
        executor_param: Some(format!("param {code}")),
        executor_sharding_param: (code == 500).then(|| "1/2".to_owned()),
        executor_fail_retry_count: code / 100,
    }
}

async fn trigger_updates(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let t = at("2030-01-01T00:00:00Z");
    let x = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    let y = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    let updates = [
        update(x, 200, "http://x:9999/"),
        update(LogId(i64::MAX), 200, "none"),
        update(y, 500, "http://y:9999/"),
    ];
    ensure!(b.update_log_triggers(&updates).await? == [true, false, true]);
    for (id, expected) in [(x, &updates[0]), (y, &updates[2])] {
        let row = a.load_log(id).await?.expect("log");
        ensure!(row.trigger_code == expected.trigger_code && row.trigger_msg == expected.trigger_msg);
        ensure!(
            row.executor_address == expected.executor_address
                && row.executor_param == expected.executor_param
        );
        ensure!(row.executor_sharding_param == expected.executor_sharding_param);
        ensure!(row.executor_fail_retry_count == expected.executor_fail_retry_count);
        ensure!(row.trigger_time == Some(expected.trigger_time) && row.handle_code == 0);
    }
    ensure!(b.update_log_triggers(&[]).await?.is_empty());
    Ok(())
}

fn result(log_id: LogId, code: i32, msg: &str) -> HandleResult {
    HandleResult {
        log_id,
        handle_time: at("2030-01-01T00:00:09Z"),
        handle_code: code,
        handle_msg: Some(msg.to_owned()),
    }
}

async fn handle_results(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let t = at("2030-01-01T00:00:00Z");
    let fresh = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    let done = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    let noted = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    ensure!(matches!(a.apply_handle_result(&result(done, 200, "earlier")).await?, HandleOutcome::Applied(_)));
    // A message written before the result (kill/lost flows) gets the callback's appended.
    let mut note = result(noted, 0, "first");
    note.handle_code = 0;
    a.complete_log(&note).await?;

    let batch = [
        result(fresh, 200, "ok"),
        result(done, 500, "late"),
        result(LogId(i64::MAX), 200, "nobody"),
        result(noted, 502, "timeout"),
    ];
    let got = b.apply_handle_results(&batch).await?;
    ensure!(got.len() == batch.len(), "one outcome per result: {got:?}");
    let HandleOutcome::Applied(row) = &got[0] else { anyhow::bail!("not applied: {:?}", got[0]) };
    ensure!(row.id == fresh && row.handle_code == 200 && row.handle_msg == "ok");
    ensure!(row.handle_time == at("2030-01-01T00:00:09Z") && row.job_id == j);
    // The answer is what was stored, without reading the row back.
    let stored = a.load_log(fresh).await?.expect("log");
    ensure!(stored.handle_time == Some(row.handle_time) && stored.handle_msg.as_deref() == Some("ok"));
    ensure!(got[1] == HandleOutcome::Repeated && got[2] == HandleOutcome::NotFound);
    let HandleOutcome::Applied(row) = &got[3] else { anyhow::bail!("not applied: {:?}", got[3]) };
    ensure!(row.handle_msg == "first<br>timeout" && row.handle_code == 502);
    ensure!(a.load_log(done).await?.expect("log").handle_msg.as_deref() == Some("earlier"));

    // One log twice in a batch: the first result wins, the second is a repeat.
    let twice = a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?;
    let got = b.apply_handle_results(&[result(twice, 200, "first"), result(twice, 500, "second")]).await?;
    ensure!(matches!(got[0], HandleOutcome::Applied(_)) && got[1] == HandleOutcome::Repeated, "{got:?}");
    ensure!(a.load_log(twice).await?.expect("log").handle_msg.as_deref() == Some("first"));

    // Two admins applying the same batch at once: each log gets exactly one result.
    let ids: Vec<LogId> = {
        let mut ids = Vec::new();
        for _ in 0..20 {
            ids.push(a.insert_log(&NewLog { job_group: g, job_id: j, trigger_time: t }).await?);
        }
        ids
    };
    let from_a: Vec<HandleResult> = ids.iter().map(|id| result(*id, 200, "a")).collect();
    let from_b: Vec<HandleResult> = ids.iter().rev().map(|id| result(*id, 500, "b")).collect();
    let (a2, b2) = (a.clone(), b.clone());
    let (ra, rb) = tokio::join!(
        tokio::spawn(async move { a2.apply_handle_results(&from_a).await }),
        tokio::spawn(async move { b2.apply_handle_results(&from_b).await }),
    );
    let (ra, rb) = (ra??, rb??);
    for (i, id) in ids.iter().enumerate() {
        let by_a = matches!(ra[i], HandleOutcome::Applied(_));
        let by_b = matches!(rb[ids.len() - 1 - i], HandleOutcome::Applied(_));
        ensure!(by_a != by_b, "log {id} applied by exactly one admin: a {by_a}, b {by_b}");
        let stored = a.load_log(*id).await?.expect("log").handle_msg.unwrap_or_default();
        ensure!(stored == if by_a { "a" } else { "b" }, "the winner's message: {stored:?}");
    }
    Ok(())
}
