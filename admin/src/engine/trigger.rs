//! The trigger path (upstream `JobTriggerPoolHelper.trigger` → `XxlJobTrigger.trigger` →
//! `processTrigger`, docs/upstream.md §5.2–5.3): load job and group, fan out broadcast
//! shards, insert the log row first, build the `TriggerParam`, route, POST `/run`, and write
//! the outcome and upstream's `trigger_msg` back to the log row.
//!
//! [`TriggerPath`] owns what a trigger needs on its way: the trigger pools, the group commit
//! of its store calls, the gauge of sends in progress, the router and the executor clients.
//! This file takes a request to the point where its log rows exist; `shard.rs` sends each
//! shard and records its outcome.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::EngineError;
use super::batch::Batches;
use super::claims::{HeldClaims, InFlight};
use super::clients::ExecutorClients;
use super::config::{EngineConfig, EngineServices};
use super::fire::{TriggerRequest, to_datetime};
use super::fix_delay::FixDelay;
use super::pool::{Entry, TriggerPools};
use super::resolve::{Resolved, route_strategy, targets};
use super::sending::SendGauge;
use super::ticket::SendTicket;
use crate::clock::Clock;

use crate::lang::MessageLang;
use crate::metrics::AdminMetrics;
use crate::routing::{ExecutorRouteStrategy, Router, plan_shards};
use crate::sealing::SecretBox;
use crate::store::{JobId, LogId, NewLog, Store};
use jobwheel_protocol::envelope::SUCCESS_CODE;

/// What one trigger call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerOutcome {
    /// Log rows written, one per shard, with their trigger codes.
    Fired(Vec<(LogId, i32)>),
    /// The claim had already been fired or discarded (by another admin or a duplicate).
    ClaimGone,
    /// The job no longer exists (its claim, if any, was discarded).
    JobMissing,
}

/// The trigger path of one admin process: from a [`TriggerRequest`] to the `/run` calls and the
/// log rows recording them.
pub struct TriggerPath {
    pub(super) store: Arc<dyn Store>,
    pub(super) clients: Arc<ExecutorClients>,
    pub(super) router: Router,
    pools: Arc<TriggerPools>,
    /// Group commit of the hot store calls.
    pub(super) batches: Batches,
    /// Triggers on their way to `/run`; deferred writes and callbacks wait for them.
    sends: Arc<SendGauge>,
    /// Claims this process holds; a trigger releases its claim once it has run.
    in_flight: Arc<InFlight>,
    fix_delay: Arc<FixDelay>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) metrics: Arc<AdminMetrics>,
    /// Opens a Wasm job's secrets for its grant (`None`: this admin has no secret key).
    pub(super) secrets: Option<Arc<SecretBox>>,
    pub(super) lang: MessageLang,
    /// This admin's address, as `trigger_msg` names it.
    pub(super) admin_address: String,
}

impl TriggerPath {
    /// The trigger path over `store`; its pools spawn on `tracker`. `in_flight` and
    /// `fix_delay` are shared with the scheduler and completion.
    pub(super) fn new(
        store: Arc<dyn Store>,
        clients: Arc<ExecutorClients>,
        router: Router,
        config: &EngineConfig,
        services: &EngineServices,
        (in_flight, fix_delay): (Arc<InFlight>, Arc<FixDelay>),
        tracker: TaskTracker,
    ) -> Arc<Self> {
        let sends = Arc::<SendGauge>::default();
        let pools = Arc::new(TriggerPools::new(
            config.pool_sizes(),
            (config.fast_queue, config.slow_queue),
            (config.outcome_backlog, Arc::clone(&sends)),
            Arc::clone(&services.clock),
            tracker,
        ));
        Arc::new(Self {
            batches: Batches::new(Arc::clone(&store), Arc::clone(&sends), config.max_defer),
            store,
            clients,
            router,
            pools,
            sends,
            in_flight,
            fix_delay,
            clock: Arc::clone(&services.clock),
            metrics: Arc::clone(&services.metrics),
            secrets: services.secrets.clone(),
            lang: config.lang,
            admin_address: config.admin_address.clone(),
        })
    }

