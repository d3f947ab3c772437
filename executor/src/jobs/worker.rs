//! The task behind one job thread: takes triggers from its queue one at a time, runs the
//! handler with timeout and stop handling, and reports every result as a callback
//! (upstream `JobThread`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use jobwheel_protocol::{HandleCallbackParam, HandleCode, MAX_WORKFLOW_OUTPUT, TriggerParam};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::slots::Priority;
use super::{JobThreads, Shared, lock};
use crate::handler::{JobContext, JobHandler, RunInfo};

/// Upstream truncates handle messages to this many characters before the callback.
const MAX_HANDLE_MSG_CHARS: usize = 50_000;

pub(super) struct Worker {
    pub(super) threads: Arc<JobThreads>,
    pub(super) shared: Arc<Shared>,
    pub(super) handler: Arc<dyn JobHandler>,
    pub(super) generation: u64,
    pub(super) rx: mpsc::Receiver<TriggerParam>,
}

/// How one execution ended.
enum Ending {
    Finished(anyhow::Result<()>),
    Panicked(String),
    TimedOut,
    Stopped,
}

impl Worker {
    pub(super) async fn run(mut self) {
        let span = tracing::info_span!("job_thread", job_id = self.shared.job_id);
        async move {
            self.handler.init();
            self.serve().await;
            self.drain_queue();
            self.handler.destroy();
        }
        .instrument(span)
        .await;
    }

    async fn serve(&mut self) {
        let idle_timeout = self.threads.settings.idle_timeout;
        loop {
            let next = tokio::select! {
                biased;
                () = self.shared.stop.cancelled() => return,
                param = self.rx.recv() => param,
                () = tokio::time::sleep(idle_timeout) => {
                    let rx = &self.rx;
                    if self.threads.reap_if_idle(self.shared.job_id, self.generation, || rx.is_empty()) {
                        tracing::debug!("job thread idle; removed");
                        return;
                    }
                    continue;
                }
            };
            let Some(param) = next else { return };
            // Under `--max-concurrent-runs` the run waits for a slot, still counted as queued
            // (so `/idleBeat` says busy and a kill fails it as not executed).
            let _slot = match self.threads.settings.slots.clone() {
                Some(slots) => {
                    let priority = Priority::from_wire(param.priority.as_deref());
                    tokio::select! {
                        biased;
                        () = self.shared.stop.cancelled() => {
                            self.fail_unstarted(&param);
                            return;
                        }
                        slot = slots.acquire(priority) => Some(slot),
                    }
                }
                None => None,
            };
            // Mark running before the log id leaves the queue set, so `is_busy` never sees a gap.
            self.shared.running.store(true, Ordering::SeqCst);
            lock(&self.shared.queued).remove(&param.log_id);
            let span = tracing::info_span!("run", log_id = param.log_id);
            let started = std::time::Instant::now();
            let end = self.execute(&param).instrument(span).await;
            let seconds = started.elapsed().as_secs_f64();
            self.threads.settings.metrics.run_ended(&param.glue_type, end.code, seconds);
            self.report(&param, end);
            self.shared.running.store(false, Ordering::SeqCst);
            if self.shared.stop.is_cancelled() {
                return;
            }
        }
    }

    /// Runs one trigger to completion, timeout or stop.
    async fn execute(&self, param: &TriggerParam) -> RunEnd {
        let mut end = self.execute_handler(param).await;
        if end.output.as_ref().is_some_and(|output| output.len() > MAX_WORKFLOW_OUTPUT) {
            end.code = HandleCode::Fail.code();
            end.msg = format!("the workflow output is over the limit of {MAX_WORKFLOW_OUTPUT} bytes");
            end.output = None;
        }
        end
    }

