//! Contract checks for the pre-read transaction under the schedule lock and the durable ring
//! claims, including two admins racing for the lock and for the same claim.

use std::sync::Arc;

use anyhow::ensure;
use jobwheel_admin::store::prelude::*;
use jobwheel_admin::store::{
    BackoffStrategy, ClaimId, ClaimStatus, GroupId, JobFilter, JobId, LogFilter, NewClaim, NewLog, Page,
    RetryBackoff, TriggerTimeUpdate,
};
use tokio::sync::oneshot;

use crate::store::{Admins, at, group, job};

/// Epoch ms of the pre-reads below (2035-01-01T00:00:00Z).
const T: i64 = 2_051_222_400_000;

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    let g = group(&*admins.a, "schedule-app").await?;
    pre_read(admins, g).await?;
    batch_update(admins, g).await?;
    claims(admins, g).await?;
    claim_race(admins, g).await?;
    lock_race(admins, g).await?;
    job_zones(admins, g).await?;
    job_retry_backoffs(admins, g).await?;
    Ok(())
}

/// jobwheel's per-job retry backoff: none by default, set, replaced, cleared, nothing for a
/// missing job, gone with the job (a new job with the id would not inherit it).
async fn job_retry_backoffs(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let job = running_job(&**a, g, "backoff", T).await?;
    ensure!(a.job_retry_backoff(job).await?.is_none(), "the admin's default unless set");
    a.set_job_retry_backoff(job, Some(RetryBackoff::fixed(30))).await?;
    ensure!(b.job_retry_backoff(job).await? == Some(RetryBackoff::fixed(30)));
    let doubling = RetryBackoff {
        strategy: BackoffStrategy::Exponential,
        base_secs: 10,
        max_secs: 86_400,
        jitter_pct: 25,
    };
    a.set_job_retry_backoff(job, Some(doubling)).await?;
    ensure!(b.job_retry_backoff(job).await? == Some(doubling), "replaced, not duplicated, every field kept");
    a.set_job_retry_backoff(job, None).await?;
    ensure!(b.job_retry_backoff(job).await?.is_none(), "cleared");
    let missing = JobId(i32::MAX);
    a.set_job_retry_backoff(missing, Some(RetryBackoff::fixed(5))).await?;
    ensure!(a.job_retry_backoff(missing).await?.is_none(), "no row for a job that does not exist");
    a.set_job_retry_backoff(job, Some(RetryBackoff::fixed(7))).await?;
    ensure!(a.delete_job(job).await?);
    ensure!(a.job_retry_backoff(job).await?.is_none(), "deleted with its job");
    Ok(())
}

/// jobwheel's per-job time zone: set, replaced, cleared, seen by `due_jobs` and `load_job`
/// (the scheduler's two reads), absent from the job list, gone with the job.
async fn job_zones(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let zoned = running_job(&**a, g, "zoned", T).await?;
    let plain = running_job(&**a, g, "plain", T).await?;
    ensure!(a.load_job(zoned).await?.expect("job").time_zone.is_none(), "no zone by default");

    a.set_job_time_zone(zoned, Some("America/New_York")).await?;
    ensure!(b.load_job(zoned).await?.expect("job").time_zone.as_deref() == Some("America/New_York"));
    a.set_job_time_zone(zoned, Some("Asia/Shanghai")).await?;
    let mut tx = b.begin_schedule().await?;
    let due: Vec<(JobId, Option<String>)> = tx
        .due_jobs(T, 1000)
        .await?
        .into_iter()
        .filter(|r| [zoned, plain].contains(&r.id))
        .map(|r| (r.id, r.time_zone))
        .collect();
    tx.commit().await?;
    ensure!(
        due == [(zoned, Some("Asia/Shanghai".to_owned())), (plain, None)],
        "due_jobs carries each job's zone (replaced, not duplicated): {due:?}"
    );
    let page = a.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 100 }).await?;
    ensure!(page.rows.iter().all(|r| r.time_zone.is_none()), "the job list does not read zones");

    a.set_job_time_zone(zoned, None).await?;
    ensure!(a.load_job(zoned).await?.expect("job").time_zone.is_none(), "cleared");
    a.set_job_time_zone(zoned, None).await?;

    // A job that does not exist gets no row: setting a zone for it is a no-op.
    let missing = JobId(i32::MAX);
    a.set_job_time_zone(missing, Some("Europe/Berlin")).await?;
    ensure!(a.load_job(missing).await?.is_none());

    a.set_job_time_zone(zoned, Some("Europe/Berlin")).await?;
    ensure!(a.delete_job(zoned).await?, "deleting a job with a zone");
    ensure!(a.load_job(zoned).await?.is_none());
    a.delete_job(plain).await?;
    Ok(())
}

