//! Waiting on conditions with deadlines instead of sleeping for luck.

use std::future::Future;
use std::time::{Duration, Instant};

/// Polls `condition` every 10 ms until it holds; panics naming `what` after `timeout`.
pub async fn wait_until(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Like [`wait_until`] for an async condition; returns the first `Some` value it yields.
pub async fn wait_until_async<T, F, Fut>(timeout: Duration, what: &str, mut condition: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = condition().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
