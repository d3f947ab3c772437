//! A job's trigger priority (jobwheel extension; `docs/scheduling.md`, "Concurrency cap and
//! priorities"): stored in `jobwheel_job_priority` as `HIGH` or `LOW`, no row for normal, and
//! sent to jobwheel executors in the trigger, which run high before normal before low when a
//! job thread's queue holds several.

use std::fmt;

use serde::{Serialize, Serializer};

/// How a job's queued runs are ordered on a jobwheel executor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Priority {
    /// Ahead of the others.
    High,
    /// No row in `jobwheel_job_priority`.
    #[default]
    Normal,
    /// Behind the others.
    Low,
}

impl Priority {
    /// All three, in the UI's order.
    pub const ALL: [Self; 3] = [Self::High, Self::Normal, Self::Low];

    /// The name the API and the UI use.
    pub fn name(self) -> &'static str {
        match self {
            Self::High => "HIGH",
            Self::Normal => "NORMAL",
            Self::Low => "LOW",
        }
    }

    /// What `jobwheel_job_priority` and the trigger carry: nothing for normal.
    pub fn stored(self) -> Option<&'static str> {
        (self != Self::Normal).then(|| self.name())
    }

    /// A stored or sent value; anything else (no row included) is normal.
    pub fn from_stored(value: Option<&str>) -> Self {
        match value {
            Some("HIGH") => Self::High,
            Some("LOW") => Self::Low,
            _ => Self::Normal,
        }
    }

    /// A form's value: case-insensitive, empty meaning normal.
    pub fn parse_input(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return Some(Self::Normal);
        }
        Self::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(value))
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Option<String>> for Priority {
    /// A `jobwheel_job_priority` column as read.
    fn from(value: Option<String>) -> Self {
        Self::from_stored(value.as_deref())
    }
}

impl Serialize for Priority {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}
