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

/// Registrations seen by this admin: when, and the executor process's incarnation (jobwheel
/// executors send one; `engine/restarts.rs` says why).
pub(crate) struct RecentRegistrations {
    ttl: Duration,
    seen: Mutex<HashMap<Key, (Instant, Option<String>)>>,
}

/// What a heartbeat tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Heartbeat {
    /// Not seen within the TTL: the group's address list may lack it.
    pub(crate) new: bool,
    /// It carries an incarnation this admin has not seen for the address: a new process, whose
    /// predecessor's open runs are to be checked. True on the first sight after this admin
    /// started too, as the check is exact whenever it runs.
    pub(crate) new_process: bool,
}

impl RecentRegistrations {
    /// `ttl`: after this long without a heartbeat, the registry row may have been deleted as
    /// dead (upstream: 90 s), so the next heartbeat counts as new again.
    pub(crate) fn new(ttl: Duration) -> Self {
        Self { ttl, seen: Mutex::new(HashMap::new()) }
    }

    /// Records a heartbeat at `now` from the process `incarnation` (`None`: not a jobwheel
    /// executor).
    pub(crate) fn record(&self, key: &RegistryKey, incarnation: Option<&str>, now: Instant) -> Heartbeat {
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ttl = self.ttl;
        let fresh = |at: &Instant| now.saturating_duration_since(*at) <= ttl;
        if seen.len() >= MAX_ENTRIES {
            seen.retain(|_, (at, _)| fresh(at));
            if seen.len() >= MAX_ENTRIES {
                seen.clear();
            }
        }
        let previous = seen.insert(key_of(key), (now, incarnation.map(str::to_owned)));
        let new = !previous.as_ref().is_some_and(|(at, _)| fresh(at));
        let new_process = incarnation.is_some_and(|current| {
            previous.as_ref().and_then(|(_, before)| before.as_deref()) != Some(current)
        });
        Heartbeat { new, new_process }
    }

    /// Whether the last heartbeat this admin saw from `key` carried an incarnation — which only
    /// jobwheel executors send (`Some(true)`) — or not (`Some(false)`: xxl-job's own executors,
    /// pyxxl and other third-party ones); `None` if it has seen none since it started.
    pub(crate) fn is_jobwheel(&self, key: &RegistryKey) -> Option<bool> {
        let seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.get(&key_of(key)).map(|(_, incarnation)| incarnation.is_some())
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
        let new = |beat: Heartbeat| beat.new;
        assert!(new(recent.record(&key("a"), None, t0)), "first heartbeat");
        assert!(!new(recent.record(&key("a"), None, t0 + Duration::from_secs(30))), "regular heartbeat");
        assert!(new(recent.record(&key("b"), None, t0 + Duration::from_secs(30))), "another address");
        assert!(new(recent.record(&key("a"), None, t0 + Duration::from_secs(121))), "after a gap > ttl");
        recent.forget(&key("a"));
        assert!(new(recent.record(&key("a"), None, t0 + Duration::from_secs(122))), "after registryRemove");
    }

    #[test]
    fn a_new_incarnation_on_a_known_address_is_a_new_process() {
        let recent = RecentRegistrations::new(Duration::from_secs(90));
        let t0 = Instant::now();
        let first = recent.record(&key("a"), Some("one"), t0);
        assert_eq!(first, Heartbeat { new: true, new_process: true }, "first sight");
        let again = recent.record(&key("a"), Some("one"), t0 + Duration::from_secs(1));
        assert_eq!(again, Heartbeat { new: false, new_process: false }, "the same process beats");
        let restarted = recent.record(&key("a"), Some("two"), t0 + Duration::from_secs(2));
        assert_eq!(restarted, Heartbeat { new: false, new_process: true }, "restarted within the TTL");
        let upstream = recent.record(&key("b"), None, t0);
        assert!(!upstream.new_process, "executors without an incarnation are never checked");
    }
}
