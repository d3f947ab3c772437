//! One shard of a trigger (upstream `processTrigger`, docs/upstream.md §5.3): its log row
//! exists; build the `TriggerParam` (with a Wasm job's module and grant), route, POST `/run`,
//! and write the outcome and upstream's `trigger_msg` back to the row.

use jobwheel_protocol::envelope::{FAIL_CODE, SUCCESS_CODE};
use jobwheel_protocol::{GlueType, TriggerParam, WasmModuleRef};

use super::EngineError;
use super::fire::to_datetime;
use super::fire_key::fire_key;
use super::grant::wasm_grant;
use super::group_cap::group_cap_refusal;
use super::i18n::texts;
use super::resolve::{Resolved, Targets};
use super::ticket::SendTicket;
use super::trigger::TriggerPath;
use super::trigger_msg::{TriggerMsg, run_result_msg};
use crate::domain::{DeliveryMode, Named, TriggerType};
use crate::routing::{ExecutorRouteStrategy, RouteError, Shard, shard_address};
use crate::store::{FireSend, JobId, LogId, LogTriggerUpdate, Store};

impl TriggerPath {
    /// Upstream `processTrigger` for one shard whose log row `log_id` exists already.
    pub(super) async fn process_trigger(
        &self,
        resolved: &Resolved<'_>,
        shard: Shard,
        log_id: LogId,
        last_send: Option<&mut SendTicket>,
    ) -> Result<i32, EngineError> {
        let Resolved { request, job, targets, strategy, trigger_time_ms, .. } = resolved;
        let (strategy, trigger_time_ms) = (*strategy, *trigger_time_ms);
        let broadcast_shard = resolved.broadcast_shard(shard);
        let lang = self.lang;
        let j = &job.job;
        let fail_retry_count = request.fail_retry_count.unwrap_or(j.executor_fail_retry_count);
        let executor_param =
            request.executor_param.clone().or_else(|| j.executor_param.clone()).unwrap_or_default();
        // Before the module and grant reads: a refused run needs neither (nor its secrets opened).
        let capped = group_cap_refusal(
            &*self.store,
            &self.metrics,
            j.job_group,
            targets.max_running,
            log_id,
            trigger_time_ms,
        )
        .await?;
        let is_wasm = j.glue_type.is(GlueType::GlueWasm);
        let (wasm_module, grant) = if is_wasm && capped.is_none() {
            (
                wasm_module_ref(&*self.store, job.id).await?,
                wasm_grant(&*self.store, self.secrets.as_deref(), job).await?,
            )
        } else {
            (None, Ok(None))
        };
        let (wasm_grant, grant_problem) = match grant {
            Ok(grant) => (grant, None),
            Err(reason) => (None, Some(reason)),
        };
        let (fire_key, scheduled_time) = fire_key(request, broadcast_shard, log_id, trigger_time_ms);
        let delivery = request.delivery.unwrap_or(job.delivery);
        let param = TriggerParam {
            job_id: job.id.0,
            executor_handler: j.executor_handler.clone().unwrap_or_default(),
            executor_params: executor_param.clone(),
            executor_block_strategy: j
                .executor_block_strategy
                .as_ref()
                .map(|b| b.as_str().to_owned())
                .unwrap_or_default(),
            executor_timeout: request.executor_timeout.unwrap_or(j.executor_timeout),
            log_id: log_id.0,
            log_date_time: trigger_time_ms,
            glue_type: j.glue_type.as_str().to_owned(),
            glue_source: j.glue_source.clone().unwrap_or_default(),
            glue_updatetime: j.glue_updatetime.map_or(0, |t| t.timestamp_millis()),
            broadcast_index: shard.index,
            broadcast_total: shard.total,
            wasm_module: wasm_module.clone(),
            wasm_grant,
            priority: job.priority.stored().map(str::to_owned),
            workflow_context: request.workflow_context.as_deref().cloned(),
            workflow_item: request.workflow_item.as_deref().cloned(),
            fire_key: Some(fire_key),
            scheduled_time: Some(scheduled_time),
            delivery_mode: delivery.stored().map(str::to_owned),
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
                if delivery == DeliveryMode::ExactlyOnce && !self.record_send(log_id, address, &param).await?
                {
                    // Another admin holds this fire's send (`resend.rs`): it stores the outcome.
                    tracing::warn!(log_id = log_id.0, "exactly-once fire already sent by another admin");
                    if let Some(ticket) = last_send {
                        ticket.sent();
                    }
                    return Ok(0);
                }
                let reply = targets.client.run(address, &param).await;
                crate::fault::pass(crate::fault::FaultPoint::Dispatch);
                if let Some(from) = request.dispatch_from.filter(|_| reply.code == SUCCESS_CODE) {
                    self.metrics.workflow_item_dispatch(from.elapsed().as_secs_f64());
                }
                // A backfill's time is in the past on purpose: it is no late fire.
                if let Some(scheduled_ms) =
                    request.scheduled_ms.filter(|_| request.trigger_type != TriggerType::Backfill)
                {
                    self.metrics.lateness(self.clock.now_ms() - scheduled_ms);
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
            admin_address: &self.admin_address,
            address_type: targets.address_type,
            addresses: &targets.addresses,
            route_strategy: strategy,
            route_strategy_name: j.executor_route_strategy.as_ref().map(Named::as_str),
            shard: broadcast_shard,
            block_strategy: j.executor_block_strategy.as_ref().map(Named::as_str),
            timeout: j.executor_timeout,
            fail_retry_count,
            route_msg: route_msg.as_deref(),
            run_msg: run_msg.as_deref(),
        }
        .render();
        self.batches
            .update_log_trigger(
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
        self.metrics.trigger(request.trigger_type, code);
        Ok(code)
    }

    /// Records an exactly-once send before it goes out (`jobwheel_fire_send`): where it goes
    /// and what it says, without the grant's secret values. False if the fire was recorded
    /// already (another admin sends it).
    async fn record_send(
        &self,
        log_id: LogId,
        address: &str,
        param: &TriggerParam,
    ) -> Result<bool, EngineError> {
        let stored = TriggerParam { wasm_grant: None, ..param.clone() };
        let send = FireSend {
            log_id,
            job_id: JobId(param.job_id),
            address: address.to_owned(),
            sent_at_ms: self.clock.now_ms(),
            param: serde_json::to_string(&stored).unwrap_or_default(),
        };
        Ok(self.store.record_send(&send).await?)
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
            return (None, Some(texts(self.lang).address_empty.to_owned()));
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
}

/// `wasmModule` for a GLUE_WASM job: its newest uploaded version. The URL is relative;
/// executors resolve it against the admin address they are configured with.
pub(super) async fn wasm_module_ref(
    store: &dyn Store,
    job_id: JobId,
) -> Result<Option<WasmModuleRef>, EngineError> {
    let module = store.current_wasm_module(job_id).await?;
    Ok(module.map(|m| module_ref_of(m.digest, m.size)))
}

/// `wasmModule` for the stored module `digest`, if it is stored (its bytes are not read).
pub(super) async fn module_ref(
    store: &dyn Store,
    digest: &str,
) -> Result<Option<WasmModuleRef>, EngineError> {
    let size = store.wasm_module_size(digest).await?;
    Ok(size.map(|size| module_ref_of(digest.to_owned(), size)))
}

/// Where executors fetch the module `digest` of `size` bytes: relative to their admin's address.
fn module_ref_of(digest: String, size: i64) -> WasmModuleRef {
    WasmModuleRef { url: format!("api/wasm/{digest}"), digest, size: u64::try_from(size).unwrap_or(0) }
}
