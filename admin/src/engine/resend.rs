//! Exactly-once delivery's recovering side (issue 58; docs/engine.md, "Delivery guarantee"):
//! resends the fires whose admin died between `/run` and storing what it answered.
//!
//! An exactly-once `/run` is recorded in `jobwheel_fire_send` before it goes out (`shard.rs`):
//! the address and the trigger as sent. The admin that sent it stores the outcome within the
//! call's timeout and a deferred write — seconds. A record still without an outcome after
//! [`RESEND_AFTER_MS`] is in doubt: the run may or may not have reached the executor. Every
//! admin's pass takes such records (moving `sent_at_ms`, so one admin wins each) and sends the
//! **same** trigger — log id, fire key, scheduled time — to the **same** address, never
//! re-routed: a jobwheel executor's fire journal answers a key it has seen with that run's state
//! and result, so the fire runs at most once there, and now also at least once. An executor
//! that cannot be reached keeps the record for the next pass; the lost-job monitor closes the
//! row as "Trigger interrupted" once `--lost-job-timeout` has passed, as for any stalled fire.
//!
//! What the pass finds besides: a record whose run reported its result though its send's
//! outcome was never stored gets that outcome (code 200, the address), so the log reads as a
//! completed run; records of fires with an outcome (or of deleted logs) are deleted.

use std::sync::Arc;

use jobwheel_protocol::envelope::{FAIL_CODE, SUCCESS_CODE};
use jobwheel_protocol::{GlueType, TriggerParam};

use super::EngineError;
use super::grant::wasm_grant;
use super::i18n::{separator, texts};
use super::trigger::TriggerPath;
use super::trigger_msg::run_result_msg;
use crate::executor_client::not_reached;
use crate::store::{DueSend, JobRow, LogId};

/// How long after a send its outcome must be stored before another admin resends it: the
/// `/run` call's timeout (3 s) and the outcome's deferred write, with room for a loaded admin.
pub const RESEND_AFTER_MS: i64 = 15_000;
/// The records one pass looks at.
const PASS_LIMIT: u32 = 500;

/// What a pass did with one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// Resent; the executor answered this code (stored as the trigger's outcome).
    Resent(i32),
    /// Resent, but the executor was not reached: tried again at a later pass.
    NotReached,
    /// The run's result had arrived: the send's outcome was stored as sent.
    ResultArrived,
    /// The fire cannot be resent (its job is gone, or its grant cannot be built): failed.
    Failed(String),
}

/// The pass over `jobwheel_fire_send`, run every second by each admin.
pub struct Resends {
    triggers: Arc<TriggerPath>,
}

impl Resends {
    pub(super) fn new(triggers: Arc<TriggerPath>) -> Self {
        Self { triggers }
    }

    /// One pass (see the module docs): what was done with each record in doubt, by log.
    pub async fn pass(&self, now_ms: i64) -> Result<Vec<(LogId, Resend)>, EngineError> {
        let store = &self.triggers.store;
        let due = store.sends_due(now_ms - RESEND_AFTER_MS, PASS_LIMIT).await?;
        let mut done = Vec::new();
        let mut forget = Vec::new();
        for send in due {
            match (send.trigger_code, send.handle_code) {
                _ if send.in_doubt() => {
                    // Another admin's pass may have taken it since the read.
                    if store.take_send(send.log_id, send.sent_at_ms, now_ms).await? {
                        done.push((send.log_id, self.resend(&send).await?));
                    }
                }
                (Some(0), Some(_)) => {
                    let note =
                        texts(self.triggers.lang).trigger_outcome_lost.replace("{address}", &send.address);
                    let msg = format!("{}{note}", separator(texts(self.triggers.lang).trigger_resent));
                    if store.record_resent(send.log_id, SUCCESS_CODE, &send.address, &msg).await? {
                        done.push((send.log_id, Resend::ResultArrived));
                    }
                    forget.push(send.log_id);
                }
                _ => forget.push(send.log_id),
            }
        }
        store.forget_sends(&forget).await?;
        Ok(done)
    }

    /// Sends the recorded trigger again to its address and stores what the executor answered.
    async fn resend(&self, send: &DueSend) -> Result<Resend, EngineError> {
        let path = &self.triggers;
        let lang = path.lang;
        let rebuilt = match path.store.load_job(send.job_id).await? {
            Some(job) => self.rebuild(send, &job).await?.map(|param| (param, job)),
            None => Err("the job was deleted".to_owned()),
        };
        let (param, job) = match rebuilt {
            Ok(rebuilt) => rebuilt,
            Err(reason) => {
                let msg = format!("{}{reason}", separator(texts(lang).trigger_resent));
                path.store.record_resent(send.log_id, FAIL_CODE, &send.address, &msg).await?;
                return Ok(Resend::Failed(reason));
            }
        };
        let client = path.clients.for_group(job.job.job_group).await;
        let reply = client.run(&send.address, &param).await;
        if not_reached(&reply) {
            tracing::warn!(log_id = send.log_id.0, address = send.address, msg = ?reply.msg,
                "exactly-once fire in doubt: executor not reached, resending later");
            return Ok(Resend::NotReached);
        }
        tracing::warn!(
            log_id = send.log_id.0,
            address = send.address,
            code = reply.code,
            attempt = send.attempts + 1,
            "exactly-once fire in doubt resent to its address"
        );
        let msg = format!(
            "{}{}",
            separator(texts(lang).trigger_resent),
            run_result_msg(lang, &send.address, reply.code, reply.msg.as_deref())
        );
        path.store.record_resent(send.log_id, reply.code, &send.address, &msg).await?;
        Ok(Resend::Resent(reply.code))
    }

    /// The trigger as first sent, with its grant built again (never stored: it holds secret
    /// values); `Err` with the reason when it cannot be.
    async fn rebuild(
        &self,
        send: &DueSend,
        job: &JobRow,
    ) -> Result<Result<TriggerParam, String>, EngineError> {
        let path = &self.triggers;
        let mut param: TriggerParam = match serde_json::from_str(&send.param) {
            Ok(param) => param,
            Err(e) => return Ok(Err(format!("the recorded trigger cannot be read: {e}"))),
        };
        if job.job.glue_type.is(GlueType::GlueWasm) {
            match wasm_grant(&*path.store, path.secrets.as_deref(), job).await? {
                Ok(grant) => param.wasm_grant = grant,
                Err(reason) => return Ok(Err(reason)),
            }
        }
        Ok(Ok(param))
    }
}
