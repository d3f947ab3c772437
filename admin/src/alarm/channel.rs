//! What a channel is configured with: its [`ChannelKind`], the settings that are not secret
//! ([`ChannelSettings`], stored as JSON and shown) and the ones that are ([`ChannelSecret`]:
//! the webhook URL, which for DingTalk, WeCom and Slack is itself the credential, and the
//! signing key), sealed at rest and never shown again.

use serde::{Deserialize, Serialize};

/// The vendors and formats a channel speaks (docs/alarms.md has each one's reference).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    /// Mail through the admin's SMTP settings.
    Email,
    /// DingTalk custom robot, optionally signed.
    Dingtalk,
    /// Feishu / Lark custom bot, optionally signed.
    Feishu,
    /// WeCom (企业微信) group robot.
    Wecom,
    /// Slack incoming webhook.
    Slack,
    /// Any URL, body from a template, signed with HMAC-SHA256 when a key is set.
    Webhook,
}

impl ChannelKind {
    /// Every kind.
    pub const ALL: [ChannelKind; 6] = [
        ChannelKind::Email,
        ChannelKind::Dingtalk,
        ChannelKind::Feishu,
        ChannelKind::Wecom,
        ChannelKind::Slack,
        ChannelKind::Webhook,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ChannelKind::Email => "email",
            ChannelKind::Dingtalk => "dingtalk",
            ChannelKind::Feishu => "feishu",
            ChannelKind::Wecom => "wecom",
            ChannelKind::Slack => "slack",
            ChannelKind::Webhook => "webhook",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<ChannelKind> {
        ChannelKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether the channel posts to a URL (all but e-mail).
    pub fn needs_url(self) -> bool {
        self != ChannelKind::Email
    }

    /// Whether the vendor has a signing option (DingTalk, Feishu, the generic webhook).
    pub fn signs(self) -> bool {
        matches!(self, ChannelKind::Dingtalk | ChannelKind::Feishu | ChannelKind::Webhook)
    }
}

/// The settings of a channel that may be shown (stored as JSON in `config`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSettings {
    /// E-mail: the addresses; empty sends to the job's (or workflow's) `alarmEmail`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recipients: Vec<String>,
    /// DingTalk: mobile numbers to @-mention.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_mobiles: Vec<String>,
    /// DingTalk: @-mention everyone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_all: bool,
    /// Generic webhook: the body template (minijinja); none sends the notice as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Generic webhook: the body's `Content-Type` (default `application/json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// The sealed part of a channel.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSecret {
    /// Where to POST (with its access token in the query for DingTalk and WeCom).
    #[serde(default)]
    pub url: String,
    /// DingTalk's `SEC…` secret, Feishu's signing secret, or the webhook's HMAC key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_key: Option<String>,
}

// Never print a secret (the URL carries the robot's token).
impl std::fmt::Debug for ChannelSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelSecret(..)")
    }
}
