//! Which executor registrations this admin has seen recently, so that only a new executor
//! (or one back after its registry row may have expired) triggers a group address refresh.
//!
//! Executors send a heartbeat every 30 s. Refreshing the group on each one would rewrite every
//! group twice a minute per executor; the registry monitor already does that every 30 s. What
//! the edge must not wait for is the first heartbeat of a new executor.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::RegistryKey;

/// Most registrations remembered; beyond it, entries older than the TTL are dropped first,
/// and if that is not enough the map is cleared (every executor then refreshes once more).
const MAX_ENTRIES: usize = 100_000;

type Key = (String, String, String);

/// Registrations seen by this admin and when.
pub(crate) struct RecentRegistrations {
    ttl: Duration,
    seen: Mutex<HashMap<Key, Instant>>,
}

impl RecentRegistrations {
    /// `ttl`: after this long without a heartbeat, the registry row may have been deleted as
    /// dead (upstream: 90 s), so the next heartbeat counts as new again.
    pub(crate) fn new(ttl: Duration) -> Self {
        Self { ttl, seen: Mutex::new(HashMap::new()) }
    }

    /// Records a heartbeat at `now`; true if the registration was not seen within the TTL.
    pub(crate) fn record(&self, key: &RegistryKey, now: Instant) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ttl = self.ttl;
        let fresh = |at: &Instant| now.saturating_duration_since(*at) <= ttl;
        if seen.len() >= MAX_ENTRIES {
            seen.retain(|_, at| fresh(at));
            if seen.len() >= MAX_ENTRIES {
                seen.clear();
            }
        }
        let previous = seen.insert(key_of(key), now);
        !previous.is_some_and(|at| fresh(&at))
    }

    /// Forgets a registration (after `registryRemove`), so its next heartbeat counts as new.
    pub(crate) fn forget(&self, key: &RegistryKey) {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&key_of(key));
    }
}

fn key_of(key: &RegistryKey) -> Key {
    (key.registry_group.clone(), key.registry_key.clone(), key.registry_value.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(value: &str) -> RegistryKey {
        RegistryKey {
            registry_group: "EXECUTOR".to_owned(),
            registry_key: "app".to_owned(),
            registry_value: value.to_owned(),
        }
    }

    #[test]
    fn only_new_or_expired_registrations_count() {
        let recent = RecentRegistrations::new(Duration::from_secs(90));
        let t0 = Instant::now();
        assert!(recent.record(&key("a"), t0), "first heartbeat");
        assert!(!recent.record(&key("a"), t0 + Duration::from_secs(30)), "regular heartbeat");
        assert!(recent.record(&key("b"), t0 + Duration::from_secs(30)), "another address");
        assert!(recent.record(&key("a"), t0 + Duration::from_secs(121)), "after a gap > ttl");
        recent.forget(&key("a"));
        assert!(recent.record(&key("a"), t0 + Duration::from_secs(122)), "after registryRemove");
    }
}
