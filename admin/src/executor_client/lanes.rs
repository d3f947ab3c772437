//! The bound on calls in flight to one executor address, and so on connections to it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// At most this many calls to one executor address at once, so at most this many
/// connections to it. Without a bound reqwest opens a connection for every request that finds
/// none idle: a second's burst of 1 000 triggers to one executor left ~360 connections open
/// (each with its buffers and a task on both sides). HTTP/1.1 carries one request at a time
/// per connection, so the rest wait their turn here, within the call's timeout.
pub(super) const CALLS_PER_ADDRESS: usize = 32;
/// Addresses whose lanes are kept; beyond it, idle lanes are forgotten.
const MAX_LANES: usize = 4096;

/// The per-address bounds on calls in flight.
#[derive(Debug, Default)]
pub(super) struct Lanes(Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>);

impl Lanes {
    pub(super) fn for_address(&self, address: &str) -> Arc<tokio::sync::Semaphore> {
        let mut lanes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lane) = lanes.get(address) {
            return Arc::clone(lane);
        }
        if lanes.len() >= MAX_LANES {
            lanes.retain(|_, lane| lane.available_permits() < CALLS_PER_ADDRESS);
        }
        let lane = Arc::new(tokio::sync::Semaphore::new(CALLS_PER_ADDRESS));
        lanes.insert(address.to_owned(), Arc::clone(&lane));
        lane
    }
}
