//! Upstream's two ways of telling — the alarm mail of `--smtp-*` to a job's `alarm_email`
//! (upstream's `EmailJobAlarm`) and the admin's `--alarm-webhook-url` — as channels of the alarm
//! desk, beside the configured ones (docs/alarms.md, "Upstream's mail and webhook").
//!
//! They are not stored rows: each admin has them from its own flags, under fixed ids below zero
//! ([`UpstreamChannel`]). An event they tell gets a delivery of its own like any channel's,
//! with the body written when it is raised (upstream's HTML table, the webhook's JSON) — so a
//! retry sends what was seen — and, as upstream, they tell every failed attempt, fold nothing
//! and are sent at once: the log's `alarm_status` is their first attempt's result.

use std::sync::Arc;

use super::email::{EmailAlarm, addresses};
use super::event::Alarm;
use super::notice::{EventKind, Notice};
use super::sender::Attempt;
use super::webhook::{WebhookAlarm, WebhookPayload};
use super::workflow::WorkflowWebhookPayload;
use crate::store::ChannelId;

/// One of upstream's ways, as a channel id of the delivery log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamChannel {
    /// The alarm mail (`--smtp-host`).
    Mail,
    /// The admin's webhook (`--alarm-webhook-url`).
    Webhook,
}

impl UpstreamChannel {
    /// Both, in the order they are told.
    pub const ALL: [UpstreamChannel; 2] = [UpstreamChannel::Mail, UpstreamChannel::Webhook];

    /// Its id in the delivery log (stored channels count up from 1).
    pub fn id(self) -> ChannelId {
        match self {
            UpstreamChannel::Mail => ChannelId(-1),
            UpstreamChannel::Webhook => ChannelId(-2),
        }
    }

    /// The channel with id `id`, if it is one of these.
    pub fn of(id: ChannelId) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.id() == id)
    }

    /// Its name in the delivery log.
    pub fn name(self) -> &'static str {
        match self {
            UpstreamChannel::Mail => "alarm mail (--smtp-host)",
            UpstreamChannel::Webhook => "alarm webhook (--alarm-webhook-url)",
        }
    }

    /// Whether it tells `kind`: what upstream alarms (failed runs, which missed and lost
    /// ones are) and a workflow's end; not durations, recoveries or channel tests.
    fn tells(self, kind: EventKind) -> bool {
        matches!(
            kind,
            EventKind::Failed
                | EventKind::Missed
                | EventKind::Lost
                | EventKind::WorkflowFailed
                | EventKind::WorkflowMissed
        )
    }
}

/// What one of upstream's channels makes of an event when it is raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamForm {
    /// A delivery to send at once with this body.
    Send(UpstreamChannel, String),
    /// Nothing to send, and upstream counts that as alarmed: a mail for a job without
    /// `alarm_email`.
    NotNeeded(UpstreamChannel),
}

/// The alarm mail and webhook this admin was started with (none: neither flag given).
#[derive(Clone, Default)]
pub struct UpstreamAlarms {
    /// Upstream's mail; its SMTP transport also sends configured e-mail channels.
    pub mail: Option<Arc<EmailAlarm>>,
    /// The admin's webhook.
    pub webhook: Option<WebhookAlarm>,
}

impl std::fmt::Debug for UpstreamAlarms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamAlarms")
            .field("mail", &self.mail.is_some())
            .field("webhook", &self.webhook.is_some())
            .finish()
    }
}

impl UpstreamAlarms {
    /// Whether neither is configured.
    pub fn is_empty(&self) -> bool {
        self.mail.is_none() && self.webhook.is_none()
    }

    /// What each configured one makes of `alarm`.
    pub fn forms(&self, alarm: &Alarm, notice: &Notice) -> Vec<UpstreamForm> {
        let mut forms = Vec::new();
        if let Some(mail) = self.mail.as_ref().filter(|_| UpstreamChannel::Mail.tells(alarm.kind())) {
            let channel = UpstreamChannel::Mail;
            if addresses(notice.alarm_email.as_deref().unwrap_or_default()).is_empty() {
                forms.push(UpstreamForm::NotNeeded(channel));
            } else {
                let html = match alarm {
                    Alarm::Job { event, .. } => mail.job_html(event),
                    Alarm::Workflow { event, .. } => mail.workflow_html(event),
                };
                forms.push(UpstreamForm::Send(channel, html));
            }
        }
        if self.webhook.is_some() && UpstreamChannel::Webhook.tells(alarm.kind()) {
            let body = match alarm {
                Alarm::Job { event, .. } => serde_json::to_string(&WebhookPayload::from_event(event)),
                Alarm::Workflow { event, .. } => {
                    serde_json::to_string(&WorkflowWebhookPayload::from_event(event))
                }
            };
            forms.push(UpstreamForm::Send(UpstreamChannel::Webhook, body.unwrap_or_default()));
        }
        forms
    }

    /// One attempt to send `body` (the delivery's, written when raised) on `channel`.
    pub async fn send(&self, channel: UpstreamChannel, notice: &Notice, body: &str) -> Attempt {
        match channel {
            UpstreamChannel::Mail => {
                let Some(mail) = &self.mail else {
                    return Attempt::refused(body.to_owned(), "this admin has no SMTP server (--smtp-host)");
                };
                let recipients = addresses(notice.alarm_email.as_deref().unwrap_or_default());
                let to = recipients.iter().copied().collect::<Vec<_>>().join(", ");
                match mail.send(recipients, mail.subject(), body, &notice.subject_line()).await {
                    Ok(()) => Attempt {
                        ok: true,
                        request: body.to_owned(),
                        answer_code: 0,
                        answer: format!("mailed to {to}"),
                    },
                    Err(e) => Attempt::refused(body.to_owned(), e.to_string()),
                }
            }
            UpstreamChannel::Webhook => {
                let Some(webhook) = &self.webhook else {
                    return Attempt::refused(
                        body.to_owned(),
                        "this admin has no alarm webhook (--alarm-webhook-url)",
                    );
                };
                webhook.post(body).await
            }
        }
    }
}
