//! Fault points: named places in the engine where a debug build can be told to die with
//! SIGKILL, so the soak (`scripts/soak.sh`) and the failover tests place a crash in a phase —
//! during the pre-read, after a claim commits, between `/run` sent and its outcome stored,
//! after results are stored — by the order of statements rather than by timing luck.
//!
//! How a test arms one: the admin is started with `JOBWHEEL_FAULT_FILE=<path>`; writing a
//! point's name (`pre-read`, `claim`, `dispatch`, `outcome`) into that file makes the process
//! raise SIGKILL the next time it passes that point. The file is read at each passage only
//! while the variable is set, and release builds (`debug_assertions` off) compile the check
//! away: a production binary has no way to be told to die.

use std::fmt;

/// A place in the engine where a crash can be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// The pre-read has read its due jobs; its transaction (claims, trigger times) is not
    /// committed.
    PreRead,
    /// The pre-read's claims are committed; none is in the ring or on a pool yet.
    Claim,
    /// `/run` has been answered by an executor; the trigger's outcome is not stored.
    Dispatch,
    /// A batch of results is stored; the executor has no answer yet and nothing was
    /// completed (child jobs, workflow nodes, FIX_DELAY).
    Outcome,
}

impl FaultPoint {
    /// Every point, for tests and the soak's plan.
    pub const ALL: [FaultPoint; 4] = [Self::PreRead, Self::Claim, Self::Dispatch, Self::Outcome];

    /// The name written into the fault file.
    pub fn name(self) -> &'static str {
        match self {
            Self::PreRead => "pre-read",
            Self::Claim => "claim",
            Self::Dispatch => "dispatch",
            Self::Outcome => "outcome",
        }
    }
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The variable naming the fault file.
pub const FAULT_FILE_VAR: &str = "JOBWHEEL_FAULT_FILE";

/// Passes `point`: in a debug build whose fault file names it, the process dies here.
#[inline]
pub fn pass(point: FaultPoint) {
    #[cfg(debug_assertions)]
    armed::pass(point);
    #[cfg(not(debug_assertions))]
    let _ = point;
}

#[cfg(debug_assertions)]
mod armed {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use super::{FAULT_FILE_VAR, FaultPoint};

    static FILE: OnceLock<Option<PathBuf>> = OnceLock::new();

    #[expect(
        clippy::print_stderr,
        reason = "written straight to stderr: a buffered log line would die with the process"
    )]
    pub(super) fn pass(point: FaultPoint) {
        let Some(path) = FILE.get_or_init(|| std::env::var_os(FAULT_FILE_VAR).map(PathBuf::from)) else {
            return;
        };
        let Ok(armed) = std::fs::read_to_string(path) else { return };
        if armed.trim() == point.name() {
            // stderr is unbuffered: the line is in the log before the signal lands.
            eprintln!("fault point {point}: raising SIGKILL");
            // SIGKILL rather than abort: no handler, no unwinding, no flush — a crash as the
            // soak's outside kills make one. Falls back to abort if raise fails.
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            std::process::abort();
        }
    }
}
