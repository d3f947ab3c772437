//! Contract checks for shared scheduling's partition leases: fair shares taken and given up,
//! a pre-read that sees only its partitions' jobs, expired leases changing hands, a locked
//! lease row skipped rather than waited for, and upstream's exclusive lock excluding every
//! shared pre-read (PostgreSQL and MySQL; SQLite's write lock serializes everything anyway).

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::store::{
    Backend, GroupId, JobId, LeaseRequest, NewClaim, NewLog, SCHEDULE_PARTITIONS, SharedSchedule,
};

use crate::store::schedule::running_job;
use crate::store::{Admins, group};

/// Epoch ms of the pre-reads below (2036-01-01T00:00:00Z).
const T: i64 = 2_082_758_400_000;
const LEASE: i64 = 3_000;
/// How long a call that must not wait for a lock may take.
const NOT_BLOCKED: Duration = Duration::from_secs(10);

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    let g = group(&*admins.a, "lease-app").await?;
    // One job per partition, all due at T.
    let mut jobs = Vec::new();
    for n in 0..SCHEDULE_PARTITIONS {
        jobs.push(running_job(&*admins.a, g, &format!("lease {n}"), T).await?);
    }
    shares(admins, g, &jobs).await?;
    if admins.a.backend() != Backend::Sqlite {
        locked_rows_are_skipped(admins, &jobs).await?;
        exclusive_excludes_shared(admins).await?;
    }
    for job in jobs {
        admins.a.delete_job(job).await?;
    }
    Ok(())
}

fn request(node: &str, now_ms: i64, share: usize) -> LeaseRequest<'_> {
    LeaseRequest { node, now_ms, until_ms: now_ms + LEASE, share }
}

/// The partitions of the jobs among `jobs` that a pre-read returns.
async fn seen(shared: &mut SharedSchedule, jobs: &[JobId]) -> anyhow::Result<BTreeSet<i32>> {
    let due = shared.tx.due_jobs(T, 10_000).await?;
    Ok(due.iter().filter(|r| jobs.contains(&r.id)).map(|r| r.id.0 % SCHEDULE_PARTITIONS).collect())
}

async fn shares(Admins { a, b }: &Admins, g: GroupId, jobs: &[JobId]) -> anyhow::Result<()> {
    let leases = a.schedule_leases().await?;
    ensure!(leases.len() == 32 && leases.iter().all(|l| l.owner.is_none()), "32 free partitions: {leases:?}");
    ensure!(a.scheduler_heartbeat("a", T, T - LEASE, T - 60_000).await? == 1);
    ensure!(b.scheduler_heartbeat("b", T, T - LEASE, T - 60_000).await? == 2, "both admins live");
    ensure!(a.scheduler_heartbeat("a", T + 4_000, T + 1_000, T - 60_000).await? == 1, "b went silent");

    // Alone, "a" takes everything and sees every job.
    let mut alone = a.begin_shared_schedule(&request("a", T, 32)).await?;
    ensure!(alone.partitions == (0..32).collect::<Vec<_>>() && alone.taken == 32);
    ensure!(seen(&mut alone, jobs).await?.len() == 32, "every partition's job");
    // Its claims name it, and so do the shard claims split from them.
    let claim = NewClaim { job_id: jobs[0], fire_time_ms: T + 1_000, claimed_at_ms: T };
    let [id] = alone.tx.insert_claims(&[claim]).await?[..] else { anyhow::bail!("one claim") };
    alone.tx.commit().await?;
    let log = NewLog {
        job_group: g,
        job_id: jobs[0],
        trigger_time: chrono::DateTime::from_timestamp_millis(T + 1_000).expect("time"),
    };
    let (_, shards) = b.split_claim(id, &log, 2, T).await?.expect("pending");
    let named: Vec<_> =
        b.pending_claims(i64::MAX).await?.into_iter().filter(|c| c.job_id == jobs[0]).collect();
    ensure!(named.len() == 1 && named[0].id == shards[0], "{named:?}");
    ensure!(named[0].node.as_deref() == Some("a"), "the shard claim names a: {:?}", named[0].node);
    ensure!(b.discard_claim(shards[0]).await?);

    ensure!(a.live_schedulers(T).await? == ["a", "b"], "live nodes by name");
    ensure!(a.live_schedulers(T + 4_000).await? == ["a"]);

    // "b" joins: nothing is free while "a"'s leases hold.
    let mut none = b.begin_shared_schedule(&request("b", T + 1_000, 16)).await?;
    ensure!(none.partitions.is_empty() && none.taken == 0);
    ensure!(seen(&mut none, jobs).await?.is_empty(), "no partition, no job");
    none.tx.commit().await?;

    // "a" gives up what exceeds its share; "b" takes it.
    let mut half_a = a.begin_shared_schedule(&request("a", T + 1_000, 16)).await?;
    ensure!(half_a.partitions == (0..16).collect::<Vec<_>>() && half_a.released == 16);
    ensure!(seen(&mut half_a, jobs).await? == (0..16).collect(), "only its partitions' jobs");
    half_a.tx.commit().await?;
    let given_up = a.schedule_leases().await?;
    ensure!(
        given_up.iter().filter(|l| l.part >= 16).all(|l| l.owner.is_none() && l.lease_until_ms == T + 1_000),
        "given-up rows record when they were given up: {given_up:?}"
    );
    let mut half_b = b.begin_shared_schedule(&request("b", T + 1_200, 16)).await?;
    ensure!(half_b.partitions == (16..32).collect::<Vec<_>>() && half_b.taken == 16);
    ensure!(seen(&mut half_b, jobs).await? == (16..32).collect());
    half_b.tx.commit().await?;
    let owners = a.schedule_leases().await?;
    ensure!(owners.iter().all(|l| l.owner.as_deref() == Some(if l.part < 16 { "a" } else { "b" })));

    // "b" dies: once "a"'s share grows again it takes only the expired leases.
    let early = a.begin_shared_schedule(&request("a", T + 2_000, 32)).await?;
    ensure!(early.partitions.len() == 16 && early.taken == 0, "b's leases still hold");
    early.tx.commit().await?;
    let late = a.begin_shared_schedule(&request("a", T + 5_000, 32)).await?;
    ensure!(late.partitions.len() == 32 && late.taken == 16, "b's expired leases are taken");
    late.tx.commit().await?;

    // Leaving frees everything at once.
    a.leave_schedule("a").await?;
    ensure!(a.schedule_leases().await?.iter().all(|l| l.owner.is_none() && l.lease_until_ms == 0));
    ensure!(b.scheduler_heartbeat("b", T + 5_000, T + 2_000, T - 60_000).await? == 1, "a is forgotten");
    b.leave_schedule("b").await?;
    Ok(())
}

