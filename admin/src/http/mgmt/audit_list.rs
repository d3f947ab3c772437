//! `GET /api/v1/audit`: the audit log, newest first, for administrators (docs/api.md).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auth::Principal;
use super::{ApiQuery, Listed, Paging};
use crate::http::{ApiError, MgmtState};
use crate::store::{AuditFilter, AuditRow};

/// One recorded change as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditView {
    id: i64,
    /// Epoch ms.
    time: i64,
    user_id: Option<i32>,
    username: String,
    client: String,
    action: String,
    target: String,
    detail: Option<Value>,
    before: Option<Value>,
    after: Option<Value>,
}

impl From<AuditRow> for AuditView {
    fn from(row: AuditRow) -> Self {
        let json = |text: Option<String>| text.and_then(|t| serde_json::from_str(&t).ok());
        Self {
            id: row.id,
            time: row.at_ms,
            user_id: row.user_id,
            username: row.username,
            client: row.client,
            action: row.action,
            target: row.target,
            detail: json(row.detail),
            before: json(row.before_json),
            after: json(row.after_json),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditQuery {
    username: Option<String>,
    /// `job.` matches every job action; `job.update` one.
    action: Option<String>,
    /// `job 12`, `group 3`, `user 5`, `log 40`.
    target: Option<String>,
    /// Epoch ms, inclusive.
    from: Option<i64>,
    /// Epoch ms, exclusive.
    to: Option<i64>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /api/v1/audit`.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> Result<Json<Listed<AuditView>>, ApiError> {
    principal.require_admin()?;
    let blank_to_none = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let filter = AuditFilter {
        username: blank_to_none(query.username),
        action_prefix: blank_to_none(query.action),
        target: blank_to_none(query.target),
        from_ms: query.from,
        to_ms: query.to,
    };
    let page = state.store.page_audit(&filter, query.paging.page()?).await?;
    Ok(Json(Listed { total: page.total, items: page.rows.into_iter().map(AuditView::from).collect() }))
}
