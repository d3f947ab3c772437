//! Upstream's `ScheduleTypeEnum` (plus jobwheel's FIX_DELAY): how a job's next fire time is
//! computed. The computation itself is `cron/schedule.rs`.

use std::fmt;
use std::str::FromStr;

/// How a job's next trigger time is computed (DB column `schedule_type`).
///
/// Declaration order is the UI's. `FIX_DELAY` is jobwheel's: upstream reserved the name (an
/// i18n key and a commented-out constant) but never implemented it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScheduleType {
    /// No automatic trigger; manual, child-job or API triggers only. Cannot be started.
    None,
    /// `schedule_conf` is a Quartz cron expression.
    Cron,
    /// `schedule_conf` is an interval in whole seconds, measured from the previous fire time.
    FixRate,
    /// `schedule_conf` is a delay in whole seconds, measured from the previous run's completion.
    FixDelay,
}

impl ScheduleType {
    /// All types in UI order.
    pub const ALL: [ScheduleType; 4] = [Self::None, Self::Cron, Self::FixRate, Self::FixDelay];

    /// The upstream name stored in the database.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::Cron => "CRON",
            Self::FixRate => "FIX_RATE",
            Self::FixDelay => "FIX_DELAY",
        }
    }

    /// English title (`schedule_type_*` in `message_en.properties`).
    pub fn title_en(self) -> &'static str {
        match self {
            Self::None => "None",
            Self::Cron => "Cron",
            Self::FixRate => "Fix rate",
            Self::FixDelay => "Fix delay",
        }
    }

    /// Simplified-Chinese title (`message_zh_CN.properties`).
    pub fn title_zh(self) -> &'static str {
        match self {
            Self::None => "无",
            Self::Cron => "CRON",
            Self::FixRate => "固定速度",
            Self::FixDelay => "固定延迟",
        }
    }

    /// Whether the next trigger time comes from the previous run's *completion*
    /// (FIX_DELAY) rather than from the previous fire time. The scheduler must then not
    /// refresh the next time when it fires the job, but when the run's callback arrives,
    /// with `cron::next_trigger_time` and `from_ms` = completion time.
    pub fn waits_for_completion(self) -> bool {
        self == Self::FixDelay
    }
}

impl fmt::Display for ScheduleType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ScheduleType {
    type Err = UnknownScheduleType;

    /// Exact names, like upstream's `ScheduleTypeEnum.match`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| UnknownScheduleType(s.to_owned()))
    }
}

/// A name that is not a schedule type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown schedule type `{0}` (expected NONE, CRON, FIX_RATE or FIX_DELAY)")]
pub struct UnknownScheduleType(pub String);
