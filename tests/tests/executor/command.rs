//! `commandJobHandler`: upstream's command-line BEAN handler, here only with
//! `--enable-script-glue`, run as real child processes with upstream's parameter format and
//! messages, a timeout and a kill that leave no process behind.

use std::time::{Duration, Instant};

use jobwheel_executor::Handlers;
use jobwheel_executor::builtin::{self, HttpPolicy};
use jobwheel_tests::procs::live_processes_with;
use jobwheel_tests::{trigger, wait_until};
use serde_json::json;

use crate::support::{Rig, SETTLE, rig};

async fn command_rig(script_glue: bool) -> Rig {
    let mut handlers = Handlers::new();
    builtin::register(&mut handlers, HttpPolicy { allow_private: false }, script_glue);
    rig(handlers, |c| c.script_glue = script_glue).await
}

fn command(job_id: i32, log_id: i64, line: &str) -> serde_json::Value {
    trigger(job_id, log_id, "BEAN", "commandJobHandler", line)
}

#[tokio::test]
async fn a_command_line_runs_with_its_arguments_and_upstreams_messages() {
    let rig = command_rig(true).await;
    rig.executor.run(command(1, 1, "echo hello  world")).await;
    let ok = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(ok.handle_code, 200, "{}", ok.handle_msg);
    // Split on single spaces: two spaces make an empty argument, as upstream's split(" ").
    assert!(rig.executor.log_text(1, ok.log_date_tim).await.contains("hello  world"));

    rig.executor.run(command(2, 2, "ls /no/such/directory")).await;
    let failed = rig.admin.callback_for(2, SETTLE).await;
    assert_eq!((failed.handle_code, failed.handle_msg.as_str()), (500, "command exit value(2) is failed"));
    let text = rig.executor.log_text(2, failed.log_date_tim).await;
    assert!(text.contains("No such file or directory"), "stderr in the log: {text}");

    rig.executor.run(command(3, 3, "  ")).await;
    let empty = rig.admin.callback_for(3, SETTLE).await;
    assert_eq!((empty.handle_code, empty.handle_msg.as_str()), (500, "command empty."));
}

#[tokio::test]
async fn a_command_times_out_and_is_killed_with_its_whole_tree() {
    let rig = command_rig(true).await;
    let marker = format!("60.{}7", std::process::id());
    let mut body = command(4, 4, &format!("sleep {marker}"));
    body["executorTimeout"] = json!(1);
    let started = Instant::now();
    rig.executor.run(body).await;
    wait_until(SETTLE, "the command to start", || !live_processes_with(&marker).is_empty()).await;
    let timed_out = rig.admin.callback_for(4, SETTLE).await;
    assert_eq!((timed_out.handle_code, timed_out.handle_msg.as_str()), (502, "job execute timeout "));
    assert!(started.elapsed() < Duration::from_millis(2500), "502 after {:?}", started.elapsed());
    assert!(live_processes_with(&marker).is_empty(), "left: {:?}", live_processes_with(&marker));

    // A command whose child starts a new session (`setsid --wait`) is stopped by a kill all
    // the same: the whole tree goes, not only the process group.
    let marker = format!("60.{}8", std::process::id());
    rig.executor.run(command(5, 5, &format!("setsid --wait sleep {marker}"))).await;
    wait_until(SETTLE, "the detached sleep to start", || !live_processes_with(&marker).is_empty()).await;
    let killed = rig.executor.post("/kill", json!({"jobId": 5})).await;
    assert_eq!(killed["code"], 200, "{killed}");
    rig.admin.callback_for(5, SETTLE).await;
    wait_until(SETTLE, "no process of the run left", || live_processes_with(&marker).is_empty()).await;
}

#[tokio::test]
async fn without_script_glue_there_is_no_command_handler() {
    let rig = command_rig(false).await;
    let reply = rig.executor.run(command(6, 6, "echo hi")).await;
    assert_eq!(reply, json!({"code": 500, "msg": "job handler [commandJobHandler] not found."}));
}
