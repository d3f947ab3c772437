//! `--max-concurrent-runs`: runs of different jobs beyond the cap wait for a slot and start
//! highest priority first; `/idleBeat` answers busy while the executor is full (so BUSYOVER
//! passes it by); a killed job's waiting run fails as not executed; the metrics count the slots.

use jobwheel_executor::Handlers;
use jobwheel_tests::openmetrics::scrape;
use jobwheel_tests::{TOKEN, trigger, wait_until_async};
use serde_json::{Value, json};

use crate::support::{Gate, SETTLE, rig};

fn with_priority(mut body: Value, priority: &str) -> Value {
    body["priority"] = json!(priority);
    body
}

fn waiting_line(page: &str) -> Option<String> {
    page.lines().find(|l| l.starts_with("jobwheel_executor_runs_waiting_for_slot ")).map(str::to_owned)
}

#[tokio::test]
async fn waiting_runs_start_by_priority_and_a_full_executor_is_busy() {
    let gate = Gate::new();
    let mut handlers = Handlers::new();
    gate.register(&mut handlers, "gate");
    let rig = rig(handlers, |config| config.max_concurrent_runs = 1).await;
    assert_eq!(
        rig.executor.post("/idleBeat", json!({"jobId": 9})).await,
        json!({"code": 200}),
        "not full yet"
    );

    assert_eq!(rig.executor.run(trigger(1, 10, "BEAN", "gate", "")).await, json!({"code": 200}));
    jobwheel_tests::wait_until(SETTLE, "the first run to start", || gate.started() == [10]).await;
    for (job, log, priority) in [(2, 20, "LOW"), (3, 30, "NORMAL"), (4, 40, "HIGH"), (5, 50, "HIGH")] {
        assert_eq!(
            rig.executor.run(with_priority(trigger(job, log, "BEAN", "gate", ""), priority)).await,
            json!({"code": 200})
        );
    }
    let page = rig.executor.url("/metrics");
    wait_until_async(SETTLE, "four runs waiting for the slot", || async {
        let text = scrape(&page, Some(TOKEN)).await.unwrap_or_default();
        (waiting_line(&text).as_deref() == Some("jobwheel_executor_runs_waiting_for_slot 4")).then_some(())
    })
    .await;

    // Full: busy for any job, so BUSYOVER routing tries another executor.
    let busy = rig.executor.post("/idleBeat", json!({"jobId": 9})).await;
    assert_eq!(busy["code"], 500, "{busy}");
    assert!(
        busy["msg"]
            .as_str()
            .unwrap_or_default()
            .contains("concurrency cap: 1 of 1 runs executing, 4 waiting"),
        "{busy}"
    );

    // Killing a job whose run waits for a slot fails that run as never executed.
    assert_eq!(rig.executor.post("/kill", json!({"jobId": 5})).await["code"], 200);
    let killed = rig.admin.callback_for(50, SETTLE).await;
    assert_eq!(killed.handle_code, 500);
    assert!(killed.handle_msg.contains("job not executed"), "{}", killed.handle_msg);
    let text = scrape(&page, Some(TOKEN)).await.expect("metrics");
    assert_eq!(
        waiting_line(&text).as_deref(),
        Some("jobwheel_executor_runs_waiting_for_slot 3"),
        "the killed run no longer waits"
    );

    gate.release(4);
    for log in [10, 40, 30, 20] {
        assert_eq!(rig.admin.callback_for(log, SETTLE).await.handle_code, 200, "log {log}");
    }
    assert_eq!(gate.started(), [10, 40, 30, 20], "high, then normal, then low");
    assert_eq!(rig.executor.post("/idleBeat", json!({"jobId": 9})).await, json!({"code": 200}), "free again");
}
