//! Upstream's `MisfireStrategyEnum`: what a trigger more than the pre-read window (5 s) late
//! does. The decision itself is taken in two places — the pre-read (`engine/schedule.rs`,
//! `plan_job`) for a job whose next fire time has passed, and claim recovery
//! (`engine/recover.rs`) for claims a stopped admin left behind — and both read the job's
//! strategy through [`MisfireStrategy::of`].

use std::str::FromStr;

/// `xxl_job_info.misfire_strategy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MisfireStrategy {
    /// Skip the missed fires; the next fire time is computed from now.
    DoNothing,
    /// Fire once now (trigger type MISFIRE), then go on from now.
    FireOnceNow,
}

impl MisfireStrategy {
    /// Both, in the UI's order.
    pub const ALL: [MisfireStrategy; 2] = [Self::DoNothing, Self::FireOnceNow];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            Self::DoNothing => "DO_NOTHING",
            Self::FireOnceNow => "FIRE_ONCE_NOW",
        }
    }

    /// Upstream's English title.
    pub fn title_en(self) -> &'static str {
        match self {
            Self::DoNothing => "Do nothing",
            Self::FireOnceNow => "Fire once now",
        }
    }

    /// Upstream's Chinese title.
    pub fn title_zh(self) -> &'static str {
        match self {
            Self::DoNothing => "忽略",
            Self::FireOnceNow => "立即执行一次",
        }
    }

    /// The strategy of a stored job: an unknown name (an adopted database may hold anything)
    /// means DO_NOTHING, as upstream's `MisfireStrategyEnum.match(name, DO_NOTHING)`.
    pub fn of(stored: &super::Named<Self>) -> Self {
        stored.known().unwrap_or(Self::DoNothing)
    }
}

/// A name that is not a misfire strategy (input validation is strict; stored rows use
/// [`MisfireStrategy::of`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown misfire strategy {0:?}: use DO_NOTHING or FIRE_ONCE_NOW")]
pub struct UnknownMisfireStrategy(pub String);

impl FromStr for MisfireStrategy {
    type Err = UnknownMisfireStrategy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| UnknownMisfireStrategy(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_stored_names_do_nothing() {
        for m in MisfireStrategy::ALL {
            assert_eq!(m.name().parse::<MisfireStrategy>(), Ok(m));
        }
        assert!("fire_once_now".parse::<MisfireStrategy>().is_err());
        assert_eq!(MisfireStrategy::of(&"FIRE_ONCE_NOW".into()), MisfireStrategy::FireOnceNow);
        assert_eq!(MisfireStrategy::of(&"SOMETHING_NEW".into()), MisfireStrategy::DoNothing);
    }
}
