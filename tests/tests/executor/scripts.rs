//! Script GLUE: argv and shard passing, output capture, exit codes, reload rule, and timeouts
//! and kills that leave no process behind.

use std::time::{Duration, Instant};

use jobwheel_executor::Handlers;
use jobwheel_tests::procs::live_processes_with;
use jobwheel_tests::{trigger, wait_until};
use serde_json::{Value, json};

use crate::support::{Rig, SETTLE, rig};

fn script(job_id: i32, log_id: i64, glue_type: &str, source: &str, param: &str, updatetime: i64) -> Value {
    let mut body = trigger(job_id, log_id, glue_type, "", param);
    body["glueSource"] = json!(source);
    body["glueUpdatetime"] = json!(updatetime);
    body
}

async fn scripting_rig() -> Rig {
    rig(Handlers::new(), |c| c.script_glue = true).await
}

#[tokio::test]
async fn shell_gets_param_as_one_argument_plus_shard_and_logs_both_streams() {
    let rig = scripting_rig().await;
    let source = "echo \"argc=$# param=[$1] index=$2 total=$3\"\necho to-stderr >&2\n";
    let mut body = script(3, 10, "GLUE_SHELL", source, "a b  c", 1);
    body["broadcastIndex"] = json!(2);
    body["broadcastTotal"] = json!(5);
    assert_eq!(rig.executor.run(body).await, json!({"code": 200}));
    let result = rig.admin.callback_for(10, SETTLE).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    let text = rig.executor.log_text(10, result.log_date_tim).await;
    assert!(text.contains("argc=3 param=[a b  c] index=2 total=5"), "{text}");
    assert!(text.contains("to-stderr"), "{text}");
    assert!(text.contains("----------- script file:"), "{text}");
    let script_file = rig.dir.path().join("gluesource/3_1.sh");
    assert_eq!(std::fs::read_to_string(script_file).unwrap(), source);
}

#[tokio::test]
async fn python_and_node_scripts_run_with_their_interpreters() {
    let rig = scripting_rig().await;
    let python = "import sys\nprint('py', sys.argv[1:])\n";
    let node = "console.log('node', process.argv.slice(2).join('|'))\n";
    rig.executor.run(script(4, 20, "GLUE_PYTHON", python, "p", 1)).await;
    rig.executor.run(script(5, 21, "GLUE_NODEJS", node, "n", 1)).await;
    let py = rig.admin.callback_for(20, SETTLE).await;
    let js = rig.admin.callback_for(21, SETTLE).await;
    assert_eq!((py.handle_code, js.handle_code), (200, 200), "{} / {}", py.handle_msg, js.handle_msg);
    assert!(rig.executor.log_text(20, py.log_date_tim).await.contains("py ['p', '0', '1']"));
    assert!(rig.executor.log_text(21, js.log_date_tim).await.contains("node n|0|1"));
}

#[tokio::test]
async fn a_php_script_runs_with_debians_php_cli() {
    // scripts/test.sh installs php-cli; without it this run fails below, saying so.
    let rig = scripting_rig().await;
    let php = "<?php\necho 'php ', implode('|', array_slice($argv, 1)), PHP_EOL;\nexit(0);\n";
    rig.executor.run(script(11, 25, "GLUE_PHP", php, "p", 1)).await;
    let done = rig.admin.callback_for(25, SETTLE).await;
    assert_eq!(done.handle_code, 200, "{}", done.handle_msg);
    assert!(rig.executor.log_text(25, done.log_date_tim).await.contains("php p|0|1"));
}

#[tokio::test]
async fn non_zero_exit_fails_and_a_missing_interpreter_is_explained() {
    let rig = scripting_rig().await;
    rig.executor.run(script(6, 30, "GLUE_SHELL", "exit 3", "", 1)).await;
    let failed = rig.admin.callback_for(30, SETTLE).await;
    assert_eq!((failed.handle_code, failed.handle_msg.as_str()), (500, "script exit value(3) is failed"));

    if which("pwsh") {
        return; // the interpreter exists here; nothing to explain
    }
    rig.executor.run(script(7, 31, "GLUE_POWERSHELL", "Write-Output hi", "", 1)).await;
    let missing = rig.admin.callback_for(31, SETTLE).await;
    assert_eq!(missing.handle_code, 500);
    assert!(missing.handle_msg.contains("`pwsh`"), "{}", missing.handle_msg);
}

