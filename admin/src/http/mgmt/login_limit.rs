//! Login throttling: after [`MAX_FAILURES`] failed logins for one username, or from one client
//! address (an IPv6 client by its /64), within [`WINDOW`], further attempts are refused with 429
//! until the window passes. An attempt takes its place before its password is checked.
//!
//! Both keys, because an attacker either tries many passwords for one account (per-name limit)
//! or one common password across many accounts (per-address limit). In memory and per admin
//! process: with N admins behind a balancer the effective limit is N times higher, which still
//! turns online guessing from thousands per second into a handful per minute.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures allowed per key within [`WINDOW`].
pub(crate) const MAX_FAILURES: usize = 5;
/// The sliding window.
pub(crate) const WINDOW: Duration = Duration::from_secs(300);
/// Keys tracked at most; beyond this the oldest entries are dropped (memory bound under a
/// spray of distinct usernames).
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    User(String),
    Addr(IpAddr),
}

/// One key's failures within the window, and its attempts being checked right now.
#[derive(Debug, Default)]
struct Entry {
    failures: Vec<Instant>,
    in_flight: usize,
}

/// Failed-login bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct LoginLimiter {
    entries: Mutex<HashMap<Key, Entry>>,
}

/// A login attempt holding its place under the limit until its outcome is known: attempts in
/// flight count like failures, so concurrent guesses cannot all pass the check before the
/// first failure is recorded (review M1). Dropping it without an outcome frees the place.
pub(crate) struct Attempt<'a> {
    limiter: &'a LoginLimiter,
    keys: Vec<Key>,
    settled: bool,
}

impl LoginLimiter {
    /// Takes a place for one attempt, or `Err(seconds to wait)` if either key's failures and
    /// attempts in flight have reached the limit.
    pub(crate) fn reserve(
        &self,
        username: &str,
        addr: Option<IpAddr>,
        now: Instant,
    ) -> Result<Attempt<'_>, u64> {
        let mut entries = self.lock();
        if entries.len() >= MAX_KEYS {
            entries.retain(|_, e| {
                e.in_flight > 0 || e.failures.last().is_some_and(|t| now.duration_since(*t) < WINDOW)
            });
            if entries.len() >= MAX_KEYS {
                entries.retain(|_, e| e.in_flight > 0);
            }
        }
        let keys: Vec<Key> = keys(username, addr).collect();
        let mut wait = 0;
        for key in &keys {
            if let Some(entry) = entries.get_mut(key) {
                entry.failures.retain(|t| now.duration_since(*t) < WINDOW);
                if entry.failures.len() + entry.in_flight >= MAX_FAILURES {
                    // Failures free their place when they leave the window; attempts in flight
                    // within a second.
                    let left = match entry.failures.len().checked_sub(MAX_FAILURES) {
                        Some(over) => {
                            WINDOW.saturating_sub(now.duration_since(entry.failures[over])).as_secs()
                        }
                        None => 1,
                    };
                    wait = wait.max(left.max(1));
                }
            }
        }
        if wait > 0 {
            return Err(wait);
        }
        for key in &keys {
            entries.entry(key.clone()).or_default().in_flight += 1;
        }
        Ok(Attempt { limiter: self, keys, settled: false })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        // Each critical section leaves the map consistent: a poisoned lock is still usable.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Attempt<'_> {
    /// The password was wrong: the attempt counts as a failure for both keys.
    pub(crate) fn failed(mut self, now: Instant) {
        self.settle(Some(now));
    }

    /// The login succeeded: its username's failures are cleared (not the address's).
    pub(crate) fn succeeded(mut self) {
        self.settle(None);
        if let Some(user @ Key::User(_)) = self.keys.first() {
            self.limiter.lock().remove(user);
        }
    }

    fn settle(&mut self, failed_at: Option<Instant>) {
        if self.settled {
            return;
        }
        self.settled = true;
        let mut entries = self.limiter.lock();
        for key in &self.keys {
            if let Some(entry) = entries.get_mut(key) {
                entry.in_flight = entry.in_flight.saturating_sub(1);
                if let Some(at) = failed_at {
                    entry.failures.push(at);
                }
            }
        }
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.settle(None);
    }
}

/// The username key, and the address key: IPv6 clients by their /64, which one host usually
/// has whole, so rotating addresses inside it gains nothing. The name in lower case: MySQL's
/// collation and LDAP find `admin` as `Admin` and `ADMIN`, so each spelling must not count as
/// another account (review N13).
fn keys(username: &str, addr: Option<IpAddr>) -> impl Iterator<Item = Key> {
    std::iter::once(Key::User(username.to_lowercase())).chain(addr.map(|ip| Key::Addr(client_key(ip))))
}

