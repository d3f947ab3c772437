//! The language of the texts the admin produces: trigger and handle messages, probe logs,
//! alarm mails, the UI's defaults (upstream's `xxl.job.i18n`, `--i18n` here).
//!
//! Upstream takes its labels from an i18n bundle; only labels change with the language, the
//! `address：`-style keys stay as upstream hard-codes them, because they end up in stored
//! `trigger_msg` HTML that existing tooling reads.

/// Simplified Chinese (upstream's default) or English.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MessageLang {
    /// `message_zh_CN.properties`, upstream's default.
    #[default]
    #[value(name = "zh_CN")]
    Zh,
    /// `message_en.properties`.
    #[value(name = "en")]
    En,
}
