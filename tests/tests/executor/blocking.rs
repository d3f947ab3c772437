//! Block strategies, duplicate log ids, kill and timeout of BEAN jobs.

use std::time::{Duration, Instant};

use jobwheel_executor::{Handlers, JobContext};
use jobwheel_tests::{trigger, wait_until};
use serde_json::{Value, json};

use crate::support::{Gate, SETTLE, rig, wait_idle};

fn with_strategy(mut body: Value, strategy: &str) -> Value {
    body["executorBlockStrategy"] = json!(strategy);
    body
}

fn gated() -> (Gate, Handlers) {
    let gate = Gate::new();
    let mut handlers = Handlers::new();
    gate.register(&mut handlers, "gate");
    (gate, handlers)
}

#[tokio::test]
async fn serial_execution_queues_and_runs_in_order() {
    let (gate, handlers) = gated();
    let rig = rig(handlers, |_| {}).await;
    for log_id in 1..=3 {
        assert_eq!(rig.executor.run(trigger(1, log_id, "BEAN", "gate", "")).await, json!({"code": 200}));
    }
    wait_until(SETTLE, "first run to start", || gate.started() == [1]).await;
    assert_eq!(
        rig.executor.post("/idleBeat", json!({"jobId": 1})).await,
        json!({"code": 500, "msg": "job thread is running or has trigger queue."})
    );
    assert_eq!(rig.executor.post("/idleBeat", json!({"jobId": 2})).await, json!({"code": 200}));
    gate.release(3);
    for log_id in 1..=3 {
        assert_eq!(rig.admin.callback_for(log_id, SETTLE).await.handle_code, 200);
    }
    assert_eq!(gate.started(), [1, 2, 3], "one at a time, in trigger order");
    // Idle again once everything ran.
    wait_idle(&rig.executor, 1).await;
}

#[tokio::test]
async fn discard_later_rejects_while_busy() {
    let (gate, handlers) = gated();
    let rig = rig(handlers, |_| {}).await;
    rig.executor.run(trigger(1, 1, "BEAN", "gate", "")).await;
    wait_until(SETTLE, "run to start", || gate.started() == [1]).await;
    let reply = rig.executor.run(with_strategy(trigger(1, 2, "BEAN", "gate", ""), "DISCARD_LATER")).await;
    assert_eq!(reply, json!({"code": 500, "msg": "block strategy effect：Discard Later"}));
    gate.release(1);
    assert_eq!(rig.admin.callback_for(1, SETTLE).await.handle_code, 200);
    // Not busy any more: accepted.
    wait_idle(&rig.executor, 1).await;
    let reply = rig.executor.run(with_strategy(trigger(1, 3, "BEAN", "gate", ""), "DISCARD_LATER")).await;
    assert_eq!(reply, json!({"code": 200}));
    gate.release(1);
    assert_eq!(rig.admin.callback_for(3, SETTLE).await.handle_code, 200);
    assert!(
        rig.admin.recorded().callbacks.iter().all(|c| c.log_id != 2),
        "discarded trigger has no callback"
    );
}

#[tokio::test]
async fn cover_early_kills_the_running_trigger_and_runs_the_new_one() {
    let (gate, handlers) = gated();
    let rig = rig(handlers, |_| {}).await;
    rig.executor.run(trigger(1, 1, "BEAN", "gate", "")).await;
    wait_until(SETTLE, "run to start", || gate.started() == [1]).await;
    let reply = rig.executor.run(with_strategy(trigger(1, 2, "BEAN", "gate", ""), "COVER_EARLY")).await;
    assert_eq!(reply, json!({"code": 200}));
    let covered = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(covered.handle_code, 500);
    assert_eq!(covered.handle_msg, "block strategy effect：Cover Early [job running, killed]");
    wait_until(SETTLE, "new run to start", || gate.started() == [1, 2]).await;
    gate.release(1);
    assert_eq!(rig.admin.callback_for(2, SETTLE).await.handle_code, 200);
}

#[tokio::test]
async fn duplicate_log_id_is_rejected_while_queued() {
    let (gate, handlers) = gated();
    let rig = rig(handlers, |_| {}).await;
    rig.executor.run(trigger(1, 1, "BEAN", "gate", "")).await;
    wait_until(SETTLE, "run to start", || gate.started() == [1]).await;
    assert_eq!(rig.executor.run(trigger(1, 2, "BEAN", "gate", "")).await, json!({"code": 200}));
    assert_eq!(
        rig.executor.run(trigger(1, 2, "BEAN", "gate", "")).await,
        json!({"code": 500, "msg": "repeat trigger job, logId:2"})
    );
    gate.release(2);
    rig.admin.callback_for(2, SETTLE).await;
    assert_eq!(rig.admin.recorded().callbacks.iter().filter(|c| c.log_id == 2).count(), 1);
}

#[tokio::test]
async fn kill_fails_the_running_and_queued_triggers() {
    let (gate, handlers) = gated();
    let rig = rig(handlers, |_| {}).await;
    rig.executor.run(trigger(1, 1, "BEAN", "gate", "")).await;
    rig.executor.run(trigger(1, 2, "BEAN", "gate", "")).await;
    wait_until(SETTLE, "run to start", || gate.started() == [1]).await;
    assert_eq!(rig.executor.post("/kill", json!({"jobId": 1})).await, json!({"code": 200}));
    let running = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(
        (running.handle_code, running.handle_msg.as_str()),
        (500, "scheduling center kill job. [job running, killed]")
    );
    let queued = rig.admin.callback_for(2, SETTLE).await;
    assert_eq!(
        (queued.handle_code, queued.handle_msg.as_str()),
        (500, "scheduling center kill job. [job not executed, in the job queue, killed.]")
    );
    assert_eq!(gate.started(), [1], "the queued trigger never ran");
    assert_eq!(
        rig.executor.post("/kill", json!({"jobId": 1})).await,
        json!({"code": 200, "msg": "job thread already killed."})
    );
    let text = rig.executor.log_text(1, running.log_date_tim).await;
    assert!(text.contains("JobThread toStop, stopReason:scheduling center kill job."), "{text}");
}

#[tokio::test]
async fn timeout_stops_cooperative_and_uncooperative_handlers_with_502() {
    let mut handlers = Handlers::new();
    handlers.register("cooperative", |ctx: JobContext| async move {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(60)) => Ok(()),
            () = ctx.stopped() => anyhow::bail!("stopping"),
        }
    });
    handlers.register("stubborn", |_ctx: JobContext| async move {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(())
    });
    let rig = rig(handlers, |c| c.timings.stop_grace = Duration::from_millis(500)).await;
    for (job_id, handler, bound) in [(1, "cooperative", 2.0), (2, "stubborn", 2.5)] {
        let mut body = trigger(job_id, i64::from(job_id), "BEAN", handler, "");
        body["executorTimeout"] = json!(1);
        let started = Instant::now();
        rig.executor.run(body).await;
        let result = rig.admin.callback_for(i64::from(job_id), SETTLE).await;
        let elapsed = started.elapsed().as_secs_f64();
        assert_eq!(
            (result.handle_code, result.handle_msg.as_str()),
            (502, "job execute timeout "),
            "{handler}"
        );
        assert!((0.9..bound).contains(&elapsed), "{handler}: callback after {elapsed:.2}s");
    }
}
