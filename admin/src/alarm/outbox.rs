//! Raising an alarm on channels: the event is recorded once under its key, then each chosen
//! channel that tells its kind gets a delivery — due now, or folded — and each of upstream's
//! channels one claimed by the raiser, to be sent at once (`upstream.rs`).
//!
//! **Folding** (per channel and subject, the channel's window `W`): the first event sends at
//! once. An event within `W` of the last message becomes the next window's message, due when
//! that window opens; events until then are counted into it (FOLDED rows pointing at it), and
//! its text says how many. So a storm gives at most one message per window, each with the
//! count of what it stands for. Two admins raising events of one subject in the same instant
//! may both start a message (the read and the insert are not one lock); the events themselves
//! are never doubled.

use super::notice::{EventKind, Notice};
use super::sender::SEND_TIMEOUT;
use super::upstream::UpstreamForm;
use crate::store::{
    ChannelId, DeliveryId, DeliveryStatus, GroupId, JobId, NewDelivery, NewEvent, RouteRow, Store,
    StoreError, route_scope,
};

/// How long a claim on a delivery lasts: longer than the longest attempt, so a live sender
/// keeps it, and a dead one's is taken again when it ends.
pub const CLAIM_MS: i64 = 3 * SEND_TIMEOUT.as_millis() as i64;

/// What an event is about, for folding and keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Raise {
    /// Unique per event (`FAILED:log:12`).
    pub key: String,
    /// Folding key (`job:3`).
    pub subject: String,
    /// The notice.
    pub notice: Notice,
    /// The configured channels chosen for it.
    pub channels: Vec<ChannelId>,
    /// What upstream's mail and webhook make of it.
    pub upstream: Vec<UpstreamForm>,
    /// False for test messages: each is its own.
    pub fold: bool,
}

/// What raising an event did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Raised {
    /// Deliveries queued (due now or when the fold window opens) or folded on configured
    /// channels.
    pub queued: usize,
    /// Deliveries of upstream's channels, claimed by the raiser to send at once.
    pub at_once: Vec<DeliveryId>,
    /// Upstream's channels that had nothing to send (upstream counts that as alarmed).
    pub not_needed: usize,
}

/// The channels and "should be done within" of a job: its own route, else its group's.
pub async fn job_route(store: &dyn Store, job: JobId, group: GroupId) -> Result<RouteRow, StoreError> {
    let own = store.routes(route_scope::JOB, &[i64::from(job.0)]).await?.pop().unwrap_or_default();
    if !own.channel_ids().is_empty() {
        return Ok(own);
    }
    let group = store.routes(route_scope::GROUP, &[i64::from(group.0)]).await?.pop().unwrap_or_default();
    Ok(RouteRow { channels: group.channels, ..own })
}

/// The channels and duration of a workflow: its own route, else its group's channels.
pub async fn workflow_route(
    store: &dyn Store,
    workflow: i64,
    group: GroupId,
) -> Result<RouteRow, StoreError> {
    let own = store.routes(route_scope::WORKFLOW, &[workflow]).await?.pop().unwrap_or_default();
    if !own.channel_ids().is_empty() {
        return Ok(own);
    }
    let group = store.routes(route_scope::GROUP, &[i64::from(group.0)]).await?.pop().unwrap_or_default();
    Ok(RouteRow { channels: group.channels, ..own })
}

/// Records `raise` and queues its deliveries at `now_ms`. Nothing is queued when the event was
/// recorded before (under its key), or no channel tells its kind.
pub async fn raise(store: &dyn Store, raise: &Raise, now_ms: i64) -> Result<Raised, StoreError> {
    let mut raised = Raised::default();
    if raise.channels.is_empty() && raise.upstream.is_empty() {
        return Ok(raised);
    }
    let event = NewEvent {
        event_key: raise.key.clone(),
        kind: raise.notice.kind.clone(),
        subject: raise.subject.clone(),
        created_ms: now_ms,
        notice: serde_json::to_string(&raise.notice).unwrap_or_default(),
    };
    let Some(event_id) = store.record_event(&event).await? else { return Ok(raised) };
    let delivery = |channel, due_ms, into| NewDelivery {
        event: event_id,
        channel,
        subject: &raise.subject,
        due_ms,
        into,
        created_ms: now_ms,
        request: "",
        claimed_until: None,
    };
    for form in &raise.upstream {
        match form {
            UpstreamForm::Send(channel, body) => {
                let claimed = NewDelivery {
                    request: body,
                    claimed_until: Some(now_ms + CLAIM_MS),
                    ..delivery(channel.id(), now_ms, None)
                };
                raised.at_once.push(store.add_delivery(&claimed).await?);
            }
            UpstreamForm::NotNeeded(_) => raised.not_needed += 1,
        }
    }
    let kind = raise.notice.event_kind();
    for &channel_id in &raise.channels {
        let Some(channel) = store.load_channel(channel_id).await? else { continue };
        let c = &channel.channel;
        let tells =
            kind == Some(EventKind::Test) || c.events.split(',').any(|e| e.trim() == raise.notice.kind);
        if !c.enabled.is_on() || !tells {
            continue;
        }
        let window_ms = if raise.fold { i64::from(c.fold_secs.max(0)) * 1000 } else { 0 };
        let (due_ms, into) = placement(store, channel_id, &raise.subject, window_ms, now_ms).await?;
        store.add_delivery(&delivery(channel_id, due_ms, into)).await?;
        raised.queued += 1;
    }
    Ok(raised)
}

/// When a new event's delivery is due, or which message it folds into.
async fn placement(
    store: &dyn Store,
    channel: ChannelId,
    subject: &str,
    window_ms: i64,
    now_ms: i64,
) -> Result<(i64, Option<DeliveryId>), StoreError> {
    if window_ms == 0 {
        return Ok((now_ms, None));
    }
    let Some(last) = store.last_message(channel, subject).await? else { return Ok((now_ms, None)) };
    if last.status == DeliveryStatus::Pending && last.attempts == 0 {
        // Not sent yet (this window's next message, or one about to go): count into it.
        return Ok((last.due_ms, Some(last.id)));
    }
    let next_window = last.due_ms.saturating_add(window_ms);
    if now_ms < next_window { Ok((next_window, None)) } else { Ok((now_ms, None)) }
}
