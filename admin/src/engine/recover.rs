//! Recovery of ring claims that no live admin is going to fire: the durable half of the time
//! ring (see `docs/engine.md`, "Crash recovery").
//!
//! A pending claim whose fire time is more than [`RECOVERY_GRACE_MS`] in the past, and that
//! this process does not hold in its ring or pools, was taken by an admin that died (or that is
//! hopelessly behind). Under shared scheduling a claim names the admin that took it, and one
//! taken by another admin that is still live (heartbeat within the lease time) is left to it:
//! a slow admin is not a dead one. Such a claim is treated like a trigger the schedule thread found late:
//!
//! - at most 5 s late → fired now, as a CRON trigger;
//! - more than 5 s late → upstream's misfire rules per job: `FIRE_ONCE_NOW` fires the newest of
//!   the job's late claims once, as MISFIRE, and discards the rest; `DO_NOTHING` discards them.
//!
//! A claim with a shard (`"i/total"`) is what is left of a broadcast trigger whose admin died
//! between shards: it fires that shard only, routed like upstream's retry of one shard. Under
//! `FIRE_ONCE_NOW` every left shard of the newest fire time fires.
//!
//! Claims that `DO_NOTHING` discards are recorded as one missed-fire row of the job
//! (`missed.rs`), which raises its alarm once.
//!
//! The job's `trigger_next_time` was already advanced when the claim was taken, so nothing is
//! refreshed — except a FIX_DELAY job parked for a run that is now discarded, which is
//! rescheduled from now. Firing goes through `consume_claim_and_insert_log`, so even if the
//! original admin is alive after all, each claim fires exactly once.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::EngineError;
use super::claims::InFlight;
use super::fire::TriggerRequest;
use super::fix_delay::FixDelay;
use super::missed::MissedFires;
use super::next_times::PRE_READ_MS;
use super::share::LEASE_MS;
use super::trigger::TriggerPath;
use crate::domain::{MisfireStrategy, TriggerType};
use crate::metrics::AdminMetrics;
use crate::store::{ClaimId, ClaimRow, JobId, Store};

/// How late a claim must be before another admin's ring is presumed dead. A live ring fires a
/// claim in its second or one of the two after it.
pub const RECOVERY_GRACE_MS: i64 = 3000;

/// What recovery did with one claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Fired late as CRON (at most 5 s late).
    FiredLate,
    /// Fired once as MISFIRE (`FIRE_ONCE_NOW`).
    FiredMisfire,
    /// Discarded (misfire `DO_NOTHING`, a duplicate under `FIRE_ONCE_NOW`, or a deleted job).
    Discarded,
}

/// Recovery of stale claims; the schedule thread runs a pass every second.
pub struct ClaimRecovery {
    store: Arc<dyn Store>,
    triggers: Arc<TriggerPath>,
    /// Claims this process holds: never stale, however late.
    in_flight: Arc<InFlight>,
    fix_delay: Arc<FixDelay>,
    missed: MissedFires,
    metrics: Arc<AdminMetrics>,
    /// This process's scheduler node under shared scheduling.
    node: Option<String>,
}

impl ClaimRecovery {
    pub(super) fn new(
        store: Arc<dyn Store>,
        triggers: Arc<TriggerPath>,
        (in_flight, fix_delay): (Arc<InFlight>, Arc<FixDelay>),
        missed: MissedFires,
        metrics: Arc<AdminMetrics>,
        node: Option<String>,
    ) -> Self {
        Self { store, triggers, in_flight, fix_delay, missed, metrics, node }
    }

