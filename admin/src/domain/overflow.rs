//! What a workflow does with a start beyond its `maxInstances` (jobwheel; docs/workflows.md,
//! "Schedules"): skip it — a scheduled one is kept as MISSED, so it is seen and alarmed — or
//! queue it until a running instance ends.

/// `jobwheel_workflow.overflow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The start does not happen.
    Skip,
    /// The start waits (QUEUED) for a slot.
    Queue,
}

impl Overflow {
    /// Both, in the UI's order.
    pub const ALL: [Overflow; 2] = [Self::Skip, Self::Queue];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Skip => "SKIP",
            Self::Queue => "QUEUE",
        }
    }

    /// The overflow of a stored workflow: an unknown name (a newer admin's) skips, which
    /// never starts more instances than allowed.
    pub fn of(stored: &super::Named<Self>) -> Self {
        stored.known().unwrap_or(Self::Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{KnownName, Named};

    #[test]
    fn names_round_trip_and_an_unknown_stored_name_skips() {
        for o in Overflow::ALL {
            assert_eq!(Overflow::from_name(o.name()), Some(o));
        }
        assert_eq!(Overflow::from_name("queue"), None);
        assert_eq!(Overflow::of(&Named::from("QUEUE")), Overflow::Queue);
        assert_eq!(Overflow::of(&Named::from("LATER")), Overflow::Skip);
    }
}