    async fn execute_handler(&self, param: &TriggerParam) -> RunEnd {
        let settings = &self.threads.settings;
        let log = settings.logs.open(
            param.log_date_time,
            param.log_id,
            format!("JobThread-{}", param.job_id),
            settings.max_log_bytes,
        );
        log.line(&format!(
            "<br>----------- xxl-job job execute start -----------<br>----------- Param:{}",
            param.executor_params
        ));
        let info = RunInfo {
            job_id: param.job_id,
            log_id: param.log_id,
            log_date_time: param.log_date_time,
            param: param.executor_params.clone(),
            shard_index: param.broadcast_index,
            shard_total: param.broadcast_total,
            wasm_grant: param.wasm_grant.clone().map(Arc::new),
            workflow_context: param.workflow_context.clone().map(Arc::new),
            workflow_item: param.workflow_item.clone().map(Arc::new),
            // An upstream admin sends neither: each of its triggers is a fire of its own.
            fire_key: param.fire_key.clone().unwrap_or_else(|| format!("log:{}", param.log_id)),
            scheduled_time: param.scheduled_time.unwrap_or(param.log_date_time),
        };
        // Not a child of the thread's token: the handler must learn of a stop only after this
        // worker has classified the ending, or a fast handler could finish "on its own" first.
        let run_stop = CancellationToken::new();
        let ctx = JobContext::new(info, log.clone(), run_stop.clone());
        let mut task = tokio::spawn(self.handler.execute(ctx.clone()).in_current_span());
        let timeout = u64::try_from(param.executor_timeout).ok().filter(|s| *s > 0).map(Duration::from_secs);

        let ending = tokio::select! {
            joined = &mut task => match joined {
                Ok(result) => Ending::Finished(result),
                Err(e) => Ending::Panicked(panic_message(e)),
            },
            () = sleep_or_forever(timeout) => Ending::TimedOut,
            () = self.shared.stop.cancelled() => Ending::Stopped,
        };
        if matches!(ending, Ending::TimedOut | Ending::Stopped) {
            wind_down(task, &run_stop, settings.stop_grace).await;
        }
        // A recorded Wasm run's record goes with whatever result it gets.
        let flight = ctx.take_flight();
        let failed = |msg: String| RunEnd {
            code: HandleCode::Fail.code(),
            msg,
            finished: false,
            output: None,
            flight: flight.clone(),
        };

        let (code, msg) = match ending {
            Ending::Finished(Ok(())) => match ctx.result() {
                Some((code, msg)) => (code.code(), msg.unwrap_or_default()),
                None => (HandleCode::Success.code(), String::new()),
            },
            Ending::Finished(Err(e)) => {
                let msg = format!("{e:#}");
                log.line(&format!(
                    "<br>----------- JobThread Exception:{msg}<br>----------- xxl-job job execute end(error) -----------"
                ));
                return failed(msg);
            }
            Ending::Panicked(msg) => {
                let msg = format!("job handler panicked: {msg}");
                log.line(&format!(
                    "<br>----------- JobThread Exception:{msg}<br>----------- xxl-job job execute end(error) -----------"
                ));
                return failed(msg);
            }
            Ending::TimedOut => {
                log.line("<br>----------- xxl-job job execute timeout");
                (HandleCode::Timeout.code(), "job execute timeout ".to_owned())
            }
            Ending::Stopped => {
                let reason = self.shared.stop_reason();
                log.line(&format!("<br>----------- JobThread toStop, stopReason:{reason}"));
                let msg = format!("{reason} [job running, killed]");
                log.line(&format!(
                    "<br>----------- JobThread Exception:{msg}<br>----------- xxl-job job execute end(error) -----------"
                ));
                return failed(msg);
            }
        };
        let (code, msg) = if code <= 0 {
            (HandleCode::Fail.code(), "job handle result lost.".to_owned())
        } else {
            (code, msg)
        };
        // Only a workflow node's run (or a map item's) reports an output, and only when it
        // ended on its own.
        let node = param.workflow_context.is_some() || param.workflow_item.is_some();
        let output = if node { ctx.output() } else { None };
        RunEnd { code, msg: truncate_chars(msg, MAX_HANDLE_MSG_CHARS), finished: true, output, flight }
    }

    fn report(&self, param: &TriggerParam, end: RunEnd) {
        if let Some(key) = super::exactly_once_key(param) {
            self.threads.settings.fires.ended(key, end.code, &end.msg);
        }
        let result = HandleCallbackParam {
            log_id: param.log_id,
            log_date_tim: param.log_date_time,
            handle_code: end.code,
            handle_msg: end.msg,
            output: end.output,
            flight: end.flight,
        };
        self.threads.settings.callbacks.push(result, end.finished);
    }

    /// Fails every trigger still queued when the thread stops (upstream wording).
    fn drain_queue(&mut self) {
        self.rx.close();
        while let Ok(param) = self.rx.try_recv() {
            self.fail_unstarted(&param);
        }
    }

    /// Fails a trigger that never started (still queued, or waiting for a run slot) because
    /// the thread stopped.
    fn fail_unstarted(&self, param: &TriggerParam) {
        lock(&self.shared.queued).remove(&param.log_id);
        let msg = format!("{} [job not executed, in the job queue, killed.]", self.shared.stop_reason());
        let log = self.threads.settings.logs.open(
            param.log_date_time,
            param.log_id,
            format!("JobThread-{}", param.job_id),
            self.threads.settings.max_log_bytes,
        );
        log.line(&format!("<br>----------- {msg}"));
        self.report(
            param,
            RunEnd { code: HandleCode::Fail.code(), msg, finished: false, output: None, flight: None },
        );
    }
}

/// How a run ended, as its callback reports it.
struct RunEnd {
    /// The handle code.
    code: i32,
    /// The handle message.
    msg: String,
    /// Whether the run ended normally: its log then gets upstream's `execute end(finish)` line,
    /// written once the result is journaled (`callback.rs`).
    finished: bool,
    /// The workflow output a node's run set.
    output: Option<String>,
    /// A recorded Wasm run's flight record.
    flight: Option<String>,
}

/// Asks the handler to stop, gives it `grace` to finish (a script handler terminates its
/// process group in that time), then aborts the task. Dropping an aborted handler future drops
/// everything it owns — child processes are killed on drop, Wasm runs are cancelled.
async fn wind_down(
    mut task: tokio::task::JoinHandle<anyhow::Result<()>>,
    stop: &CancellationToken,
    grace: Duration,
) {
    stop.cancel();
    if tokio::time::timeout(grace, &mut task).await.is_err() {
        tracing::warn!(grace_ms = grace.as_millis() as u64, "handler ignored stop; aborting it");
        task.abort();
        let _ = task.await;
    }
}

async fn sleep_or_forever(duration: Option<Duration>) {
    match duration {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

fn panic_message(error: tokio::task::JoinError) -> String {
    match error.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic payload".to_owned()),
        Err(e) => e.to_string(),
    }
}

fn truncate_chars(msg: String, max: usize) -> String {
    match msg.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &msg[..cut]),
        None => msg,
    }
}
