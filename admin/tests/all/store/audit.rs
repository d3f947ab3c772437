//! Contract checks for the audit log: entries round-trip (large JSON included), list newest
//! first with each filter, and are purged by age.

use anyhow::ensure;
use jobwheel_admin::store::{AuditFilter, NewAudit, Page, UserId};

use crate::store::Admins;

pub(crate) async fn check(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let entry = |at_ms: i64, username: &str, action: &str, target: &str| NewAudit {
        at_ms,
        user_id: (!username.is_empty()).then_some(UserId(3)),
        username: username.to_owned(),
        client: "10.0.0.7".to_owned(),
        action: action.to_owned(),
        target: target.to_owned(),
        detail: None,
        before_json: None,
        after_json: None,
    };
    // A GLUE source is up to a MiB of text; the snapshots must hold it.
    let big = format!("{{\"glueSource\":\"{}\"}}", "x".repeat(200_000));
    a.add_audit(&NewAudit {
        before_json: Some(big.clone()),
        detail: Some("{}".to_owned()),
        ..entry(1_000, "root", "glue.update", "job 1")
    })
    .await?;
    a.add_audit(&entry(2_000, "root", "job.update", "job 1")).await?;
    a.add_audit(&entry(3_000, "alice", "group.create", "group 2")).await?;
    a.add_audit(&entry(4_000, "", "session.login_failed", "")).await?;

    let all = b.page_audit(&AuditFilter::default(), Page { offset: 0, limit: 10 }).await?;
    ensure!(all.total == 4 && all.rows.len() == 4);
    let times: Vec<i64> = all.rows.iter().map(|r| r.at_ms).collect();
    ensure!(times == [4_000, 3_000, 2_000, 1_000], "newest first: {times:?}");
    let first = &all.rows[3];
    ensure!(first.before_json.as_deref() == Some(big.as_str()) && first.detail.as_deref() == Some("{}"));
    ensure!(first.user_id == Some(3) && first.client == "10.0.0.7" && all.rows[0].user_id.is_none());

    let count = |filter: AuditFilter| async move {
        anyhow::Ok(b.page_audit(&filter, Page { offset: 0, limit: 10 }).await?.total)
    };
    ensure!(count(AuditFilter { username: Some("root".to_owned()), ..AuditFilter::default() }).await? == 2);
    ensure!(
        count(AuditFilter { action_prefix: Some("job.".to_owned()), ..AuditFilter::default() }).await? == 1
    );
    ensure!(count(AuditFilter { target: Some("job 1".to_owned()), ..AuditFilter::default() }).await? == 2);
    ensure!(
        count(AuditFilter { from_ms: Some(2_000), to_ms: Some(4_000), ..AuditFilter::default() }).await? == 2
    );
    let page = b.page_audit(&AuditFilter::default(), Page { offset: 1, limit: 2 }).await?;
    ensure!(page.total == 4 && page.rows.iter().map(|r| r.at_ms).collect::<Vec<_>>() == [3_000, 2_000]);

    ensure!(a.purge_audit(3_000).await? == 2, "entries before 3 000 go");
    ensure!(count(AuditFilter::default()).await? == 2);
    ensure!(a.purge_audit(i64::MAX).await? == 2);
    Ok(())
}
