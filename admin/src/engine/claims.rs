//! Which ring claims this process holds — in its ring or queued on its trigger pools — so that
//! claim recovery (`recover.rs`) picks up only the claims of dead admins (or our own, once
//! their trigger finished without consuming them), and the shard claims one broadcast holds.

use super::Engine;
use crate::store::ClaimId;

impl Engine {
    /// Marks a claim as owned by this process (in the ring or queued), so recovery leaves it.
    pub(crate) fn hold_claim(&self, claim: ClaimId) {
        self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(claim);
    }

    /// The claim's trigger has run (or was dropped): recovery may look at it again.
    pub(crate) fn release_claim(&self, claim: ClaimId) {
        self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&claim);
    }

    /// Whether this process holds `claim`.
    pub(crate) fn holds_claim(&self, claim: ClaimId) -> bool {
        self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&claim)
    }
}

/// The shard claims a broadcast trigger holds while it fires them one by one; whatever is still
/// held when the trigger ends early (an error midway) is released, so recovery may pick it up.
pub(super) struct HeldClaims<'a> {
    engine: &'a Engine,
    claims: Vec<ClaimId>,
}

impl<'a> HeldClaims<'a> {
    pub(super) fn new(engine: &'a Engine) -> Self {
        Self { engine, claims: Vec::new() }
    }

    pub(super) fn hold(&mut self, claim: ClaimId) {
        self.engine.hold_claim(claim);
        self.claims.push(claim);
    }

    pub(super) fn release(&mut self, claim: ClaimId) {
        self.engine.release_claim(claim);
        self.claims.retain(|held| *held != claim);
    }
}

impl Drop for HeldClaims<'_> {
    fn drop(&mut self) {
        for claim in self.claims.drain(..) {
            self.engine.release_claim(claim);
        }
    }
}