/// While one admin's pre-read holds its lease rows, another admin whose clock says those
/// leases ran out neither waits for them nor gets them.
async fn locked_rows_are_skipped(Admins { a, b }: &Admins, jobs: &[JobId]) -> anyhow::Result<()> {
    let now = T + 100_000;
    // The rows have long been free: "b" takes all of them whatever its share, then gives half
    // up for a newcomer, which takes them at once (before they would count as orphans).
    let all = b.begin_shared_schedule(&request("b", now, 16)).await?;
    ensure!(all.partitions.len() == 32, "partitions free since long are taken beyond the share");
    all.tx.commit().await?;
    let half = b.begin_shared_schedule(&request("b", now + 1_000, 16)).await?;
    ensure!(half.partitions == (0..16).collect::<Vec<_>>() && half.released == 16);
    half.tx.commit().await?;
    let held = a.begin_shared_schedule(&request("a", now + 1_100, 16)).await?;
    ensure!(held.partitions == (16..32).collect::<Vec<_>>(), "{:?}", held.partitions);
    let far_later = now + 60_000;
    let mut other =
        tokio::time::timeout(NOT_BLOCKED, b.begin_shared_schedule(&request("b", far_later, 32))).await??;
    ensure!(
        other.partitions == (0..16).collect::<Vec<_>>(),
        "the locked rows are skipped: {:?}",
        other.partitions
    );
    ensure!(seen(&mut other, jobs).await? == (0..16).collect());
    other.tx.commit().await?;
    held.tx.commit().await?;
    a.leave_schedule("a").await?;
    b.leave_schedule("b").await?;
    Ok(())
}

/// An admin taking upstream's lock exclusively (an xxl-job admin, or `--exclusive-scheduling`)
/// and a shared pre-read never run at once.
async fn exclusive_excludes_shared(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let exclusive = a.begin_schedule().await?;
    let b2 = b.clone();
    let shared = tokio::spawn(async move {
        let s = b2.begin_shared_schedule(&request("b", T + 200_000, 32)).await?;
        s.tx.commit().await?;
        anyhow::Ok(())
    });
    // The shared pre-read is queued behind the exclusive lock: give it time to try.
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(!shared.is_finished(), "a shared pre-read ran while the exclusive lock was held");
    exclusive.commit().await?;
    tokio::time::timeout(NOT_BLOCKED, shared).await???;
    b.leave_schedule("b").await?;
    Ok(())
}
