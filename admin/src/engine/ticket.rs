//! [`SendTicket`]: what a trigger holds until its `/run` calls are out — its trigger-pool slot
//! (`pool.rs`) and its place in the gauge of sends (`sending.rs`). Above both, so the pool and
//! the gauge need not know each other's types.

use super::pool::PoolSlot;
use super::sending::Sending;

/// What a trigger holds until its `/run` calls are out: its trigger-pool slot (upstream's
/// pool bounds the triggers being *sent*; a slot held through the outcome write would keep the
/// second's later triggers waiting for the deferred writes) and its place in the gauge.
#[derive(Debug, Default)]
pub(crate) struct SendTicket {
    slot: PoolSlot,
    sending: Option<Sending>,
}

impl SendTicket {
    /// A ticket for a trigger submitted through the pools.
    pub(crate) fn new(slot: PoolSlot, sending: Sending) -> Self {
        Self { slot, sending: Some(sending) }
    }

    /// Takes the pool slot if the trigger was started without one (handed over early).
    pub(crate) async fn take_slot(&mut self) {
        self.slot.acquire().await;
    }

    /// The trigger's sends are done: frees its pool slot and leaves the gauge.
    pub(crate) fn sent(&mut self) {
        self.slot.release();
        self.sending = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::sending::SendGauge;

    #[test]
    fn a_ticket_leaves_the_gauge_when_sent() {
        let gauge = Arc::new(SendGauge::default());
        let mut ticket = SendTicket::new(PoolSlot::default(), gauge.enter());
        assert_eq!(gauge.sending(), 1);
        ticket.sent();
        assert_eq!(gauge.sending(), 0);
        drop(ticket);
        assert_eq!(gauge.sending(), 0, "left once");
    }
}
