//! Why a trigger happened, and its title in upstream's two message bundles.

use crate::lang::MessageLang;

/// Why a trigger happened (upstream `TriggerTypeEnum`); only used in message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriggerType {
    /// From the UI's "trigger once" or the API.
    Manual,
    /// From the scheduler (CRON, FIX_RATE and FIX_DELAY alike, as upstream).
    Cron,
    /// From the fail monitor.
    Retry,
    /// A child job of a job that succeeded.
    Parent,
    /// Defined upstream but never used; kept for completeness.
    Api,
    /// A misfired trigger fired once now (`FIRE_ONCE_NOW`).
    Misfire,
    /// A node of a workflow instance (jobwheel).
    Workflow,
}

impl TriggerType {
    /// Upstream's title in `lang`.
    pub fn title(self, lang: MessageLang) -> &'static str {
        match (self, lang) {
            (Self::Manual, MessageLang::Zh) => "手动触发",
            (Self::Manual, MessageLang::En) => "Manual trigger",
            (Self::Cron, MessageLang::Zh) => "Cron触发",
            (Self::Cron, MessageLang::En) => "Cron trigger",
            (Self::Retry, MessageLang::Zh) => "失败重试触发",
            (Self::Retry, MessageLang::En) => "Fail retry trigger",
            (Self::Parent, MessageLang::Zh) => "父任务触发",
            (Self::Parent, MessageLang::En) => "Parent job trigger",
            (Self::Api, MessageLang::Zh) => "API触发",
            (Self::Api, MessageLang::En) => "Api trigger",
            (Self::Misfire, MessageLang::Zh) => "调度过期补偿",
            (Self::Misfire, MessageLang::En) => "Misfire compensation trigger",
            (Self::Workflow, MessageLang::Zh) => "工作流触发",
            (Self::Workflow, MessageLang::En) => "Workflow trigger",
        }
    }
}
