//! `GET /api/v1/alarm-deliveries` (docs/alarms.md): the delivery log — what each channel was
//! sent, when, how often it was tried and what it answered — for administrators.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::alarm_channels::bad;
use super::auth::Principal;
use super::{ApiQuery, Listed, Paging};
use crate::alarm::UpstreamChannel;
use crate::http::{ApiError, MgmtState};
use crate::store::{ChannelId, DeliveryFilter, DeliveryStatus};

#[derive(Deserialize)]
pub(crate) struct DeliveryQuery {
    channel: Option<i64>,
    subject: Option<String>,
    status: Option<String>,
    #[serde(flatten)]
    paging: Paging,
}

/// One delivery in the log.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeliveryView {
    id: i64,
    channel_id: i64,
    channel_name: Option<String>,
    event: String,
    subject: String,
    status: &'static str,
    due_time: i64,
    attempts: i32,
    folded: i32,
    create_time: i64,
    send_time: i64,
    request: String,
    answer_code: i32,
    answer: String,
}

/// `GET /api/v1/alarm-deliveries?channel=&subject=&status=` (administrators), newest first;
/// folded events are counted in the message they were folded into.
pub(crate) async fn deliveries(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<DeliveryQuery>,
) -> Result<Json<Listed<DeliveryView>>, ApiError> {
    principal.require_admin()?;
    let page = query.paging.page()?;
    let status = match query.status.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(name) => Some(
            DeliveryStatus::ALL
                .into_iter()
                .find(|status| status.name().eq_ignore_ascii_case(name))
                .ok_or_else(|| bad("status", "PENDING, SENDING, SENT, FAILED or SKIPPED"))?,
        ),
    };
    let filter = DeliveryFilter {
        channel: query.channel.map(ChannelId),
        subject: query.subject.filter(|s| !s.trim().is_empty()),
        status,
    };
    let paged = state.store.page_deliveries(&filter, page).await?;
    let mut names: Vec<(ChannelId, String)> =
        state.store.list_channels().await?.into_iter().map(|c| (c.id, c.channel.name)).collect();
    names.extend(UpstreamChannel::ALL.map(|c| (c.id(), c.name().to_owned())));
    let items = paged
        .rows
        .into_iter()
        .map(|row| {
            let d = row.delivery;
            DeliveryView {
                id: d.id.0,
                channel_id: d.channel_id.0,
                channel_name: names.iter().find(|(id, _)| *id == d.channel_id).map(|(_, n)| n.clone()),
                event: row.kind,
                subject: d.subject,
                status: d.status.name(),
                due_time: d.due_ms,
                attempts: d.attempts,
                folded: d.folded,
                create_time: d.created_ms,
                send_time: d.sent_ms,
                request: d.request,
                answer_code: d.answer_code,
                answer: d.answer,
            }
        })
        .collect();
    Ok(Json(Listed { total: paged.total, items }))
}
