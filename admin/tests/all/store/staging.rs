//! Contract checks for pre-staged firing: the pre-read inserts each claim's log row with the
//! claim, firing only takes the claim (once, across admins), a discarded claim takes its staged
//! row with it, and a broadcast split of a staged claim keeps the staged row as shard 0.

use std::sync::Arc;

use anyhow::ensure;
use jobwheel_admin::store::prelude::*;
use jobwheel_admin::store::{
    ClaimId, GroupId, JobId, LogClear, LogFilter, MissedFire, NewClaim, NewLog, Page,
};

use crate::store::{Admins, at, group, job};

/// Epoch ms of the staged fires below (2036-01-01T00:00:00Z).
const T: i64 = 2_082_758_400_000;

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    let g = group(&*admins.a, "staging-app").await?;
    let j = admins.a.add_job(&job(g, "staged")).await?;
    stage_and_take(admins, g, j).await?;
    take_race(admins, g, j).await?;
    discard_and_split(admins, g, j).await?;
    mixed(admins, g, j).await?;
    ensure!(admins.a.delete_job(j).await?);
    missed(admins, g).await?;
    Ok(())
}

fn staged(g: GroupId, j: JobId, fire_time_ms: i64) -> (NewClaim, NewLog) {
    let claim = NewClaim { job_id: j, fire_time_ms, claimed_at_ms: T - 5_000 };
    let trigger_time = chrono::DateTime::from_timestamp_millis(fire_time_ms).expect("time");
    (claim, NewLog { job_group: g, job_id: j, trigger_time })
}

async fn stage(
    store: &dyn Store,
    items: &[(NewClaim, NewLog)],
) -> anyhow::Result<Vec<(ClaimId, jobwheel_admin::store::LogId)>> {
    let items: Vec<_> = items.iter().map(|(claim, log)| (*claim, Some(*log))).collect();
    let mut tx = store.begin_schedule().await?;
    let ids = tx.stage_claims(&items).await?;
    tx.commit().await?;
    ids.into_iter()
        .map(|(claim, log)| Ok((claim, log.ok_or_else(|| anyhow::anyhow!("claim {claim:?} got no row"))?)))
        .collect()
}

/// Staged and bare claims mixed in one call (a pre-read with broadcasts among its jobs): each
/// staged claim points at its own row, with its own trigger time; bare ones have none.
async fn mixed(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let items: Vec<_> = (0..300)
        .map(|i| {
            let (claim, log) = staged(g, j, T + 40_000 + 1_000 * i);
            (claim, (i % 3 != 1).then_some(log))
        })
        .collect();
    let mut tx = a.begin_schedule().await?;
    let ids = tx.stage_claims(&items).await?;
    tx.commit().await?;
    ensure!(ids.len() == items.len());
    for ((claim, log), (_, new_log)) in ids.iter().zip(&items) {
        ensure!(log.is_some() == new_log.is_some(), "claim {claim:?}: {log:?}");
        if let (Some(log), Some(new_log)) = (log, new_log) {
            let row = b.load_log(*log).await?.expect("staged row");
            ensure!(
                row.trigger_time == Some(new_log.trigger_time),
                "claim {claim:?} got another claim's row"
            );
        }
    }
    let claims: Vec<ClaimId> = ids.iter().map(|(c, _)| *c).collect();
    ensure!(a.take_claims(&claims, T).await?.iter().all(|t| *t));
    Ok(())
}

