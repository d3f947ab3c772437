//! Contract checks for approvals (`jobwheel_approval`, docs/replay.md "Capabilities and
//! approval"): held by one admin and read by the other as held, listed newest first by job and
//! pending, decided once (a second decision, from either admin, changes nothing), and deleted
//! with their job.

use anyhow::ensure;

use jobwheel_admin::store::{ApprovalKind, ApprovalStatus, Decision, GroupId, NewApproval};

use crate::store::{Admins, job};

pub(crate) async fn check(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let job_id = a.add_job(&job(g, "held changes")).await?;
    let other = a.add_job(&job(g, "other held changes")).await?;
    let module = NewApproval {
        job_id,
        kind: ApprovalKind::Module,
        version_id: Some(41),
        digest: Some("ab".repeat(32)),
        grant_body: None,
        widening: r#"["imports http"]"#.to_owned(),
        requested_by: "member".to_owned(),
        requested_ms: 1_000,
    };
    let first = a.add_approval(&module).await?;
    let grant = NewApproval {
        kind: ApprovalKind::Grant,
        version_id: None,
        digest: None,
        grant_body: Some(r#"{"httpAllow":["api.example.com"]}"#.to_owned()),
        widening: r#"["may reach api.example.com"]"#.to_owned(),
        requested_ms: 2_000,
        ..module.clone()
    };
    let second = b.add_approval(&grant).await?;
    let elsewhere = a.add_approval(&NewApproval { job_id: other, ..module.clone() }).await?;
    ensure!(second > first && elsewhere > second, "ids grow: {first} {second} {elsewhere}");

    let read = b.approval(first).await?.ok_or_else(|| anyhow::anyhow!("approval {first}"))?;
    ensure!(
        (read.job_id, read.kind.as_str(), read.version_id, read.digest.as_deref(), read.status)
            == (job_id, "module", Some(41), module.digest.as_deref(), 0),
        "{read:?}"
    );
    ensure!(
        read.widening == module.widening && read.decided_by.is_none() && read.decided_ms == 0,
        "{read:?}"
    );
    let listed: Vec<i64> = a.approvals(Some(job_id), false, 10).await?.iter().map(|r| r.id).collect();
    ensure!(listed == [second, first], "newest first, of the job: {listed:?}");
    let all: Vec<i64> = b.approvals(None, false, 2).await?.iter().map(|r| r.id).collect();
    ensure!(all == [elsewhere, second], "every job's, at most the limit: {all:?}");

    let decision =
        Decision { status: ApprovalStatus::Approved, by: "root", at_ms: 3_000, note: Some("fine") };
    ensure!(a.decide_approval(first, decision).await?, "decided");
    let refuse = Decision { status: ApprovalStatus::Refused, by: "other-admin", at_ms: 3_001, note: None };
    ensure!(!b.decide_approval(first, refuse).await?, "decided once");
    let read = b.approval(first).await?.ok_or_else(|| anyhow::anyhow!("approval {first}"))?;
    ensure!(
        (read.status, read.decided_by.as_deref(), read.decided_ms, read.note.as_deref())
            == (1, Some("root"), 3_000, Some("fine")),
        "{read:?}"
    );
    let pending: Vec<i64> = a.approvals(Some(job_id), true, 10).await?.iter().map(|r| r.id).collect();
    ensure!(pending == [second], "only what waits: {pending:?}");
    let read = a.approval(second).await?.ok_or_else(|| anyhow::anyhow!("approval {second}"))?;
    ensure!(read.grant_body == grant.grant_body, "{read:?}");

    ensure!(a.delete_job(job_id).await? && a.delete_job(other).await?);
    for id in [first, second, elsewhere] {
        ensure!(b.approval(id).await?.is_none(), "approval {id} gone with its job");
    }
    Ok(())
}
