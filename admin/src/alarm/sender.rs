//! [`ChannelSender`]: one attempt to deliver a notice on one channel — open the channel's
//! sealed secrets, build the vendor's request, POST it (or mail it), and say what was sent and
//! what came back; upstream's mail and webhook send the body written when the event was raised
//! (`upstream.rs`). Retrying and folding are the caller's (the engine's alarm desk).

use std::sync::Arc;
use std::time::Duration;

use super::channel::{ChannelKind, ChannelSecret, ChannelSettings};
use super::email::addresses;
use super::notice::Notice;
use super::outbound::{AlarmNetworks, read_capped};
use super::upstream::{UpstreamAlarms, UpstreamChannel};
use super::vendors::{self, Outgoing};
use crate::sealing::SecretBox;
use crate::store::{ChannelRow, DeliveryRow};

/// How long one attempt may take.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest answer kept in the delivery log.
pub(crate) const MAX_ANSWER: usize = 2000;

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The channel accepted the message.
    pub ok: bool,
    /// What was sent (the body; never the URL or a key).
    pub request: String,
    /// The answer's HTTP status (0: none).
    pub answer_code: i32,
    /// The answer's body, or why nothing was sent.
    pub answer: String,
}

impl Attempt {
    pub(crate) fn refused(request: String, why: impl Into<String>) -> Self {
        Self { ok: false, request, answer_code: 0, answer: why.into() }
    }
}

/// Sends on configured channels.
#[derive(Clone)]
pub struct ChannelSender {
    networks: AlarmNetworks,
    upstream: UpstreamAlarms,
    secrets: Option<Arc<SecretBox>>,
}

impl std::fmt::Debug for ChannelSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelSender").field("upstream", &self.upstream).finish_non_exhaustive()
    }
}

/// `s` cut to `max` bytes on a character boundary.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

impl ChannelSender {
    /// A sender for upstream's mail and webhook of `upstream`, mailing configured e-mail
    /// channels through its SMTP transport too (none: they fail with a message saying SMTP is
    /// not configured), opening secrets with `secrets`, and posting configured channels to
    /// public addresses and `networks` only (`outbound.rs`).
    pub fn new(upstream: UpstreamAlarms, secrets: Option<Arc<SecretBox>>, networks: AlarmNetworks) -> Self {
        Self { networks, upstream, secrets }
    }

    /// Upstream's mail and webhook of this admin.
    pub fn upstream(&self) -> &UpstreamAlarms {
        &self.upstream
    }

    /// One attempt at `delivery` of `notice` on upstream's `channel`: the body written when
    /// the event was raised.
    pub async fn send_upstream(
        &self,
        channel: UpstreamChannel,
        notice: &Notice,
        delivery: &DeliveryRow,
    ) -> Attempt {
        self.upstream.send(channel, notice, &delivery.request).await
    }

    /// One attempt to tell `notice` (with `folded` more folded into it) on `channel` at `now_ms`.
    pub async fn send(&self, channel: &ChannelRow, notice: &Notice, folded: i32, now_ms: i64) -> Attempt {
        let c = &channel.channel;
        let Some(kind) = ChannelKind::parse(&c.kind) else {
            return Attempt::refused(String::new(), format!("unknown channel kind {:?}", c.kind));
        };
        let settings: ChannelSettings = serde_json::from_str(&c.config).unwrap_or_default();
        if kind == ChannelKind::Email {
            return self.mail(&settings, notice, folded).await;
        }
        let secret = match self.open(channel) {
            Ok(secret) => secret,
            Err(why) => return Attempt::refused(String::new(), why),
        };
        match vendors::build(kind, &settings, &secret, notice, folded, now_ms) {
            Ok(outgoing) => self.post(kind, outgoing).await,
            Err(e) => Attempt::refused(String::new(), e.to_string()),
        }
    }

    fn open(&self, channel: &ChannelRow) -> Result<ChannelSecret, String> {
        let Some(secrets) = &self.secrets else {
            return Err("this admin has no secret key to open the channel's URL".to_owned());
        };
        let plain = secrets
            .open_channel(&channel.channel.name, &channel.channel.sealed)
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&plain)
            .map_err(|_| "the channel's sealed settings are damaged; save it again".to_owned())
    }

    async fn post(&self, kind: ChannelKind, out: Outgoing) -> Attempt {
        // A client per attempt: its connection is pinned to the address just checked, and no
        // redirect is followed, so the URL is posted to as configured and nowhere else.
        let http = match self.networks.client_for(&out.url, SEND_TIMEOUT).await {
            Ok(http) => http,
            Err(why) => return Attempt::refused(out.body, why),
        };
        let mut request =
            http.post(&out.url).header("Content-Type", &out.content_type).body(out.body.clone());
        for (name, value) in &out.headers {
            request = request.header(name, value);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                let (body, _cut) = read_capped(response).await;
                let verdict = vendors::accepted(kind, status, &body);
                let answer = match &verdict {
                    Ok(()) => clip(&body, MAX_ANSWER),
                    Err(why) => clip(&format!("{why}: {body}"), MAX_ANSWER),
                };
                Attempt { ok: verdict.is_ok(), request: out.body, answer_code: i32::from(status), answer }
            }
            // Without the URL: it carries the robot's token.
            Err(e) => Attempt::refused(out.body, e.without_url().to_string()),
        }
    }

    async fn mail(&self, settings: &ChannelSettings, notice: &Notice, folded: i32) -> Attempt {
        let text = notice.text(folded);
        let Some(mailer) = &self.upstream.mail else {
            return Attempt::refused(text, "no SMTP server is configured (--smtp-host)");
        };
        let fallback = notice.alarm_email.clone().unwrap_or_default();
        let recipients = if settings.recipients.is_empty() {
            addresses(&fallback)
        } else {
            settings.recipients.iter().map(|r| r.trim()).filter(|r| !r.is_empty()).collect()
        };
        if recipients.is_empty() {
            return Attempt::refused(
                text,
                "no recipients: the channel has none and the job has no alarm e-mail",
            );
        }
        let to = recipients.iter().copied().collect::<Vec<_>>().join(", ");
        let html = format!("<pre>{}</pre>", html_escape::encode_text(&text));
        match mailer.send(recipients, &notice.subject_line(), &html, "alarm channel").await {
            Ok(()) => Attempt { ok: true, request: text, answer_code: 0, answer: format!("mailed to {to}") },
            Err(e) => Attempt::refused(text, e.to_string()),
        }
    }
}
