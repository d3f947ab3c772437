//! The trigger path (upstream `JobTriggerPoolHelper.trigger` → `XxlJobTrigger.trigger` →
//! `processTrigger`, docs/upstream.md §5.2–5.3): load job and group, fan out broadcast
//! shards, insert the log row first, build the `TriggerParam`, route, POST `/run`, and write
//! the outcome and upstream's `trigger_msg` back to the log row.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use jobwheel_protocol::{GlueType, TriggerParam, WasmModuleRef};
use tracing::Instrument;

use super::claims::HeldClaims;
use super::i18n::texts;
use super::pool::Entry;
use super::sending::SendTicket;
use super::trigger_msg::{TriggerMsg, run_result_msg};
use super::{Engine, EngineError};
use crate::domain::TriggerType;
use crate::executor_client::ExecutorApi;
use crate::routing::{
    ExecutorRouteStrategy, RouteError, Shard, plan_shards, shard_address, split_address_list,
};
use crate::store::{ClaimId, GroupRow, JobId, JobRow, LogId, LogTriggerUpdate, NewLog};
use jobwheel_protocol::envelope::{FAIL_CODE, SUCCESS_CODE};

/// One request to trigger a job (upstream's `trigger(jobId, triggerType, failRetryCount,
/// executorShardingParam, executorParam, addressList)`), plus the ring claim it consumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerRequest {
    /// The job.
    pub job_id: JobId,
    /// Why (only shown in `trigger_msg`).
    pub trigger_type: TriggerType,
    /// Remaining retries to record; `None` means the job's `executor_fail_retry_count`.
    pub fail_retry_count: Option<i32>,
    /// `"i/total"` of a retried broadcast shard: only that shard is re-run.
    pub sharding_param: Option<String>,
    /// Overrides the job's parameter when `Some` (manual triggers always pass one).
    pub executor_param: Option<String>,
    /// Overrides the group's addresses for this trigger when non-empty (manual trigger).
    pub address_list: Option<Vec<String>>,
    /// The durable ring claim this trigger fires (scheduled triggers only). Its log row is
    /// inserted by consuming the claim, so a claim fires at most once across admins.
    pub claim: Option<ClaimId>,
    /// The fire second a scheduled trigger is for (epoch ms): its lateness is measured from it.
    pub scheduled_ms: Option<i64>,
    /// The log row the pre-read staged for `claim` (pre-staged firing): firing takes the claim
    /// and uses this row instead of inserting one.
    pub staged_log: Option<LogId>,
    /// Not to be sent before this time (epoch ms): the ring hands a second's triggers over
    /// ahead of it, so their database work is done when the second begins (`ring.rs`).
    pub release_ms: Option<i64>,
}

impl TriggerRequest {
    /// A trigger of `job_id` with every optional part left to the job's configuration.
    pub fn new(job_id: JobId, trigger_type: TriggerType) -> Self {
        Self {
            job_id,
            trigger_type,
            fail_retry_count: None,
            sharding_param: None,
            executor_param: None,
            address_list: None,
            claim: None,
            scheduled_ms: None,
            staged_log: None,
            release_ms: None,
        }
    }
}

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

/// A trigger resolved against its job and group: what every shard of it shares. The stages of
/// a trigger are the request ([`TriggerRequest`]), this, and one shard whose log row exists
/// (`process_trigger`'s `shard` and `log_id`).
struct Resolved<'r> {
    request: &'r TriggerRequest,
    job: JobRow,
    targets: Targets,
    strategy: Option<ExecutorRouteStrategy>,
    is_broadcast: bool,
    /// Every shard's trigger time (upstream ≥ 3.3.2: one per trigger).
    trigger_time_ms: i64,
}

impl Resolved<'_> {
    /// The shard as routing, the log and `trigger_msg` see it: a broadcast's, else none.
    fn broadcast_shard(&self, shard: Shard) -> Option<Shard> {
        self.is_broadcast.then_some(shard)
    }
}

/// The addresses of one trigger and where they came from.
struct Targets {
    address_type: i16,
    addresses: Vec<String>,
    /// The group's cap on runs in flight (`jobwheel_group_cap`).
    max_running: Option<i32>,
    /// The client for this group's executors (its own token and 3.5's protocol, if it has one).
    client: Arc<dyn ExecutorApi>,
}

