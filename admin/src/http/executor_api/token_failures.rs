//! Throttling of wrong access tokens on the executor-facing API (`/api/*`, the job OpenAPI
//! included; review L4): a client address (an IPv6 client by its /64) that sent
//! [`MAX_FAILURES`] requests with a wrong or missing token within [`WINDOW`] is refused before
//! its token is looked at, until the window passes.
//!
//! Executors always send the right token, so they never meet this; a guesser gets a handful of
//! tries a minute instead of as many as the admin can answer. Counted per admin process, in
//! memory, like the login throttle, and bounded in the addresses it tracks.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::http::mgmt::login_limit::client_key;

/// Wrong-token requests allowed per address within [`WINDOW`].
pub(crate) const MAX_FAILURES: u32 = 60;
/// The fixed window the failures are counted in.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at most; beyond this, those whose window has passed are dropped, then all.
const MAX_KEYS: usize = 100_000;

/// Failures of one address in its current window.
#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

/// Wrong-token bookkeeping per client address.
#[derive(Debug, Default)]
pub(crate) struct TokenFailures {
    windows: Mutex<HashMap<IpAddr, Window>>,
}

impl TokenFailures {
    /// `Some(seconds to wait)` if `addr` has used up its failures in the current window.
    pub(crate) fn blocked(&self, addr: IpAddr, now: Instant) -> Option<u64> {
        let windows = self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let window = windows.get(&client_key(addr))?;
        let age = now.saturating_duration_since(window.started);
        (age < WINDOW && window.failures >= MAX_FAILURES).then(|| WINDOW.saturating_sub(age).as_secs().max(1))
    }

    /// Counts one request from `addr` whose token was wrong or missing.
    pub(crate) fn failed(&self, addr: IpAddr, now: Instant) {
        let mut windows = self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if windows.len() >= MAX_KEYS {
            windows.retain(|_, w| now.saturating_duration_since(w.started) < WINDOW);
            if windows.len() >= MAX_KEYS {
                windows.clear();
            }
        }
        let window = windows.entry(client_key(addr)).or_insert(Window { started: now, failures: 0 });
        if now.saturating_duration_since(window.started) >= WINDOW {
            *window = Window { started: now, failures: 0 };
        }
        window.failures = window.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_blocked_after_its_failures_until_the_window_passes() {
        let limiter = TokenFailures::default();
        let now = Instant::now();
        let guesser: IpAddr = "2001:db8:1:2::7".parse().unwrap();
        for _ in 0..MAX_FAILURES {
            assert_eq!(limiter.blocked(guesser, now), None);
            limiter.failed(guesser, now);
        }
        assert_eq!(limiter.blocked(guesser, now), Some(60));
        assert!(limiter.blocked("2001:db8:1:2::8".parse().unwrap(), now).is_some(), "same /64");
        assert_eq!(limiter.blocked("10.0.0.1".parse().unwrap(), now), None, "others are not");
        assert_eq!(limiter.blocked(guesser, now + WINDOW), None, "the window passed");
    }
}
