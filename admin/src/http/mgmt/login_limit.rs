//! Login throttling: after [`MAX_FAILURES`] failed logins for one username, or from one client
//! address, within [`WINDOW`], further attempts are refused with 429 until the window passes.
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

/// Failed-login bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct LoginLimiter {
    failures: Mutex<HashMap<Key, Vec<Instant>>>,
}

impl LoginLimiter {
    /// `Err(seconds to wait)` if either key is over the limit now.
    pub(crate) fn check(&self, username: &str, addr: Option<IpAddr>, now: Instant) -> Result<(), u64> {
        let mut failures = self.failures.lock().expect("login limiter");
        let mut wait = 0;
        for key in keys(username, addr) {
            if let Some(times) = failures.get_mut(&key) {
                times.retain(|t| now.duration_since(*t) < WINDOW);
                if times.len() >= MAX_FAILURES {
                    let oldest = times[times.len() - MAX_FAILURES];
                    let left = WINDOW.saturating_sub(now.duration_since(oldest));
                    wait = wait.max(left.as_secs().max(1));
                }
            }
        }
        if wait > 0 { Err(wait) } else { Ok(()) }
    }

    /// Records a failed attempt.
    pub(crate) fn failed(&self, username: &str, addr: Option<IpAddr>, now: Instant) {
        let mut failures = self.failures.lock().expect("login limiter");
        if failures.len() >= MAX_KEYS {
            failures.retain(|_, times| times.last().is_some_and(|t| now.duration_since(*t) < WINDOW));
            if failures.len() >= MAX_KEYS {
                failures.clear();
            }
        }
        for key in keys(username, addr) {
            failures.entry(key).or_default().push(now);
        }
    }

    /// A successful login clears its username's failures (not the address's).
    pub(crate) fn succeeded(&self, username: &str) {
        self.failures.lock().expect("login limiter").remove(&Key::User(username.to_owned()));
    }
}

fn keys(username: &str, addr: Option<IpAddr>) -> impl Iterator<Item = Key> {
    std::iter::once(Key::User(username.to_owned())).chain(addr.map(Key::Addr))
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
            assert!(limiter.check("alice", Some(addr), start).is_ok(), "attempt {i}");
            limiter.failed("alice", Some(addr), start);
        }
        let wait = limiter.check("alice", None, start).unwrap_err();
        assert_eq!(wait, WINDOW.as_secs());
        // Same address, another name: refused by the address key.
        assert!(limiter.check("bob", Some(addr), start).is_err());
        // Another address and name: fine.
        assert!(limiter.check("bob", Some("10.0.0.2".parse().unwrap()), start).is_ok());
        assert!(limiter.check("alice", None, start + WINDOW).is_ok());
    }

    #[test]
    fn success_clears_the_username() {
        let limiter = LoginLimiter::default();
        let now = Instant::now();
        for _ in 0..MAX_FAILURES {
            limiter.failed("carol", None, now);
        }
        limiter.succeeded("carol");
        assert!(limiter.check("carol", None, now).is_ok());
    }
}