    /// The gauge of sends in progress (callbacks wait for it: `sending.rs`).
    pub(super) fn sends(&self) -> &Arc<SendGauge> {
        &self.sends
    }

    /// Triggers between their submission and their last `/run`.
    pub fn sending(&self) -> usize {
        self.sends.sending()
    }

    /// Waits until every queued trigger has finished.
    pub async fn wait_idle(&self) {
        self.pools.wait_idle().await;
    }

    /// Whether `job_id` is currently dispatched to the slow trigger pool.
    pub fn uses_slow_pool(&self, job_id: JobId) -> bool {
        self.pools.is_slow(job_id)
    }

    /// Triggers that took a pool slot and have not yet written their outcome (at most
    /// [`EngineConfig::outcome_backlog`]).
    pub fn unrecorded(&self) -> usize {
        self.pools.unrecorded()
    }

    /// Triggers waiting for the fast and the slow trigger pool.
    pub fn pool_waiting(&self) -> (usize, usize) {
        self.pools.waiting()
    }

    /// Waits until the clock reads `release_ms` (epoch ms) or later.
    async fn until_released(&self, release_ms: Option<i64>) {
        let Some(release_ms) = release_ms else { return };
        // A loop, not one sleep: the timer and the wall clock may disagree by a millisecond,
        // and a trigger must not leave before its second by either.
        loop {
            let ahead = release_ms - self.clock.now_ms();
            if ahead <= 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(ahead.unsigned_abs())).await;
        }
    }

    /// Queues `request` on the fast or slow pool (upstream `JobTriggerPoolHelper.trigger`).
    /// Returns false if the pool's backlog is full and the trigger was dropped.
    pub(crate) fn submit(self: &Arc<Self>, request: TriggerRequest) -> bool {
        let path = Arc::clone(self);
        let job_id = request.job_id;
        let claim = request.claim;
        // Counted from submission, so triggers still waiting for a pool slot hold back the
        // deferred writes as well (`sending.rs`).
        let sending = self.sends.enter();
        let entry = if request.release_ms.is_some() { Entry::Early } else { Entry::Now };
        let accepted = self.pools.submit(job_id, entry, move |slot| async move {
            if let Err(e) = path.trigger_with(request, SendTicket::new(slot, sending)).await {
                tracing::error!(job_id = job_id.0, error = %e, "trigger failed");
            }
            if let Some(claim) = claim {
                path.in_flight.release(claim);
            }
        });
        if !accepted && let Some(claim) = claim {
            // The claim stays pending in the database; recovery fires it (late) or applies
            // the misfire rules.
            self.in_flight.release(claim);
        }
        accepted
    }

    /// Triggers a job now and waits for the `/run` calls. The pools call this; so do tests.
    pub async fn trigger(&self, request: TriggerRequest) -> Result<TriggerOutcome, EngineError> {
        self.trigger_with(request, SendTicket::default()).await
    }

    async fn trigger_with(
        &self,
        request: TriggerRequest,
        ticket: SendTicket,
    ) -> Result<TriggerOutcome, EngineError> {
        let span =
            tracing::info_span!("trigger", job_id = request.job_id.0, trigger_type = ?request.trigger_type);
        self.trigger_inner(request, ticket).instrument(span).await
    }

    /// The trigger; `ticket` is given up once its last `/run` is out.
    async fn trigger_inner(
        &self,
        request: TriggerRequest,
        mut ticket: SendTicket,
    ) -> Result<TriggerOutcome, EngineError> {
        // One small read per batch instead of the job rows, while no job was edited since
        // the pre-read (docs/delivery.md, "Fewer durable writes per trigger").
        let current = match &request.snapshot {
            Some(snapshot) if self.batches.job_epoch().await? == snapshot.epoch => {
                Some(Arc::clone(&snapshot.row))
            }
            _ => self.batches.load_job(request.job_id).await?.map(Arc::new),
        };
        let Some(job) = current else {
            tracing::warn!("trigger fail, job not found");
            if let Some(claim) = request.claim {
                self.store.discard_claim(claim).await?;
            }
            return Ok(TriggerOutcome::JobMissing);
        };
        let group = self.batches.load_group(job.job.job_group).await?;
        let client = self.clients.for_group(job.job.job_group).await;
        let targets = targets(group.as_ref(), request.address_list.as_deref(), client);
        let strategy = route_strategy(&job);
        let is_broadcast = strategy == Some(ExecutorRouteStrategy::ShardingBroadcast);
        let shards = plan_shards(is_broadcast, targets.addresses.len(), request.sharding_param.as_deref());
        // Upstream ≥ 3.3.2: every shard of one trigger shares one trigger time. A staged row
        // already holds its scheduled second (upstream's `new Date()` at a punctual fire).
        let trigger_time_ms = match (request.staged_log, request.scheduled_ms) {
            (Some(_), Some(scheduled_ms)) => scheduled_ms,
            _ => self.clock.now_ms(),
        };
        let new_log = NewLog {
            job_group: job.job.job_group,
            job_id: job.id,
            trigger_time: to_datetime(trigger_time_ms),
        };
        let resolved = Resolved { request: &request, job, targets, strategy, is_broadcast, trigger_time_ms };

        // A ring claim covers the whole trigger; a broadcast with several shards splits it into
        // one claim per shard first, so each shard goes out by consuming its own claim and a
        // crash between shards leaves the rest pending for recovery (docs/engine.md).
        let mut shard_claims = vec![None; shards.len()];
        let mut first_log = None;
        let mut held = HeldClaims::new(&self.in_flight);
        match request.claim {
            Some(claim) if shards.len() > 1 => {
                let Some((log_id, rest)) =
                    self.store.split_claim(claim, &new_log, shards.len(), self.clock.now_ms()).await?
                else {
                    return Ok(TriggerOutcome::ClaimGone);
                };
                first_log = Some(log_id);
                for (slot, shard_claim) in shard_claims.iter_mut().skip(1).zip(rest) {
                    held.hold(shard_claim);
                    *slot = Some(shard_claim);
                }
            }
            claim => shard_claims[0] = claim,
        }

        let mut fired = Vec::with_capacity(shards.len());
        let last = shards.len().saturating_sub(1);
        for (position, (shard, shard_claim)) in shards.into_iter().zip(shard_claims).enumerate() {
            let staged = request.staged_log.filter(|_| position == 0);
            let log_id = match (first_log.filter(|_| position == 0), shard_claim, staged) {
                (Some(log_id), ..) => log_id,
                // Pre-staged: the row exists; taking the claim is what makes this admin the
                // one that fires it (another admin's recovery may have been first).
                (None, Some(claim), Some(log_id)) => {
                    if !self.batches.take_claim(claim, self.clock.now_ms()).await? {
                        return Ok(TriggerOutcome::ClaimGone);
                    }
                    log_id
                }
                (None, Some(claim), None) => match self.batches.consume_claim(claim, new_log).await? {
                    Some(log_id) => log_id,
                    None if position == 0 => return Ok(TriggerOutcome::ClaimGone),
                    None => {
                        // Another admin's recovery took this shard while we were slow; it fires it.
                        tracing::warn!(index = shard.index, total = shard.total, "shard fired elsewhere");
                        held.release(claim);
                        continue;
                    }
                },
                // A workflow node: its run was taken with this row (`Workflows::fire`).
                (None, None, Some(log_id)) => log_id,
                (None, None, None) => self.store.insert_log(&new_log).await?,
            };
            if position == 0 {
                // Everything above was done ahead of the second; the route and the sends wait
                // for it, and for a pool slot.
                self.until_released(request.release_ms).await;
                ticket.take_slot().await;
            }
            let code = self
                .process_trigger(&resolved, shard, log_id, (position == last).then_some(&mut ticket))
                .await?;
            fired.push((log_id, code));
            if let Some(claim) = shard_claim {
                held.release(claim);
            }
        }
        if request.claim.is_some() && fired.first().is_some_and(|(_, code)| *code != SUCCESS_CODE) {
            // A FIX_DELAY job parked for this run will get no callback: its run is over.
            self.fix_delay.unpark(resolved.job.id, trigger_time_ms).await?;
        }
        Ok(TriggerOutcome::Fired(fired))
    }
}
