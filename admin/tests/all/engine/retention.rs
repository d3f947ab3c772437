//! The daily clean-up of the report monitor (upstream `JobLogReportHelper`): logs older than
//! the retention go, and the audit log with them; what is newer stays.

use std::sync::Arc;

use jobwheel_admin::alarm::UpstreamAlarms;
use jobwheel_admin::clock::ManualClock;
use jobwheel_admin::store::{AuditFilter, NewAudit, NewLog, Page};

use crate::engine::support::{Db, FakeExecutor, T0, at_ms, engine_with, group, job};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

#[tokio::test]
async fn logs_and_audit_entries_older_than_the_retention_are_deleted() -> anyhow::Result<()> {
    let db = Db::sqlite().await?;
    let store = db.connect().await?;
    let g = group(&*store, "app", &[]).await?;
    let id = store.add_job(&job(g, T0)).await?;
    let audit = |at_ms: i64| NewAudit {
        at_ms,
        user_id: None,
        username: "root".to_owned(),
        client: "127.0.0.1".to_owned(),
        action: "job.update".to_owned(),
        target: format!("job {}", id.0),
        detail: None,
        before_json: None,
        after_json: None,
    };
    for age_days in [40, 1] {
        store
            .insert_log(&NewLog { job_group: g, job_id: id, trigger_time: at_ms(T0 - age_days * DAY_MS) })
            .await?;
        store.add_audit(&audit(T0 - age_days * DAY_MS)).await?;
    }
    let engine = engine_with(
        store.clone(),
        Arc::new(FakeExecutor::default()),
        Arc::new(ManualClock::new(T0)),
        UpstreamAlarms::default(),
    );

    // Retention 30 days (the default): the 40-day-old log and entry go.
    assert_eq!(engine.report().report_and_clean(T0).await?, 1);
    let left = store.page_audit(&AuditFilter::default(), Page { offset: 0, limit: 10 }).await?;
    assert_eq!(left.rows.iter().map(|r| r.at_ms).collect::<Vec<_>>(), vec![T0 - DAY_MS]);
    db.cleanup().await
}