    /// Picks up pending claims left by a crashed admin (see the module docs); returns what
    /// was done with each, by claim id.
    pub async fn recover_claims(&self, now_ms: i64) -> Result<Vec<(ClaimId, Recovery)>, EngineError> {
        let mut stale: Vec<ClaimRow> = self
            .store
            .pending_claims(now_ms - RECOVERY_GRACE_MS)
            .await?
            .into_iter()
            .filter(|claim| !self.in_flight.holds(claim.id))
            .collect();
        // A claim another live admin took in a shared pre-read is its to fire, however late:
        // it may be slow, not dead (its own recovery covers what its ring dropped).
        let mine = self.node.as_deref();
        if stale.iter().any(|c| c.node.is_some() && c.node.as_deref() != mine) {
            let live = self.store.live_schedulers(now_ms - LEASE_MS).await?;
            stale.retain(|c| match c.node.as_deref() {
                Some(node) if Some(node) != mine => !live.iter().any(|l| l == node),
                _ => true,
            });
        }
        let mut done = Vec::new();
        let mut misfired: BTreeMap<JobId, Vec<ClaimRow>> = BTreeMap::new();
        for claim in stale {
            if now_ms - claim.fire_time_ms <= PRE_READ_MS {
                tracing::warn!(job_id = claim.job_id.0, claim = claim.id.0, "firing a recovered claim late");
                self.fire_recovered(&claim, TriggerType::Cron);
                done.push((claim.id, Recovery::FiredLate));
            } else {
                misfired.entry(claim.job_id).or_default().push(claim);
            }
        }
        for (job_id, claims) in misfired {
            done.extend(self.recover_misfired(job_id, claims, now_ms).await?);
        }
        Ok(done)
    }

    async fn recover_misfired(
        &self,
        job_id: JobId,
        mut claims: Vec<ClaimRow>,
        now_ms: i64,
    ) -> Result<Vec<(ClaimId, Recovery)>, EngineError> {
        tracing::warn!(job_id = job_id.0, claims = claims.len(), "schedule misfire of recovered claims");
        let job = self.store.load_job(job_id).await?;
        let fire_once = job
            .as_ref()
            .is_some_and(|j| MisfireStrategy::of(&j.job.misfire_strategy) == MisfireStrategy::FireOnceNow);
        // pending_claims orders by fire time: the newest are last. The newest fire time may
        // hold several claims: the unfired shards of one broadcast trigger, which fire together.
        let newest = match claims.last() {
            Some(last) if fire_once => {
                let newest_fire = last.fire_time_ms;
                let first_newest = claims.iter().position(|c| c.fire_time_ms == newest_fire).unwrap_or(0);
                claims.split_off(first_newest)
            }
            _ => Vec::new(),
        };
        let mut done = Vec::new();
        match &job {
            // Skipped by DO_NOTHING (not superseded by a FIRE_ONCE_NOW fire): one missed-fire
            // row for the job, stored with the discards. Only the admin whose discards succeed
            // writes it.
            Some(job) if newest.is_empty() => {
                let row = |count: usize, first: i64| self.missed.row(job, first, count, now_ms);
                let discarded = self.store.discard_missed(&claims, &row).await?;
                if !discarded.is_empty() {
                    self.missed.recorded(job_id, discarded.len());
                }
                done.extend(discarded.into_iter().map(|id| (id, Recovery::Discarded)));
            }
            _ => {
                for claim in claims {
                    if self.store.discard_claim(claim.id).await? {
                        done.push((claim.id, Recovery::Discarded));
                    }
                }
            }
        }
        if newest.is_empty() {
            // Nothing of this job fires: a FIX_DELAY job parked for it must not wait forever.
            self.fix_delay.unpark(job_id, now_ms).await?;
        }
        if !newest.is_empty() {
            self.metrics.misfire("FIRE_ONCE_NOW", 1);
        }
        for claim in newest {
            self.fire_recovered(&claim, TriggerType::Misfire);
            done.push((claim.id, Recovery::FiredMisfire));
        }
        Ok(done)
    }

    fn fire_recovered(&self, claim: &ClaimRow, trigger_type: TriggerType) {
        self.in_flight.hold(claim.id);
        self.triggers.submit(TriggerRequest {
            claim: Some(claim.id),
            // A shard of a broadcast whose admin died between shards: only that shard fires.
            sharding_param: claim.shard.clone(),
            // Pre-staged: the log row its admin inserted in the pre-read is the one to fire.
            staged_log: claim.log_id,
            scheduled_ms: (trigger_type == TriggerType::Cron).then_some(claim.fire_time_ms),
            ..TriggerRequest::new(claim.job_id, trigger_type)
        });
    }
}
