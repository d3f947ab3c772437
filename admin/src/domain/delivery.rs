//! A job's (or workflow node's) delivery mode (issue 58; docs/engine.md, "Delivery
//! guarantee"): stored in `jobwheel_job_delivery` as `EXACTLY_ONCE`, no row for upstream's at
//! most once, and sent to executors as `deliveryMode`.
//!
//! *At most once* is upstream's behaviour: a fire whose admin dies between `/run` and storing
//! its outcome is closed later as "Trigger interrupted" and may or may not have run. *Exactly
//! once* records where each `/run` goes before sending it, so a recovering admin resends a fire
//! in doubt to that address with the same log id and key; a jobwheel executor's fire journal
//! runs a key at most once. To an upstream executor, which has no journal, it is at least once.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How often a fire may run when admins fail. Serialized by [`DeliveryMode::name`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryMode {
    /// Upstream's: never resent (no row in `jobwheel_job_delivery`).
    #[default]
    AtMostOnce,
    /// Resent to the same address when in doubt; run once by a jobwheel executor.
    ExactlyOnce,
}

impl DeliveryMode {
    /// Both, in the UI's order.
    pub const ALL: [Self; 2] = [Self::AtMostOnce, Self::ExactlyOnce];

    /// The name the API, the UI and the trigger use.
    pub fn name(self) -> &'static str {
        match self {
            Self::AtMostOnce => "AT_MOST_ONCE",
            Self::ExactlyOnce => jobwheel_protocol::EXACTLY_ONCE,
        }
    }

    /// What `jobwheel_job_delivery` and the trigger carry: nothing for at most once.
    pub fn stored(self) -> Option<&'static str> {
        (self == Self::ExactlyOnce).then(|| self.name())
    }

    /// A stored value; anything else (no row included) is at most once.
    pub fn from_stored(value: Option<&str>) -> Self {
        match value {
            Some(v) if v == jobwheel_protocol::EXACTLY_ONCE => Self::ExactlyOnce,
            _ => Self::AtMostOnce,
        }
    }

    /// A form's value: case-insensitive, empty meaning at most once.
    pub fn parse_input(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return Some(Self::AtMostOnce);
        }
        Self::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(value))
    }
}

impl fmt::Display for DeliveryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Option<String>> for DeliveryMode {
    /// A `jobwheel_job_delivery` column as read.
    fn from(value: Option<String>) -> Self {
        Self::from_stored(value.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::DeliveryMode;

    #[test]
    fn names_parse_back_and_only_exactly_once_is_stored() {
        for mode in DeliveryMode::ALL {
            assert_eq!(DeliveryMode::parse_input(&mode.name().to_lowercase()), Some(mode));
            assert_eq!(DeliveryMode::from_stored(mode.stored()), mode);
        }
        assert_eq!(DeliveryMode::AtMostOnce.stored(), None);
        assert_eq!(DeliveryMode::parse_input(""), Some(DeliveryMode::AtMostOnce));
        assert_eq!(DeliveryMode::parse_input("twice"), None);
        for mode in DeliveryMode::ALL {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{}\"", mode.name()));
            assert_eq!(serde_json::from_str::<DeliveryMode>(&json).unwrap(), mode);
        }
    }
}