pub(crate) async fn running_job(
    store: &dyn Store,
    g: GroupId,
    desc: &str,
    next: i64,
) -> anyhow::Result<JobId> {
    let mut j = job(g, desc);
    j.trigger_status = 1;
    j.trigger_next_time = next;
    Ok(store.add_job(&j).await?)
}

async fn pre_read(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let due = running_job(&**a, g, "due", T).await?;
    let soon = running_job(&**a, g, "in window", T + 3_000).await?;
    let later = running_job(&**a, g, "later", T + 60_000).await?;
    let mut stopped = job(g, "stopped");
    stopped.trigger_next_time = T;
    let stopped = a.add_job(&stopped).await?;

    // Dropping the transaction rolls back the pre-read and releases the lock.
    {
        let mut tx = a.begin_schedule().await?;
        let update =
            TriggerTimeUpdate { job_id: due, trigger_last_time: T, trigger_next_time: T + 1, stop: false };
        ensure!(tx.update_trigger_times(&[update]).await? == 1);
        tx.insert_claims(&[NewClaim { job_id: due, fire_time_ms: T, claimed_at_ms: T }]).await?;
    }
    ensure!(b.load_job(due).await?.expect("job").job.trigger_next_time == T, "rolled back");
    ensure!(b.pending_claims(i64::MAX).await?.is_empty(), "rolled back");
    // The rolled-back admin writes again at once (on SQLite: its one writer connection is free).
    drop(a.begin_schedule().await?);

    let mut tx = b.begin_schedule().await?;
    let found: Vec<JobId> = tx.due_jobs(T + 5_000, 100).await?.into_iter().map(|r| r.id).collect();
    ensure!(found == [due, soon], "running jobs due within the window, by id: {found:?}");
    let first: Vec<JobId> = tx.due_jobs(T + 5_000, 1).await?.into_iter().map(|r| r.id).collect();
    ensure!(first == [due], "limit");
    let updates = [
        TriggerTimeUpdate { job_id: due, trigger_last_time: T, trigger_next_time: T + 10_000, stop: false },
        TriggerTimeUpdate { job_id: soon, trigger_last_time: T + 3_000, trigger_next_time: 0, stop: true },
        // A job stopped by a user meanwhile is not resurrected (`AND trigger_status = 1`).
        TriggerTimeUpdate { job_id: stopped, trigger_last_time: T, trigger_next_time: T + 5, stop: false },
    ];
    ensure!(tx.update_trigger_times(&updates).await? == 2);
    let claims = [
        NewClaim { job_id: due, fire_time_ms: T, claimed_at_ms: T - 1_000 },
        NewClaim { job_id: soon, fire_time_ms: T + 3_000, claimed_at_ms: T - 1_000 },
    ];
    let ids = tx.insert_claims(&claims).await?;
    ensure!(ids.len() == 2 && ids[0] < ids[1]);
    tx.commit().await?;

    let due_row = a.load_job(due).await?.expect("job").job;
    ensure!(due_row.trigger_status == 1 && due_row.trigger_last_time == T);
    ensure!(due_row.trigger_next_time == T + 10_000);
    let soon_row = a.load_job(soon).await?.expect("job").job;
    ensure!(soon_row.trigger_status == 0 && soon_row.trigger_next_time == 0);
    let stopped_row = a.load_job(stopped).await?.expect("job").job;
    ensure!(stopped_row.trigger_status == 0 && stopped_row.trigger_next_time == T);
    ensure!(a.load_job(later).await?.expect("job").job.trigger_next_time == T + 60_000);

    let pending = a.pending_claims(T + 5_000).await?;
    ensure!(pending.iter().map(|c| c.id).collect::<Vec<_>>() == ids, "{pending:?}");
    ensure!(pending[0].job_id == due && pending[0].fire_time_ms == T);
    ensure!(pending[0].claimed_at_ms == T - 1_000 && pending[0].status == ClaimStatus::Pending);
    ensure!(pending[0].log_id.is_none());
    ensure!(a.pending_claims(T).await?.len() == 1, "up_to is inclusive");
    for id in ids {
        ensure!(a.discard_claim(id).await?);
    }
    ensure!(a.purge_claims(T + 3_001).await? == 2);
    for id in [due, soon, later, stopped] {
        a.delete_job(id).await?;
    }
    Ok(())
}

