//! Kill plans: which process the chaos scenario kills, when, how and for how long, drawn from
//! one seed so a reported run's plan can be replayed.
//!
//! The draws keep the order the chaos suite has always used — a pause of 2–4 s, then a victim
//! among admins and executors, then 0.3–1.5 s down — so a seed printed by an earlier run still
//! replays the same victims and pauses. How an admin dies is drawn from a second generator
//! seeded from the same seed: in a *phased* plan, four in five admin kills are a fault point
//! (`jobwheel_admin::fault`) armed in the admin, which then dies by its own SIGKILL in that
//! phase — during a pre-read, right after its claims commit, between `/run` answered and the
//! outcome stored, or after results are stored and before they are completed — rather than
//! wherever an outside SIGKILL happens to land. Executors are always killed from outside.

use std::time::Duration;

use jobwheel_admin::fault::FaultPoint;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

/// Mixed into the seed for the second generator (how admins die): any odd constant does.
const HOW_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// A plan: its seed, how long the kills go on, and whether admins die at fault points.
#[derive(Debug, Clone, Copy)]
pub struct KillPlan {
    pub seed: u64,
    pub chaos: Duration,
    pub phased: bool,
}

impl KillPlan {
    /// The chaos suite's plan: 45 s of phased kills, the seed from `JOBWHEEL_CHAOS_SEED` when
    /// set (a reported run's plan), else a random one. (Seeds reported before 2026-12-05 were
    /// outside kills only: `soak --outside-only --chaos-secs 45 --seeds <seed>` replays them.)
    pub fn from_env() -> KillPlan {
        let seed = std::env::var("JOBWHEEL_CHAOS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(rand::random);
        KillPlan { seed, chaos: Duration::from_secs(45), phased: true }
    }

    /// Words after the seed in a report: how admins die and for how long the kills go on.
    pub fn describe(&self) -> String {
        let how = if self.phased { "phased" } else { "outside kills only" };
        format!(" ({how}, {} s)", self.chaos.as_secs())
    }

    /// The plan's draws for a cluster of `size` processes, the first `admins` of them admins.
    pub fn draws(&self, size: usize, admins: usize) -> Draws {
        Draws {
            when: StdRng::seed_from_u64(self.seed),
            how: StdRng::seed_from_u64(self.seed ^ HOW_SEED),
            phased: self.phased,
            size,
            admins,
        }
    }
}

/// How a process dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum How {
    /// SIGKILL from outside, wherever the process is.
    Outside,
    /// The admin's own SIGKILL at this fault point (an outside one if it is not reached soon).
    Fault(FaultPoint),
}

/// One kill.
#[derive(Debug, Clone, Copy)]
pub struct Kill {
    /// Admins first, then executors.
    pub victim: usize,
    /// How long it stays down before its restart.
    pub down: Duration,
    pub how: How,
}

/// The draws of one plan, in order.
pub struct Draws {
    when: StdRng,
    how: StdRng,
    phased: bool,
    size: usize,
    admins: usize,
}

impl Draws {
    /// The pause before the next kill.
    pub fn pause(&mut self) -> Duration {
        Duration::from_millis(self.when.random_range(2_000..4_000))
    }

    /// The next kill (after its pause).
    pub fn kill(&mut self) -> Kill {
        let victim = self.when.random_range(0..self.size);
        let down = Duration::from_millis(self.when.random_range(300..1_500));
        let how = if self.phased && victim < self.admins {
            // One in five from outside: a crash between the phases counts too.
            match self.how.random_range(0..=FaultPoint::ALL.len()) {
                n if n < FaultPoint::ALL.len() => How::Fault(FaultPoint::ALL[n]),
                _ => How::Outside,
            }
        } else {
            How::Outside
        };
        Kill { victim, down, how }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_victims_and_pauses_phased_or_not() {
        let plain = KillPlan { seed: 409_884_778_338_362_644, chaos: Duration::from_secs(45), phased: false };
        let phased = KillPlan { phased: true, ..plain };
        let (mut a, mut b) = (plain.draws(4, 2), phased.draws(4, 2));
        let mut faults = 0;
        for _ in 0..40 {
            assert_eq!(a.pause(), b.pause());
            let (x, y) = (a.kill(), b.kill());
            assert_eq!((x.victim, x.down), (y.victim, y.down));
            assert_eq!(x.how, How::Outside);
            if y.victim >= 2 {
                assert_eq!(y.how, How::Outside, "executors die from outside");
            }
            faults += usize::from(matches!(y.how, How::Fault(_)));
        }
        assert!(faults > 5, "a phased plan places most admin kills at fault points: {faults} of 40 kills");
    }
}
