//! Failure alarms (upstream `JobAlarmer` + `JobAlarm` beans, docs/upstream.md §5.5): the
//! fail monitor hands every failed log to an [`Alarmer`], which runs all configured
//! [`AlarmChannel`]s.
//!
//! - [`EmailAlarm`]: upstream's `EmailJobAlarm` over SMTP (lettre), same HTML table.
//! - [`WebhookAlarm`]: jobwheel's JSON POST (upstream issues #475, #3675, #3816).
//!
//! Workflows (jobwheel) alarm through the same channels ([`WorkflowAlarmEvent`]).
//!
//! Configured channels (jobwheel, docs/alarms.md) are the second way: stored channel objects
//! of six kinds (`channel.rs`, `vendors.rs`), chosen per job, group or workflow; an event is
//! raised into an outbox (`outbox.rs`, with folding) and delivered with retries by the engine's
//! alarm desk through a [`ChannelSender`]. The [`Notice`] is what every channel tells.

use std::sync::Arc;

use async_trait::async_trait;

use crate::store::{GroupRow, JobRow, LogRow};

mod channel;
mod email;
mod notice;
pub mod outbound;
pub mod outbox;
mod sender;
mod template_guard;
pub mod vendors;
mod webhook;
mod workflow;

pub use channel::{ChannelKind, ChannelSecret, ChannelSettings};
pub use email::{EmailAlarm, SmtpConfig, SmtpTls};
pub use notice::{EventKind, Notice, plain_text};
pub use outbound::AlarmNetworks;
pub use sender::{Attempt, ChannelSender, SEND_TIMEOUT};
pub use webhook::{WebhookAlarm, WebhookPayload};
pub use workflow::{FailedNode, WorkflowAlarmEvent, WorkflowWebhookPayload};

/// What an alarm is about: a failed log of an existing job.
#[derive(Debug, Clone)]
pub struct AlarmEvent {
    /// The job (upstream's `XxlJobInfo`).
    pub job: JobRow,
    /// The job's group, if it still exists (its title is shown).
    pub group: Option<GroupRow>,
    /// The failed log (upstream's `XxlJobLog`).
    pub log: LogRow,
}

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

/// One way of telling people about a failure (upstream's `JobAlarm` interface).
#[async_trait]
pub trait AlarmChannel: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &'static str;
    /// Delivers the alarm. `Ok` also when the channel has nothing to do for this job (upstream:
    /// a job without alarm e-mail addresses counts as alarmed).
    async fn alarm(&self, event: &AlarmEvent) -> Result<(), AlarmError>;
    /// Delivers a workflow's alarm (jobwheel); channels that have no form for it do nothing.
    async fn alarm_workflow(&self, event: &WorkflowAlarmEvent) -> Result<(), AlarmError> {
        let _ = event;
        Ok(())
    }
}

/// Runs every channel for each alarm (upstream `JobAlarmer`).
#[derive(Clone, Default)]
pub struct Alarmer {
    channels: Vec<Arc<dyn AlarmChannel>>,
}

impl std::fmt::Debug for Alarmer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.channels.iter().map(|c| c.name()).collect();
        f.debug_struct("Alarmer").field("channels", &names).finish()
    }
}

impl Alarmer {
    /// An alarmer running `channels`.
    pub fn new(channels: Vec<Arc<dyn AlarmChannel>>) -> Self {
        Self { channels }
    }

    /// Whether no channel is configured (no SMTP, no `--alarm-webhook-url`).
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty()
    }

    /// Runs all channels; true if every one succeeded. Like upstream, no channels at all is
    /// a failure (the log's `alarm_status` becomes 3), so a missing configuration is visible.
    pub async fn alarm(&self, event: &AlarmEvent) -> bool {
        let mut all_ok = !self.channels.is_empty();
        for channel in &self.channels {
            if let Err(e) = channel.alarm(event).await {
                tracing::error!(channel = channel.name(), job_id = event.job.id.0, log_id = event.log.id.0, error = %e, "alarm failed");
                all_ok = false;
            }
        }
        all_ok
    }

    /// Runs all channels for a workflow's alarm; true if every one succeeded (none at all: false).
    pub async fn alarm_workflow(&self, event: &WorkflowAlarmEvent) -> bool {
        let mut all_ok = !self.channels.is_empty();
        for channel in &self.channels {
            if let Err(e) = channel.alarm_workflow(event).await {
                tracing::error!(channel = channel.name(), workflow = event.workflow.id.0, instance = event.instance.id.0, error = %e, "workflow alarm failed");
                all_ok = false;
            }
        }
        all_ok
    }
}