async fn batch_update(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    // More jobs than one batched UPDATE statement takes.
    let mut ids = Vec::new();
    for i in 0..130 {
        ids.push(running_job(&**a, g, &format!("batch {i}"), T - 1).await?);
    }
    let mut tx = a.begin_schedule().await?;
    ensure!(tx.due_jobs(T, 1_000).await?.len() == 130);
    let updates: Vec<TriggerTimeUpdate> = ids
        .iter()
        .enumerate()
        .map(|(i, &job_id)| TriggerTimeUpdate {
            job_id,
            trigger_last_time: T - 1,
            trigger_next_time: T + i64::try_from(i).unwrap_or(0),
            // Stops in both statements of the batch.
            stop: i % 50 == 7,
        })
        .collect();
    ensure!(tx.update_trigger_times(&updates).await? == 130);
    tx.commit().await?;
    for (i, id) in ids.iter().enumerate() {
        let row = b.load_job(*id).await?.expect("job").job;
        ensure!(row.trigger_next_time == T + i64::try_from(i)? && row.trigger_last_time == T - 1);
        ensure!(row.trigger_status == if i % 50 == 7 { 0 } else { 1 }, "job {i}");
        a.delete_job(*id).await?;
    }
    Ok(())
}

async fn claims(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let j = running_job(&**a, g, "claimed", T + 100_000).await?;
    let mut tx = a.begin_schedule().await?;
    let new = |fire| NewClaim { job_id: j, fire_time_ms: fire, claimed_at_ms: T };
    let ids = tx.insert_claims(&[new(T + 1_000), new(T + 2_000), new(T + 3_000)]).await?;
    tx.commit().await?;
    let log = NewLog { job_group: g, job_id: j, trigger_time: at("2035-01-01T00:00:01Z") };

    let log_id = b.consume_claim_and_insert_log(ids[0], &log).await?.expect("pending claim fires");
    let row = a.load_log(log_id).await?.expect("log inserted with the claim");
    ensure!(row.job_id == j && row.trigger_code == 0 && row.handle_code == 0);
    ensure!(row.trigger_time == Some(log.trigger_time));
    ensure!(a.consume_claim_and_insert_log(ids[0], &log).await?.is_none(), "fires once");
    ensure!(a.consume_claim_and_insert_log(ClaimId(i64::MAX), &log).await?.is_none());

    ensure!(a.discard_claim(ids[1]).await?);
    ensure!(!b.discard_claim(ids[1]).await?);
    ensure!(!b.discard_claim(ids[0]).await?, "a fired claim cannot be discarded");
    ensure!(b.consume_claim_and_insert_log(ids[1], &log).await?.is_none(), "discarded");

    let pending = a.pending_claims(i64::MAX).await?;
    ensure!(pending.len() == 1 && pending[0].id == ids[2], "{pending:?}");
    // Fired and discarded claims older than the cut-off go; pending ones always stay.
    ensure!(a.purge_claims(T + 1_500).await? == 1);
    ensure!(a.purge_claims(i64::MAX).await? == 1);
    ensure!(a.pending_claims(i64::MAX).await?.len() == 1);
    a.delete_job(j).await?;
    ensure!(a.pending_claims(i64::MAX).await?.is_empty(), "claims go with their job");
    Ok(())
}

