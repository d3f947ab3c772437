//! The audit log (`jobwheel_audit`): one row per management change, listed newest first with
//! filters, and deleted by age with the trigger logs.

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::{AuditFilter, AuditRow, AuditStore, NewAudit, Page, Paged, StoreError};

static INSERT_AUDIT: Sql = Sql::new(
    "INSERT INTO jobwheel_audit \
    (at_ms, user_id, username, client, action, target, detail, before_json, after_json) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
);
static PURGE_AUDIT: Sql = Sql::new("DELETE FROM jobwheel_audit WHERE at_ms < ?");

fn push_filter<'a>(q: &mut QueryBuf<'a>, filter: &'a AuditFilter) {
    q.push(" WHERE 1 = 1");
    if let Some(username) = &filter.username {
        q.push(" AND username = ").bind(username);
    }
    if let Some(prefix) = &filter.action_prefix {
        q.push(" AND action LIKE ").bind(format!("{prefix}%"));
    }
    if let Some(target) = &filter.target {
        q.push(" AND target = ").bind(target);
    }
    if let Some(from) = filter.from_ms {
        q.push(" AND at_ms >= ").bind(from);
    }
    if let Some(to) = filter.to_ms {
        q.push(" AND at_ms < ").bind(to);
    }
}

#[async_trait]
impl AuditStore for SqlStore {
    async fn add_audit(&self, entry: &NewAudit) -> Result<(), StoreError> {
        let args = args![
            entry.at_ms,
            entry.user_id,
            &entry.username,
            &entry.client,
            &entry.action,
            &entry.target,
            &entry.detail,
            &entry.before_json,
            &entry.after_json,
        ];
        self.ex().execute(&INSERT_AUDIT, &args).await?;
        Ok(())
    }

    async fn page_audit(&self, filter: &AuditFilter, page: Page) -> Result<Paged<AuditRow>, StoreError> {
        let mut count = QueryBuf::new("SELECT I64(COUNT(*)) FROM jobwheel_audit");
        push_filter(&mut count, filter);
        let total: i64 = self.ex().fetch_one::<(i64,)>(&count, count.args()).await?.0;
        let mut rows = QueryBuf::new(
            "SELECT id, at_ms, user_id, username, client, action, target, detail, before_json, after_json \
            FROM jobwheel_audit",
        );
        push_filter(&mut rows, filter);
        rows.push(" ORDER BY id DESC LIMIT ").bind(i64::from(page.limit));
        rows.push(" OFFSET ").bind(i64::from(page.offset));
        let rows = self.ex().fetch_all(&rows, rows.args()).await?;
        Ok(Paged { rows, total: u64::try_from(total).unwrap_or(0) })
    }

    async fn purge_audit(&self, before_ms: i64) -> Result<u64, StoreError> {
        self.ex().execute(&PURGE_AUDIT, &args![before_ms]).await
    }
}
