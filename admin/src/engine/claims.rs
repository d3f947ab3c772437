//! Which ring claims this process holds — in its ring or queued on its trigger pools — so that
//! claim recovery (`recover.rs`) picks up only the claims of dead admins (or our own, once
//! their trigger finished without consuming them), and the shard claims one broadcast holds.
//!
//! The scheduler holds a claim when it puts it in the ring or on a pool; the trigger path
//! releases it once the trigger has run. Both share one [`InFlight`].

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use crate::store::ClaimId;

/// The claims this process owns right now.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    claims: Mutex<HashSet<ClaimId>>,
}

impl InFlight {
    /// Marks a claim as owned by this process (in the ring or queued), so recovery leaves it.
    pub(crate) fn hold(&self, claim: ClaimId) {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner).insert(claim);
    }

    /// The claim's trigger has run (or was dropped): recovery may look at it again.
    pub(crate) fn release(&self, claim: ClaimId) {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner).remove(&claim);
    }

    /// Whether this process holds `claim`.
    pub(crate) fn holds(&self, claim: ClaimId) -> bool {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner).contains(&claim)
    }
}

/// The shard claims a broadcast trigger holds while it fires them one by one; whatever is still
/// held when the trigger ends early (an error midway) is released, so recovery may pick it up.
pub(super) struct HeldClaims<'a> {
    in_flight: &'a InFlight,
    claims: Vec<ClaimId>,
}

impl<'a> HeldClaims<'a> {
    pub(super) fn new(in_flight: &'a InFlight) -> Self {
        Self { in_flight, claims: Vec::new() }
    }

    pub(super) fn hold(&mut self, claim: ClaimId) {
        self.in_flight.hold(claim);
        self.claims.push(claim);
    }

    pub(super) fn release(&mut self, claim: ClaimId) {
        self.in_flight.release(claim);
        self.claims.retain(|held| *held != claim);
    }
}

impl Drop for HeldClaims<'_> {
    fn drop(&mut self) {
        for claim in self.claims.drain(..) {
            self.in_flight.release(claim);
        }
    }
}