#[tokio::test]
async fn glue_reloads_only_when_the_update_time_changes() {
    let rig = scripting_rig().await;
    rig.executor.run(script(8, 40, "GLUE_SHELL", "echo version-one", "", 100)).await;
    let first = rig.admin.callback_for(40, SETTLE).await;
    // Same update time, new source: upstream keeps running the old version.
    rig.executor.run(script(8, 41, "GLUE_SHELL", "echo version-two", "", 100)).await;
    let second = rig.admin.callback_for(41, SETTLE).await;
    rig.executor.run(script(8, 42, "GLUE_SHELL", "echo version-two", "", 200)).await;
    let third = rig.admin.callback_for(42, SETTLE).await;
    for (log_id, done, expected) in
        [(40, &first, "version-one"), (41, &second, "version-one"), (42, &third, "version-two")]
    {
        let text = rig.executor.log_text(log_id, done.log_date_tim).await;
        assert!(text.contains(expected), "log {log_id} ({done:?}):\n{text}");
    }
    let files: Vec<_> = std::fs::read_dir(rig.dir.path().join("gluesource"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, ["8_200.sh"], "old versions are removed");
}

/// A `sleep` whose argument makes its command line unique to this test.
fn marker(tag: u32) -> String {
    format!("60.{}{tag}", std::process::id())
}

#[tokio::test]
async fn timeout_ends_a_sleeping_shell_job_with_502_and_no_leftover_process() {
    let rig = scripting_rig().await;
    let marker = marker(1);
    let mut body = script(9, 50, "GLUE_SHELL", "sleep \"$1\"\n", &marker, 1);
    body["executorTimeout"] = json!(1);
    let started = Instant::now();
    rig.executor.run(body).await;
    wait_until(SETTLE, "sleep to start", || !live_processes_with(&marker).is_empty()).await;
    let result = rig.admin.callback_for(50, SETTLE).await;
    let elapsed = started.elapsed();
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (502, "job execute timeout "));
    assert!(elapsed < Duration::from_millis(2500), "502 after {elapsed:?}");
    assert!(live_processes_with(&marker).is_empty(), "processes left: {:?}", live_processes_with(&marker));
}

#[tokio::test]
async fn kill_stops_the_whole_process_group_even_when_it_ignores_sigterm() {
    let rig = scripting_rig().await;
    let marker = marker(2);
    // The script and its child ignore SIGTERM, so only the SIGKILL escalation can stop them.
    let source = "trap '' TERM\nsleep \"$1\" &\nwait\nsleep \"$1\"\n";
    rig.executor.run(script(10, 60, "GLUE_SHELL", source, &marker, 1)).await;
    wait_until(SETTLE, "sleep to start", || !live_processes_with(&marker).is_empty()).await;
    assert_eq!(rig.executor.post("/kill", json!({"jobId": 10})).await, json!({"code": 200}));
    let result = rig.admin.callback_for(60, SETTLE).await;
    assert_eq!(
        (result.handle_code, result.handle_msg.as_str()),
        (500, "scheduling center kill job. [job running, killed]")
    );
    assert!(live_processes_with(&marker).is_empty(), "processes left: {:?}", live_processes_with(&marker));
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

#[tokio::test]
async fn a_script_writing_more_than_a_pipe_holds_finishes() {
    // A pipe holds 64 KiB: output must be read while the script runs, not after it exits,
    // or the script blocks on its next write until the timeout kills it.
    let rig = scripting_rig().await;
    let mut body = script(12, 120, "GLUE_SHELL", "seq 1 50000\necho finished", "", 1);
    body["executorTimeout"] = json!(5);
    rig.executor.run(body).await;
    let result = rig.admin.callback_for(120, SETTLE).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    let text = rig.executor.log_text(120, result.log_date_tim).await;
    assert!(text.contains("\n49999\n50000\nfinished"), "every line, in order, then the last one");
}