/// Staged rows exist before their second, with the scheduled trigger time and no outcome; the
/// claims are pending and point at them; taking them answers per claim, once.
async fn stage_and_take(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    // More than one statement's chunk, so chunked ids must still pair up.
    a.purge_claims(i64::MAX).await?;
    let items: Vec<_> = (0..300).map(|i| staged(g, j, T + 1_000 * (i % 5))).collect();
    let ids = stage(&**a, &items).await?;
    ensure!(ids.len() == 300, "{} staged", ids.len());
    for ((claim, log), (new_claim, new_log)) in ids.iter().zip(&items).step_by(37) {
        let row = b.load_log(*log).await?.expect("staged log row");
        ensure!(row.job_id == j && row.trigger_code == 0 && row.handle_code == 0);
        ensure!(row.trigger_time == Some(new_log.trigger_time), "the scheduled second: {row:?}");
        let pending = b.pending_claims(new_claim.fire_time_ms).await?;
        let found = pending.iter().find(|c| c.id == *claim).expect("pending claim");
        ensure!(found.log_id == Some(*log) && found.fire_time_ms == new_claim.fire_time_ms);
    }
    let claims: Vec<ClaimId> = ids.iter().map(|(c, _)| *c).collect();
    // However old, a row whose claim is pending was never sent: recovery's, not "stalled".
    // Before 2038: MariaDB's FROM_UNIXTIME ends there.
    let far = at("2037-06-01T00:00:00Z");
    ensure!(!b.stalled_log_ids(far).await?.contains(&ids[0].1), "pending: not stalled");
    let mut asked = claims[..3].to_vec();
    asked.push(claims[0]);
    asked.push(ClaimId(i64::MAX));
    ensure!(
        b.take_claims(&asked, T).await? == [true, true, true, false, false],
        "each once, a missing one not"
    );
    ensure!(a.take_claims(&claims[..3], T).await? == [false; 3], "taken already");
    let rest = a.take_claims(&claims[3..], T).await?;
    ensure!(rest.iter().all(|t| *t) && rest.len() == 297, "the rest in one call");
    ensure!(a.pending_claims(i64::MAX).await?.is_empty());
    // Taken on time (at or before their second), the claims are gone: the staged rows are
    // the fires' records, and nothing is left for the purge.
    ensure!(a.purge_claims(i64::MAX).await? == 0, "claims taken on time are deleted");
    // Taken but never answered (its admin died before the outcome): now it is stalled.
    ensure!(b.stalled_log_ids(far).await?.contains(&ids[0].1), "taken: stalled");
    // A claim fired a minute late (recovered) keeps its scheduled second as trigger time; its
    // row is not stalled until its *take* is older than the cut-off too.
    let (late_claim, late_log) = stage(&**a, &[staged(g, j, T + 1_500)]).await?[0];
    ensure!(b.take_claims(&[late_claim], T + 60_000).await? == [true]);
    let cutoff = chrono::DateTime::from_timestamp_millis(T + 10_000).expect("time");
    let found = a.stalled_log_ids(cutoff).await?;
    ensure!(found.contains(&ids[0].1), "taken at its second: stalled {found:?}");
    ensure!(!found.contains(&late_log), "taken after the cut-off: on its way, not stalled");
    let later = chrono::DateTime::from_timestamp_millis(T + 60_000).expect("time");
    ensure!(a.stalled_log_ids(later).await?.contains(&late_log), "taken at the cut-off: stalled");
    // The late take's claim is the one kept (fired, with its take time) for the purge.
    ensure!(a.purge_claims(i64::MAX).await? == 1, "a late take keeps its claim");
    Ok(())
}

/// Two admins take the same staged claims at once: each claim goes to exactly one of them.
async fn take_race(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let items: Vec<_> = (0..40).map(|i| staged(g, j, T + 10_000 + i)).collect();
    let claims: Vec<ClaimId> = stage(&**a, &items).await?.into_iter().map(|(c, _)| c).collect();
    let mut reversed = claims.clone();
    reversed.reverse();
    let take = |store: Arc<dyn Store>, claims: Vec<ClaimId>| {
        tokio::spawn(async move { store.take_claims(&claims, T).await })
    };
    let (ra, rb) = tokio::join!(take(a.clone(), claims.clone()), take(b.clone(), reversed));
    let (ra, mut rb) = (ra??, rb??);
    rb.reverse();
    for (i, (x, y)) in ra.iter().zip(&rb).enumerate() {
        ensure!(x != y, "claim {i} taken by exactly one admin: {x} {y}");
    }
    Ok(())
}