/// A client address as throttles count it: IPv4 as is, IPv6 by its /64.
pub(crate) fn client_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

/// Refused logins (throttled, malformed) folded for the audit log (review M2): the first of a
/// client in each window is recorded, with how many the client's previous window folded; the
/// rest are only counted, so a flood of them cannot grow the audit table or keep its writer busy.
#[derive(Debug, Default)]
pub(crate) struct RefusedLogins {
    windows: Mutex<HashMap<String, (Instant, u64)>>,
}

impl RefusedLogins {
    /// `Some(folded in the client's previous window)` when this refusal is to be recorded.
    pub(crate) fn admit(&self, client: &str, now: Instant) -> Option<u64> {
        let mut windows = self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() >= MAX_KEYS {
            windows.retain(|_, (start, _)| now.duration_since(*start) < WINDOW);
            if windows.len() >= MAX_KEYS {
                windows.clear();
            }
        }
        match windows.get_mut(client) {
            Some((start, count)) if now.duration_since(*start) < WINDOW => {
                *count += 1;
                None
            }
            Some((start, count)) => {
                let folded = count.saturating_sub(1);
                *start = now;
                *count = 1;
                Some(folded)
            }
            None => {
                windows.insert(client.to_owned(), (now, 1));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sixth_failure_within_the_window_is_refused_until_it_passes() {
        let limiter = LoginLimiter::default();
        let start = Instant::now();
        let addr: IpAddr = "10.0.0.1".parse().unwrap();
        for i in 0..MAX_FAILURES {
            let attempt =
                limiter.reserve("alice", Some(addr), start).unwrap_or_else(|_| panic!("attempt {i}"));
            attempt.failed(start);
        }
        assert_eq!(limiter.reserve("alice", None, start).err(), Some(WINDOW.as_secs()));
        // Same address, another name: refused by the address key.
        assert!(limiter.reserve("bob", Some(addr), start).is_err());
        // Another address and name: fine.
        assert!(limiter.reserve("bob", Some("10.0.0.2".parse().unwrap()), start).is_ok());
        assert!(limiter.reserve("alice", None, start + WINDOW).is_ok());
    }

    #[test]
    fn attempts_in_flight_hold_their_places() {
        let limiter = LoginLimiter::default();
        let now = Instant::now();
        let held: Vec<_> =
            (0..MAX_FAILURES).map(|_| limiter.reserve("dave", None, now).expect("place")).collect();
        assert_eq!(limiter.reserve("dave", None, now).err(), Some(1), "all places taken by checks in flight");
        drop(held);
        assert!(limiter.reserve("dave", None, now).is_ok(), "places freed without an outcome");
    }

    #[test]
    fn success_clears_the_username_and_ipv6_clients_count_by_their_64() {
        let limiter = LoginLimiter::default();
        let now = Instant::now();
        for n in 0..MAX_FAILURES {
            let addr: IpAddr = format!("2001:db8:1:2::{n:x}").parse().unwrap();
            limiter.reserve(&format!("user{n}"), Some(addr), now).expect("place").failed(now);
        }
        let neighbour: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(limiter.reserve("eve", Some(neighbour), now).is_err(), "same /64");
        assert!(limiter.reserve("eve", Some("2001:db8:1:3::1".parse().unwrap()), now).is_ok());
        for _ in 0..MAX_FAILURES {
            limiter.reserve("carol", None, now).expect("place").failed(now);
        }
        assert!(limiter.reserve("carol", None, now).is_err());
        limiter.lock().remove(&Key::User("carol".to_owned()));
        limiter.reserve("carol", None, now).expect("place").succeeded();
        assert!(limiter.reserve("carol", None, now).is_ok());
    }

    #[test]
    fn refused_logins_are_recorded_once_per_client_and_window() {
        let refused = RefusedLogins::default();
        let now = Instant::now();
        assert_eq!(refused.admit("10.0.0.1", now), Some(0));
        assert_eq!(refused.admit("10.0.0.1", now), None);
        assert_eq!(refused.admit("10.0.0.1", now), None);
        assert_eq!(refused.admit("10.0.0.2", now), Some(0), "another client");
        assert_eq!(refused.admit("10.0.0.1", now + WINDOW), Some(2), "the next window says what was folded");
    }
}
