//! The 60-slot time ring (upstream `JobScheduleHelper.ringData`, docs/upstream.md §5.1),
//! holding durable claim ids instead of bare job ids.
//!
//! The pre-read pushes every trigger due within the next 5 s into the slot of its second; the
//! ring thread wakes at each whole second and takes the current slot and the two before it, so
//! a slot missed by a late wake-up is still fired. Upstream de-duplicates each slot by job id;
//! we de-duplicate by claim id, which is the same thing for a slot filled within one 5 s window
//! (one job cannot be claimed twice for the same second) and never strands a claim.
//!
//! Early: the ring thread wakes [`EngineConfig::fire_lead`](super::EngineConfig::fire_lead)
//! (200 ms) before each second and hands that second's slot to the pools then. Each trigger
//! reads its group (and its job, unless the pre-read's row is still current) and takes its claim at once, without a pool slot, then waits for
//! its second, takes a slot, routes with the live registry and sends `/run`. So the work left
//! at the second is the route and the request — every trigger of a second is due at its start,
//! and database work done at it made the second's last triggers late. No trigger leaves before
//! its second. The cost: an admin killed in the lead before a second has taken that second's
//! claims without sending them, which leaves them in doubt (a log row with trigger code 0) as a
//! kill during the sends does; upstream loses its whole ring.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use super::fire::{JobSnapshot, TriggerRequest};
use crate::domain::TriggerType;
use crate::store::{ClaimId, JobId, LogId};

/// Upstream `ringSecond(t) = (t / 1000) % 60`.
pub fn ring_second(time_ms: i64) -> u32 {
    // rem_euclid keeps pre-1970 times in range; the value is always 0..60.
    u32::try_from((time_ms.div_euclid(1000)).rem_euclid(60)).unwrap_or(0)
}

/// One scheduled trigger waiting in the ring.
#[derive(Debug, Clone, PartialEq)]
pub struct RingEntry {
    /// The pending claim to consume when firing.
    pub claim: ClaimId,
    /// The job it fires.
    pub job_id: JobId,
    /// The fire time the claim was taken for, epoch ms.
    pub fire_time_ms: i64,
    /// The log row the pre-read staged for it (`None`: a broadcast, whose shards are decided
    /// at fire time).
    pub staged_log: Option<LogId>,
    /// The job as the pre-read read it: the trigger fires with it unless a job was edited since.
    pub job: Option<JobSnapshot>,
}

/// Slots by second.
#[derive(Debug, Default)]
pub(crate) struct TimeRing {
    slots: Mutex<HashMap<u32, Vec<RingEntry>>>,
}

impl TimeRing {
    /// Adds `entry` to the slot of `second`.
    pub(crate) fn push(&self, second: u32, entry: RingEntry) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.entry(second % 60).or_default().push(entry);
    }

    /// Removes and returns the entries of `now_second` and the two seconds before it
    /// (upstream ≥ 3.3.0), each slot de-duplicated, current second first.
    pub(crate) fn take_due(&self, now_second: u32) -> Vec<RingEntry> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut due = Vec::new();
        for back in 0..=2 {
            let second = (now_second % 60 + 60 - back) % 60;
            if let Some(entries) = slots.remove(&second) {
                let mut seen = HashSet::new();
                due.extend(entries.into_iter().filter(|entry| seen.insert(entry.claim)));
            }
        }
        due
    }

    /// How many entries wait in the ring.
    pub(crate) fn len(&self) -> usize {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().map(Vec::len).sum()
    }

    /// Whether the ring is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RingEntry {
    /// The trigger this entry fires: a CRON trigger of its claim, with the staged log row and
    /// the pre-read's job row, not to be sent before `release_ms`.
    pub(crate) fn request(&self, release_ms: Option<i64>) -> TriggerRequest {
        TriggerRequest {
            claim: Some(self.claim),
            scheduled_ms: Some(self.fire_time_ms),
            staged_log: self.staged_log,
            snapshot: self.job.clone(),
            release_ms,
            ..TriggerRequest::new(self.job_id, TriggerType::Cron)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(claim: i64) -> RingEntry {
        RingEntry { claim: ClaimId(claim), job_id: JobId(1), fire_time_ms: 0, staged_log: None, job: None }
    }

    #[test]
    fn ring_second_is_the_second_of_the_minute() {
        assert_eq!(ring_second(1_893_456_059_999), 59);
        assert_eq!(ring_second(1_893_456_060_000), 0);
        assert_eq!(ring_second(-1), 59);
    }

    #[test]
    fn take_due_reads_current_and_two_previous_slots_with_wraparound() {
        let ring = TimeRing::default();
        ring.push(58, entry(1));
        ring.push(59, entry(2));
        ring.push(0, entry(3));
        ring.push(0, entry(3));
        ring.push(1, entry(4));
        let due: Vec<i64> = ring.take_due(0).iter().map(|e| e.claim.0).collect();
        assert_eq!(due, vec![3, 2, 1]);
        assert_eq!(ring.len(), 1);
        assert!(ring.take_due(0).is_empty());
    }
}