async fn claim_race(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    const ROUNDS: usize = 25;
    let j = running_job(&**a, g, "raced", T + 100_000).await?;
    let mut tx = a.begin_schedule().await?;
    let claims: Vec<NewClaim> = (0..ROUNDS)
        .map(|i| NewClaim { job_id: j, fire_time_ms: T + i64::try_from(i).unwrap_or(0), claimed_at_ms: T })
        .collect();
    let ids = tx.insert_claims(&claims).await?;
    tx.commit().await?;
    let log = NewLog { job_group: g, job_id: j, trigger_time: at("2035-01-01T00:00:00Z") };
    for id in ids {
        let (ra, rb) = tokio::join!(consume(a.clone(), id, log), consume(b.clone(), id, log));
        let (ra, rb) = (ra?, rb?);
        ensure!(ra.is_some() != rb.is_some(), "exactly one admin fires claim {id}: {ra:?} {rb:?}");
    }
    let filter = LogFilter { job_id: Some(j), ..LogFilter::default() };
    let logs = a.page_logs(&filter, Page { offset: 0, limit: 1 }).await?;
    ensure!(logs.total == ROUNDS as u64, "one log per claim, got {}", logs.total);
    ensure!(a.pending_claims(i64::MAX).await?.is_empty());
    a.delete_job(j).await?;
    Ok(())
}

async fn consume(
    store: Arc<dyn Store>,
    claim: ClaimId,
    log: NewLog,
) -> anyhow::Result<Option<jobwheel_admin::store::LogId>> {
    Ok(tokio::spawn(async move { store.consume_claim_and_insert_log(claim, &log).await }).await??)
}

/// Admin B starts a pre-read while admin A holds the lock: B must see A's committed result,
/// never the job A already took.
async fn lock_race(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let j = running_job(&**a, g, "contended", T).await?;
    for round in 0..5 {
        let next = T + 1_000 * (round + 1);
        let mut tx_a = a.begin_schedule().await?;
        let taken: Vec<JobId> = tx_a.due_jobs(next - 1, 10).await?.into_iter().map(|r| r.id).collect();
        ensure!(taken == [j], "round {round}: {taken:?}");

        let (started_tx, started) = oneshot::channel();
        let b2 = b.clone();
        let contender = tokio::spawn(async move {
            let _ = started_tx.send(());
            let mut tx_b = b2.begin_schedule().await?;
            let seen: Vec<JobId> = tx_b.due_jobs(next - 1, 10).await?.into_iter().map(|r| r.id).collect();
            tx_b.commit().await?;
            anyhow::Ok(seen)
        });
        started.await?;
        // Work inside A's transaction while B is trying to get in.
        let update = TriggerTimeUpdate {
            job_id: j,
            trigger_last_time: next - 1_000,
            trigger_next_time: next,
            stop: false,
        };
        ensure!(tx_a.update_trigger_times(&[update]).await? == 1);
        tx_a.insert_claims(&[NewClaim { job_id: j, fire_time_ms: next - 1_000, claimed_at_ms: T }]).await?;
        tx_a.due_jobs(next - 1, 10).await?;
        ensure!(!contender.is_finished(), "round {round}: B got the lock while A held it");
        tx_a.commit().await?;
        let seen = contender.await??;
        ensure!(seen.is_empty(), "round {round}: B saw the job A took: {seen:?}");
    }
    let pending = a.pending_claims(i64::MAX).await?;
    ensure!(pending.len() == 5 && pending.iter().all(|c| c.job_id == j));
    a.delete_job(j).await?;
    Ok(())
}
