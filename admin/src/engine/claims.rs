//! Which ring claims this process holds — in its ring or queued on its trigger pools — so that
//! claim recovery (`recover.rs`) picks up only the claims of dead admins (or our own, once
//! their trigger finished without consuming them).

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