impl Engine {
    /// Queues `request` on the fast or slow pool (upstream `JobTriggerPoolHelper.trigger`).
    /// Returns false if the pool's backlog is full and the trigger was dropped.
    pub(crate) fn submit_trigger(self: &Arc<Self>, request: TriggerRequest) -> bool {
        let engine = Arc::clone(self);
        let job_id = request.job_id;
        let claim = request.claim;
        // Counted from submission, so triggers still waiting for a pool slot hold back the
        // deferred writes as well (`sending.rs`).
        let sending = self.sends.enter();
        let entry = if request.release_ms.is_some() { Entry::Early } else { Entry::Now };
        let accepted = self.pools.submit(job_id, entry, move |slot| async move {
            if let Err(e) = engine.trigger_with(request, SendTicket::new(slot, sending)).await {
                tracing::error!(job_id = job_id.0, error = %e, "trigger failed");
            }
            if let Some(claim) = claim {
                engine.release_claim(claim);
            }
        });
        if !accepted && let Some(claim) = claim {
            // The claim stays pending in the database; recovery fires it (late) or applies
            // the misfire rules.
            self.release_claim(claim);
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
        let Some(job) = self.load_job_batched(request.job_id).await? else {
            tracing::warn!("trigger fail, job not found");
            if let Some(claim) = request.claim {
                self.store.discard_claim(claim).await?;
            }
            return Ok(TriggerOutcome::JobMissing);
        };
        let group = self.load_group_batched(job.job.job_group).await?;
        let client = self.client_for(job.job.job_group).await;
        let targets = targets(group.as_ref(), request.address_list.as_deref(), client);
        let strategy = route_strategy(&job);
        let is_broadcast = strategy == Some(ExecutorRouteStrategy::ShardingBroadcast);
        let shards = plan_shards(is_broadcast, targets.addresses.len(), request.sharding_param.as_deref());
        // Upstream ≥ 3.3.2: every shard of one trigger shares one trigger time. A staged row
        // already holds its scheduled second (upstream's `new Date()` at a punctual fire).
        let trigger_time_ms = match (request.staged_log, request.scheduled_ms) {
            (Some(_), Some(scheduled_ms)) => scheduled_ms,
            _ => self.services.now_ms(),
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
        let mut held = HeldClaims::new(self);
        match request.claim {
            Some(claim) if shards.len() > 1 => {
                let Some((log_id, rest)) =
                    self.store.split_claim(claim, &new_log, shards.len(), self.services.now_ms()).await?
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
                    if !self.take_claim_batched(claim).await? {
                        return Ok(TriggerOutcome::ClaimGone);
                    }
                    log_id
                }
                (None, Some(claim), None) => match self.consume_claim_batched(claim, new_log).await? {
                    Some(log_id) => log_id,
                    None if position == 0 => return Ok(TriggerOutcome::ClaimGone),
                    None => {
                        // Another admin's recovery took this shard while we were slow; it fires it.
                        tracing::warn!(index = shard.index, total = shard.total, "shard fired elsewhere");
                        held.release(claim);
                        continue;
                    }
                },
                (None, None, _) => self.store.insert_log(&new_log).await?,
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
            self.unpark_fix_delay(resolved.job.id, trigger_time_ms).await?;
        }
        Ok(TriggerOutcome::Fired(fired))
    }

    /// Upstream `processTrigger` for one shard whose log row `log_id` exists already.
    async fn process_trigger(
        &self,
        resolved: &Resolved<'_>,
        shard: Shard,
        log_id: LogId,
        last_send: Option<&mut SendTicket>,
    ) -> Result<i32, EngineError> {
        let Resolved { request, job, targets, strategy, trigger_time_ms, .. } = resolved;
        let (strategy, trigger_time_ms) = (*strategy, *trigger_time_ms);
        let broadcast_shard = resolved.broadcast_shard(shard);
        let lang = self.config.lang;
        let j = &job.job;
        let fail_retry_count = request.fail_retry_count.unwrap_or(j.executor_fail_retry_count);
        let executor_param =
            request.executor_param.clone().or_else(|| j.executor_param.clone()).unwrap_or_default();
        // Before the module and grant reads: a refused run needs neither (nor its secrets opened).
        let capped =
            self.group_cap_refusal(j.job_group, targets.max_running, log_id, trigger_time_ms).await?;
        let is_wasm = j.glue_type.parse::<GlueType>() == Ok(GlueType::GlueWasm);
        let (wasm_module, grant) = if is_wasm && capped.is_none() {
            (self.wasm_module_ref(job.id).await?, self.wasm_grant(job).await?)
        } else {
            (None, Ok(None))
        };
        let (wasm_grant, grant_problem) = match grant {
            Ok(grant) => (grant, None),
            Err(reason) => (None, Some(reason)),
        };
        let param = TriggerParam {
            job_id: job.id.0,
            executor_handler: j.executor_handler.clone().unwrap_or_default(),
            executor_params: executor_param.clone(),
            executor_block_strategy: j.executor_block_strategy.clone().unwrap_or_default(),
            executor_timeout: j.executor_timeout,
            log_id: log_id.0,
            log_date_time: trigger_time_ms,
            glue_type: j.glue_type.clone(),
            glue_source: j.glue_source.clone().unwrap_or_default(),
            glue_updatetime: j.glue_updatetime.map_or(0, |t| t.timestamp_millis()),
            broadcast_index: shard.index,
            broadcast_total: shard.total,
            wasm_module: wasm_module.clone(),
            wasm_grant,
            priority: job.priority.clone(),
        };

        let (address, route_msg) = match capped {
            Some(_) => (None, None),
            None => self.pick_address(job.id, targets, strategy, broadcast_shard).await,
        };
        let wasm_missing = is_wasm && wasm_module.is_none();
        let (code, run_msg) = match (&address, wasm_missing, grant_problem) {
            _ if capped.is_some() => (FAIL_CODE, capped),
            (Some(_), true, _) => (FAIL_CODE, Some("GLUE_WASM job has no module uploaded".to_owned())),
            (Some(_), false, Some(reason)) => (FAIL_CODE, Some(reason)),
            (Some(address), false, None) => {
                let reply = targets.client.run(address, &param).await;
                if let Some(scheduled_ms) = request.scheduled_ms {
                    self.services.metrics.lateness(self.services.now_ms() - scheduled_ms);
                }
                (reply.code, Some(run_result_msg(lang, address, reply.code, reply.msg.as_deref())))
            }
            (None, ..) => (FAIL_CODE, None),
        };
        tracing::debug!(log_id = log_id.0, address = ?address, code, "trigger sent");
        // The outcome of the trigger's last shard waits for the other triggers' sends; an
        // earlier shard's is written at once, since its own trigger still has sends to make.
        let defer = match last_send {
            Some(ticket) => {
                ticket.sent();
                true
            }
            None => false,
        };

        let trigger_msg = TriggerMsg {
            lang,
            trigger_type: request.trigger_type,
            admin_address: &self.config.admin_address,
            address_type: targets.address_type,
            addresses: &targets.addresses,
            route_strategy: strategy,
            route_strategy_name: j.executor_route_strategy.as_deref(),
            shard: broadcast_shard,
            block_strategy: j.executor_block_strategy.as_deref(),
            timeout: j.executor_timeout,
            fail_retry_count,
            route_msg: route_msg.as_deref(),
            run_msg: run_msg.as_deref(),
        }
        .render();
        self.update_log_trigger_batched(
            LogTriggerUpdate {
                log_id,
                trigger_time: to_datetime(trigger_time_ms),
                trigger_code: code,
                trigger_msg: Some(trigger_msg),
                executor_address: address,
                executor_handler: j.executor_handler.clone(),
                executor_param: Some(executor_param),
                executor_sharding_param: broadcast_shard.map(Shard::log_param),
                executor_fail_retry_count: fail_retry_count,
            },
            defer,
        )
        .await?;
        self.services.metrics.trigger(request.trigger_type, code);
        Ok(code)
    }

    /// The executor address of one shard and the routing message for `trigger_msg`.
    async fn pick_address(
        &self,
        job_id: JobId,
        targets: &Targets,
        strategy: Option<ExecutorRouteStrategy>,
        broadcast_shard: Option<Shard>,
    ) -> (Option<String>, Option<String>) {
        if targets.addresses.is_empty() {
            return (None, Some(texts(self.config.lang).address_empty.to_owned()));
        }
        if let Some(shard) = broadcast_shard {
            return (shard_address(&targets.addresses, shard.index).map(str::to_owned), None);
        }
        let Some(strategy) = strategy else {
            return (None, Some("executor route strategy is not valid.".to_owned()));
        };
        match self.router.route(strategy, job_id.0, &targets.addresses, &*targets.client).await {
            Ok(route) => (Some(route.address), route.msg),
            Err(RouteError::AllProbesFailed { msg }) => (None, Some(msg)),
            Err(e) => (None, Some(e.to_string())),
        }
    }

    /// `wasmModule` for a GLUE_WASM job: its newest uploaded version. The URL is relative;
    /// executors resolve it against the admin address they are configured with.
    pub(super) async fn wasm_module_ref(&self, job_id: JobId) -> Result<Option<WasmModuleRef>, EngineError> {
        let Some(module) = self.store.current_wasm_module(job_id).await? else {
            return Ok(None);
        };
        Ok(Some(WasmModuleRef {
            url: format!("api/wasm/{}", module.digest),
            digest: module.digest,
            size: u64::try_from(module.size).unwrap_or(0),
        }))
    }
}

/// The group's addresses, or the caller's override (which makes the group "manual" for this
/// trigger, as upstream does). A missing group has no addresses.
fn targets(
    group: Option<&GroupRow>,
    override_list: Option<&[String]>,
    client: Arc<dyn ExecutorApi>,
) -> Targets {
    // A manual address list does not lift the group's cap: the runs are still the group's.
    let max_running = group.and_then(|g| g.max_running);
    match override_list.filter(|list| !list.is_empty()) {
        Some(list) => Targets { address_type: 1, addresses: list.to_vec(), max_running, client },
        None => Targets {
            address_type: group.map_or(0, |g| g.group.address_type),
            max_running,
            addresses: group
                .and_then(|g| g.group.address_list.as_deref())
                .filter(|list| !list.trim().is_empty())
                .map(split_address_list)
                .unwrap_or_default(),
            client,
        },
    }
}

/// The job's routing strategy; `None` when the stored name is not one of the ten.
pub(super) fn route_strategy(job: &JobRow) -> Option<ExecutorRouteStrategy> {
    job.job.executor_route_strategy.as_deref().and_then(|s| s.parse().ok())
}

/// Epoch ms → `DateTime<Utc>` (the store keeps whole seconds of it).
pub(crate) fn to_datetime(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}
