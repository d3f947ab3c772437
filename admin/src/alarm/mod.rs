//! Alarms (docs/alarms.md): everything the admin tells anyone about is an [`Alarm`], raised on
//! the engine's alarm desk — one path for a job's failed, missed, lost, overdue or recovered run
//! and a workflow's failed, missed or overdue instance.
//!
//! The desk records the event once under its key in an outbox (`outbox.rs`, with folding) and
//! gives each channel that tells it a delivery, sent with retries through a [`ChannelSender`].
//! Channels are of two origins:
//! - **configured channels**: stored objects of six kinds (`channel.rs`, `vendors.rs`), chosen
//!   per job, group or workflow;
//! - **upstream's mail and webhook** (`upstream.rs`): [`EmailAlarm`], upstream's `EmailJobAlarm`
//!   over SMTP (lettre) with its HTML table, and [`WebhookAlarm`], the admin's
//!   `--alarm-webhook-url` (upstream issues #475, #3675, #3816), from the admin's flags.
//!
//! The [`Notice`] is what every channel tells.

mod channel;
mod email;
mod event;
mod notice;
pub mod outbound;
pub mod outbox;
mod sender;
mod template_guard;
mod upstream;
pub mod vendors;
mod webhook;
mod workflow;

pub use channel::{ChannelKind, ChannelSecret, ChannelSettings};
pub use email::{EmailAlarm, SmtpConfig, SmtpTls};
pub use event::{Alarm, JobEvent, ended_key, ended_kind};
pub use notice::{EventKind, Notice, plain_text};
pub use outbound::AlarmNetworks;
pub use sender::{Attempt, ChannelSender, SEND_TIMEOUT};
pub use upstream::{UpstreamAlarms, UpstreamChannel, UpstreamForm};
pub use webhook::{WebhookAlarm, WebhookPayload};
pub use workflow::{FailedNode, WorkflowAlarmEvent, WorkflowWebhookPayload};

/// Why a channel could not deliver an alarm.
#[derive(Debug, thiserror::Error)]
pub enum AlarmError {
    /// The mail could not be built (bad address) or sent.
    #[error("alarm mail: {0}")]
    Email(String),
    /// The webhook call failed or was answered with a non-success status.
    #[error("alarm webhook: {0}")]
    Webhook(String),
}
