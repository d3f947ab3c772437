//! Why a trigger happened, and its title in upstream's two message bundles.

use super::KnownName;
use crate::lang::MessageLang;

/// Why a trigger happened (upstream `TriggerTypeEnum`): in a log's trigger message, and as how a
/// workflow instance started (`jobwheel_workflow_instance.trigger_type`, by its name).
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
    /// A workflow instance started again from a finished one (jobwheel; the instance keeps
    /// which in `rerun_of`).
    Rerun,
    /// A past scheduled time run by a backfill (jobwheel; docs/backfill.md): keyed and timed
    /// as the schedule's fire of that time would have been.
    Backfill,
}

impl KnownName for TriggerType {
    fn all() -> &'static [Self] {
        &[
            Self::Manual,
            Self::Cron,
            Self::Retry,
            Self::Parent,
            Self::Api,
            Self::Misfire,
            Self::Workflow,
            Self::Rerun,
            Self::Backfill,
        ]
    }

    /// Upstream's enum constant names (jobwheel's two after them).
    fn name(self) -> &'static str {
        match self {
            Self::Manual => "MANUAL",
            Self::Cron => "CRON",
            Self::Retry => "RETRY",
            Self::Parent => "PARENT",
            Self::Api => "API",
            Self::Misfire => "MISFIRE",
            Self::Workflow => "WORKFLOW",
            Self::Rerun => "RERUN",
            Self::Backfill => "BACKFILL",
        }
    }
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
            (Self::Rerun, MessageLang::Zh) => "重新运行",
            (Self::Rerun, MessageLang::En) => "Rerun",
            (Self::Backfill, MessageLang::Zh) => "补数据触发",
            (Self::Backfill, MessageLang::En) => "Backfill trigger",
        }
    }
}
