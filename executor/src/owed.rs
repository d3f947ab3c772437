//! The runs this process owes an admin a result for: accepted by `/run` and not yet stored by
//! an admin (queued, running, finished with the result journaled or spooled), plus the results
//! a killed predecessor left spooled. `/outstanding` answers from it.
//!
//! Why: an executor restarted on the same address stays registered, so the admin's lost-job
//! monitor (which looks for addresses that left the registry, as upstream's does) would never
//! close the runs its predecessor took down. A new process draws a new [`incarnation`]; an admin
//! that sees it asks which of the runs it has open here this process still owes, and closes the
//! rest as lost. The answer is exact because an id enters the set before `/run` answers (so
//! before the admin marks the run as triggered) and leaves only once an admin stored its result.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use md5::{Digest as _, Md5};

/// Log ids owed; cheap to clone (one shared set).
#[derive(Debug, Clone, Default)]
pub(crate) struct Owed {
    ids: Arc<Mutex<HashSet<i64>>>,
}

impl Owed {
    /// `log_id` was accepted, or found in a spool file at start; whether it was new.
    pub(crate) fn insert(&self, log_id: i64) -> bool {
        self.lock().insert(log_id)
    }

    /// An admin stored these results.
    pub(crate) fn settled(&self, log_ids: impl IntoIterator<Item = i64>) {
        let mut ids = self.lock();
        for id in log_ids {
            ids.remove(&id);
        }
    }

    /// Those of `asked` still owed, in the order asked.
    pub(crate) fn among(&self, asked: &[i64]) -> Vec<i64> {
        let ids = self.lock();
        asked.iter().copied().filter(|id| ids.contains(id)).collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<i64>> {
        // Every critical section is one set operation: a poisoned lock holds a consistent set.
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// This process's incarnation: the MD5 of its pid and start time in nanoseconds, so a restart
/// on the same address (same pid or not) reports a different one.
pub(crate) fn incarnation() -> String {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = format!("{}:{nanos}", std::process::id());
    hex::encode(Md5::digest(seed.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::{Owed, incarnation};

    #[test]
    fn owed_runs_are_those_accepted_and_not_yet_settled() {
        let owed = Owed::default();
        owed.insert(1);
        owed.insert(2);
        owed.insert(3);
        owed.settled([2]);
        assert_eq!(owed.among(&[3, 2, 1, 9]), vec![3, 1]);
    }

    #[test]
    fn every_start_draws_another_incarnation() {
        let first = incarnation();
        std::thread::sleep(std::time::Duration::from_millis(1));
        assert_ne!(first, incarnation());
        assert_eq!(first.len(), 32);
    }
}