/// Discarding a staged claim deletes its row (nothing ran); splitting one for a broadcast
/// keeps the staged row as shard 0's log and adds pending claims for the other shards.
async fn discard_and_split(Admins { a, b }: &Admins, g: GroupId, j: JobId) -> anyhow::Result<()> {
    let ids = stage(&**a, &[staged(g, j, T + 20_000), staged(g, j, T + 21_000)]).await?;
    let ((discarded, discarded_log), (split, split_log)) = (ids[0], ids[1]);
    ensure!(b.discard_claim(discarded).await?);
    ensure!(a.load_log(discarded_log).await?.is_none(), "a discarded claim's staged row is deleted");
    ensure!(!a.discard_claim(discarded).await?, "once");

    let log = NewLog { job_group: g, job_id: j, trigger_time: at("2036-01-01T00:00:21Z") };
    let (first, shards) = b.split_claim(split, &log, 3, T + 21_500).await?.expect("pending");
    ensure!(first == split_log, "shard 0 fires the staged row");
    ensure!(shards.len() == 2);
    let pending = a.pending_claims(i64::MAX).await?;
    ensure!(pending.iter().all(|c| c.log_id.is_none()) && pending.len() == 2, "{pending:?}");
    ensure!(pending.iter().all(|c| c.claimed_at_ms == T + 21_500), "claimed at the time given: {pending:?}");
    // The shard claims fire like unstaged ones; a fired claim's row is not deleted by discard.
    for shard in shards {
        ensure!(a.consume_claim_and_insert_log(shard, &log).await?.is_some());
    }
    ensure!(!a.discard_claim(split).await?);
    let filter = LogFilter { job_id: Some(j), ..LogFilter::default() };
    let logs = a.page_logs(&filter, Page { offset: 0, limit: 1 }).await?;
    ensure!(logs.total == 300 + 1 + 40 + 3, "staged (one late), raced and the split's rows: {}", logs.total);

    // Clearing a job's logs ("clear all") leaves a row whose claim is still pending.
    let pending = stage(&**a, &[staged(g, j, T + 30_000)]).await?[0].1;
    let clear = LogClear { job_group: None, job_id: Some(j), trigger_before: None, keep_newest: 0 };
    ensure!(b.clear_logs(&clear).await? == 344, "every fired row goes");
    let left = a.page_logs(&filter, Page { offset: 0, limit: 10 }).await?;
    ensure!(left.total == 1 && left.rows[0].id == pending, "only the pending claim's row stays");
    ensure!(a.take_claims(&[ids[1].0], T).await? == [false], "the split claim was fired already");
    Ok(())
}

/// A missed fire's row is written with what skipped it: in the pre-read (rolled back with it)
/// and with recovery's discards (exactly one of two racing admins writes it, counting what it
/// discarded, and the discarded claims' staged rows go).
async fn missed(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let j = a.add_job(&job(g, "missed")).await?;
    let row = |count: usize, first: i64| MissedFire {
        job_group: g,
        job_id: j,
        trigger_time: chrono::DateTime::from_timestamp_millis(first).expect("time"),
        trigger_msg: format!("missed {count}"),
        executor_handler: Some("demo".into()),
        executor_param: Some("p".into()),
    };
    let filter = LogFilter { job_id: Some(j), ..LogFilter::default() };
    let rows = |store: Arc<dyn Store>| {
        let filter = filter.clone();
        async move { anyhow::Ok(store.page_logs(&filter, Page { offset: 0, limit: 10 }).await?) }
    };
    let mut tx = a.begin_schedule().await?;
    tx.record_missed(&[row(1, T)]).await?;
    drop(tx);
    ensure!(rows(Arc::clone(b)).await?.total == 0, "rolled back with its pre-read");
    let mut tx = a.begin_schedule().await?;
    tx.record_missed(&[row(1, T)]).await?;
    tx.commit().await?;
    let page = rows(Arc::clone(b)).await?;
    let written = &page.rows[0];
    ensure!(page.total == 1 && written.trigger_code == 500 && written.handle_code == 0);
    ensure!(written.executor_fail_retry_count == 0 && written.trigger_msg.as_deref() == Some("missed 1"));
    ensure!(
        written.executor_handler.as_deref() == Some("demo") && written.executor_param.as_deref() == Some("p")
    );

    let ids = stage(&**a, &[staged(g, j, T + 40_000), staged(g, j, T + 41_000)]).await?;
    let pending = a.pending_claims(i64::MAX).await?;
    let claims: Vec<_> = pending.into_iter().filter(|c| c.job_id == j).collect();
    ensure!(claims.len() == 2);
    let (x, y) = tokio::join!(a.discard_missed(&claims, &row), b.discard_missed(&claims, &row));
    let (x, y) = (x?, y?);
    ensure!(x.len() + y.len() == 2 && (x.is_empty() || y.is_empty()), "one admin discards: {x:?} {y:?}");
    let page = rows(Arc::clone(a)).await?;
    ensure!(page.total == 2, "one more row, the staged ones gone: {}", page.total);
    ensure!(page.rows.iter().any(|r| r.trigger_msg.as_deref() == Some("missed 2")
        && r.trigger_time == chrono::DateTime::from_timestamp_millis(T + 40_000)));
    ensure!(a.load_log(ids[0].1).await?.is_none() && a.load_log(ids[1].1).await?.is_none());
    ensure!(a.discard_missed(&claims, &row).await?.is_empty(), "nothing pending, nothing written");
    ensure!(rows(Arc::clone(a)).await?.total == 2);
    ensure!(a.delete_job(j).await?);
    Ok(())
}
