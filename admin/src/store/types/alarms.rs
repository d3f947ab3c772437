//! Alarm channels and their traffic (`jobwheel_alarm_*`, docs/alarms.md): channels, the routes
//! that choose them for jobs, groups and workflows, events recorded once under a key, and one
//! delivery per event and channel.

use super::{ChannelId, DeliveryId, EventId, JobId, LogId};

/// `jobwheel_alarm_delivery.status`, stored as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum DeliveryStatus {
    /// Waiting for its due time (new, or a failed attempt waiting to be retried).
    Pending = 0,
    /// Claimed by an admin that is sending it (until `lease_ms`).
    Sending = 1,
    /// The channel accepted it.
    Sent = 2,
    /// Every attempt failed; the last answer is kept.
    Failed = 3,
    /// Counted into another delivery of the same channel and subject (`folded_into`).
    Folded = 4,
    /// Not sent: the channel was disabled or deleted before it was due.
    Skipped = 5,
}

impl DeliveryStatus {
    /// Every state, in the delivery log's order.
    pub const ALL: [Self; 6] =
        [Self::Pending, Self::Sending, Self::Sent, Self::Failed, Self::Folded, Self::Skipped];

    /// The API's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Sending => "SENDING",
            Self::Sent => "SENT",
            Self::Failed => "FAILED",
            Self::Folded => "FOLDED",
            Self::Skipped => "SKIPPED",
        }
    }
}

/// Whether a channel sends (`jobwheel_alarm_channel.enabled`), stored as its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, sqlx::Type)]
#[repr(i32)]
pub enum ChannelSwitch {
    /// Deliveries falling due while off are skipped; the test message is refused.
    Off = 0,
    /// It sends.
    On = 1,
}

impl ChannelSwitch {
    /// The API's `enabled`.
    pub fn is_on(self) -> bool {
        self == Self::On
    }
}

impl From<bool> for ChannelSwitch {
    fn from(on: bool) -> Self {
        if on { Self::On } else { Self::Off }
    }
}

/// What a route belongs to (`jobwheel_alarm_route.scope`).
pub mod route_scope {
    /// A job (`xxl_job_info.id`).
    pub const JOB: &str = "job";
    /// An executor group (`xxl_job_group.id`).
    pub const GROUP: &str = "group";
    /// A workflow (`jobwheel_workflow.id`).
    pub const WORKFLOW: &str = "workflow";
}

/// A channel without its id.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NewChannel {
    /// Unique name, shown in forms and the delivery log.
    pub name: String,
    /// `email`, `dingtalk`, `feishu`, `wecom`, `slack` or `webhook`.
    pub kind: String,
    /// The settings that are not secret, as JSON.
    pub config: String,
    /// The webhook URL and signing key, sealed (empty: none).
    pub sealed: String,
    /// The event kinds it tells, comma-separated.
    pub events: String,
    /// Folding window, seconds (0: every event is its own message).
    pub fold_secs: i32,
    /// On or off.
    pub enabled: ChannelSwitch,
    /// Last change, epoch ms.
    pub update_ms: i64,
}

/// A stored channel.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ChannelRow {
    /// Primary key.
    pub id: ChannelId,
    /// The columns.
    #[sqlx(flatten)]
    pub channel: NewChannel,
}

/// The channels and duration chosen for one job, group or workflow.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct RouteRow {
    /// [`route_scope`].
    pub scope: String,
    /// The job's, group's or workflow's id.
    pub target_id: i64,
    /// Channel ids, comma-separated.
    pub channels: String,
    /// "Should be done within", seconds (0: no duration alarm).
    pub done_within_secs: i32,
}

impl RouteRow {
    /// The channel ids of the route, in the order stored.
    pub fn channel_ids(&self) -> Vec<ChannelId> {
        self.channels.split(',').filter_map(|c| c.trim().parse().ok()).map(ChannelId).collect()
    }
}

/// An event to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// Unique: the same event is recorded once however many admins see it.
    pub event_key: String,
    /// `FAILED`, `MISSED`, …
    pub kind: String,
    /// What folding groups by (`job:12`, `workflow:3`, `job:12:recovered`).
    pub subject: String,
    /// When, epoch ms.
    pub created_ms: i64,
    /// The notice as JSON (`alarm::Notice`).
    pub notice: String,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EventRow {
    /// Primary key.
    pub id: EventId,
    /// See [`NewEvent`].
    pub event_key: String,
    /// See [`NewEvent`].
    pub kind: String,
    /// See [`NewEvent`].
    pub subject: String,
    /// See [`NewEvent`].
    pub created_ms: i64,
    /// See [`NewEvent`].
    pub notice: String,
}

/// One event on one channel.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryRow {
    /// Primary key.
    pub id: DeliveryId,
    /// The event.
    pub event_id: EventId,
    /// The channel.
    pub channel_id: ChannelId,
    /// The event's subject (folding key with the channel).
    pub subject: String,
    /// Its state.
    pub status: DeliveryStatus,
    /// When it is (or was) due, epoch ms.
    pub due_ms: i64,
    /// Attempts made.
    pub attempts: i32,
    /// Events folded into it.
    pub folded: i32,
    /// The delivery it was folded into (0: none).
    pub folded_into: i64,
    /// A sending admin's claim lasts until then, epoch ms.
    pub lease_ms: i64,
    /// Recorded, epoch ms.
    pub created_ms: i64,
    /// Last attempt, epoch ms (0: none yet).
    pub sent_ms: i64,
    /// What was sent last (the body, never the URL or a key).
    pub request: String,
    /// The last answer's HTTP status (0: none, or not HTTP).
    pub answer_code: i32,
    /// The last answer's body or error, cut short.
    pub answer: String,
}

/// A new delivery of an event on a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDelivery<'a> {
    /// The event.
    pub event: EventId,
    /// The channel.
    pub channel: ChannelId,
    /// The event's subject.
    pub subject: &'a str,
    /// When it is due, epoch ms.
    pub due_ms: i64,
    /// The message it is folded into (FOLDED, that one's count goes up); none: a message.
    pub into: Option<DeliveryId>,
    /// Recorded, epoch ms.
    pub created_ms: i64,
    /// The body to send, when it is written at once (upstream's mail and webhook); else empty.
    pub request: &'a str,
    /// Claimed by the raising admin until then (SENDING, to be sent at once); none: PENDING.
    pub claimed_until: Option<i64>,
}

/// A delivery in the log, with its event's kind.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DeliveryListRow {
    /// The delivery.
    #[sqlx(flatten)]
    pub delivery: DeliveryRow,
    /// The event's kind.
    pub kind: String,
}

/// What an attempt to send came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryOutcome {
    /// Sent, Failed, Pending (a retry) or Skipped.
    pub status: DeliveryStatus,
    /// The next attempt, when PENDING.
    pub due_ms: i64,
    /// Attempts made so far.
    pub attempts: i32,
    /// When this attempt ended.
    pub sent_ms: i64,
    /// What was sent.
    pub request: String,
    /// The answer's HTTP status (0: none).
    pub answer_code: i32,
    /// The answer's body or error.
    pub answer: String,
}

/// Filters of the delivery log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeliveryFilter {
    /// One channel's.
    pub channel: Option<ChannelId>,
    /// One subject's (`job:12`).
    pub subject: Option<String>,
    /// One status.
    pub status: Option<DeliveryStatus>,
}

/// A job whose last alarm was a failure, for the recovery alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct FailingJob {
    /// The job.
    pub job_id: JobId,
    /// Its failed log that was alarmed last.
    pub log_id: LogId,
}
