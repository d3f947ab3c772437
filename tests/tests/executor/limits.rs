//! The executor's input and resource limits (docs/security.md "Limits"): an oversized request
//! body, a full per-job queue, and a script line without newlines — each refused or bounded
//! with a clear message while the executor keeps serving.

use jobwheel_executor::Handlers;
use jobwheel_tests::{TOKEN, trigger, wait_until};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;

use crate::daemon::DaemonRig;
use crate::support::{Gate, SETTLE, rig};

#[tokio::test]
async fn an_oversized_request_is_refused_and_the_executor_keeps_serving() {
    let rig = rig(Handlers::new(), |_| {}).await;
    let mut body = trigger(1, 1, "BEAN", "nothing", "");
    body["executorParams"] = json!("x".repeat(6 * 1024 * 1024));
    let reply = rig.executor.post_raw("/run", &body.to_string(), Some(TOKEN)).await;
    assert_eq!(reply["code"], 500, "{reply}");
    let msg = reply["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("cannot read request body") && msg.contains("5242880"), "names the limit: {msg}");
    assert_eq!(rig.executor.post("/beat", json!("")).await["code"], 200, "still serving");
}

#[tokio::test]
async fn a_full_job_queue_refuses_triggers_with_a_clear_message() {
    let gate = Gate::new();
    let mut handlers = Handlers::new();
    gate.register(&mut handlers, "gated");
    let rig = rig(handlers, |c| c.max_queue = 2).await;
    assert_eq!(rig.executor.run(trigger(5, 100, "BEAN", "gated", "")).await["code"], 200);
    wait_until(SETTLE, "the first run to start", || gate.started() == vec![100]).await;
    for log_id in [101, 102] {
        assert_eq!(rig.executor.run(trigger(5, log_id, "BEAN", "gated", "")).await["code"], 200, "queued");
    }
    let refused = rig.executor.run(trigger(5, 103, "BEAN", "gated", "")).await;
    assert_eq!(refused["code"], 500, "{refused}");
    let msg = refused["msg"].as_str().unwrap_or_default();
    assert!(msg.contains("job queue is full") && msg.contains('2'), "{msg}");
    // Another job is not affected by job 5's queue.
    assert_eq!(rig.executor.run(trigger(6, 200, "BEAN", "gated", "")).await["code"], 200);

    gate.release(4);
    for log_id in [100, 101, 102, 200] {
        assert_eq!(rig.admin.callback_for(log_id, SETTLE).await.handle_code, 200, "log {log_id}");
    }
    assert!(!rig.admin.recorded().callbacks.iter().any(|c| c.log_id == 103), "the refused trigger never ran");
}

#[tokio::test]
async fn a_script_line_without_newlines_is_not_buffered_whole() {
    // A real daemon, so its peak memory is its own and not the test process's.
    let rig =
        DaemonRig::start("limits-test", &["--enable-script-glue", "--max-log-bytes", "1048576"], &[]).await;

    // 200 MB on one line; buffered whole it would take at least that much memory.
    let mut body = trigger(9, 900, "GLUE_SHELL", "", "");
    body["glueSource"] = json!("head -c 200000000 /dev/zero | tr '\\0' x\necho done");
    body["glueUpdatetime"] = json!(1);
    let reply = rig.post("/run", body).await;
    assert_eq!(reply["code"], 200, "{reply}");
    let result = rig.admin.callback_for(900, std::time::Duration::from_secs(60)).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    let peak_mib = rig.peak_rss_kib() / 1024;
    assert!(peak_mib < 100, "the executor peaked at {peak_mib} MiB while copying a 200 MB line");
    let log = std::fs::read_dir(rig.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|day| std::fs::read_dir(day.path()).unwrap().flatten())
        .find(|f| f.file_name() == "900.log")
        .expect("the run's log file");
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.len() < 1_100_000, "the log stayed within its limit: {} bytes", text.len());
    assert!(text.contains("job log truncated"), "with a note saying so");

    let pid = rig.child.id().expect("the daemon runs");
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), Signal::SIGTERM).unwrap();
    let mut rig = rig;
    let _ = tokio::time::timeout(SETTLE, rig.child.wait()).await;
}
