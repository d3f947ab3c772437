//! A script run's whole process tree is stopped — including descendants that left its process
//! group with `setsid`, a double fork or `nohup` — on kill, on timeout and when the script
//! itself exits, with each of the executor's two mechanisms (`--script-tree cgroup` and
//! `subreaper`, `executor/src/glue/tree.rs`), in the real daemon.

use std::time::Duration;

use jobwheel_tests::procs::live_processes_with;
use jobwheel_tests::wait_until;
use serde_json::{Value, json};

use crate::daemon::DaemonRig;
use crate::support::SETTLE;

/// Every way a shell script can start a process that outlives its process group, then a
/// foreground sleep. `$1` is a marker duration, so the sleepers can be found in `/proc`.
const ESCAPES: &str = "setsid sleep \"$1\" &\n\
    ( setsid sh -c 'sleep \"$1\" &' _ \"$1\" & )\n\
    nohup sleep \"$1\" >/dev/null 2>&1 &\n";

fn marker(mode: &str, tag: u32) -> String {
    let salt = if mode == "cgroup" { 1 } else { 2 };
    format!("70.{}{salt}{tag}", std::process::id())
}

fn script(job_id: i32, log_id: i64, source: &str, param: &str) -> Value {
    let mut body = jobwheel_tests::trigger(job_id, log_id, "GLUE_SHELL", "", param);
    body["glueSource"] = json!(source);
    body["glueUpdatetime"] = json!(1);
    body
}

/// Waits until `marker`'s escaped sleepers are running (three escapes, plus `extra`).
async fn started(marker: &str, extra: usize) {
    wait_until(SETTLE, "the escaped sleepers", || live_processes_with(marker).len() >= 3 + extra).await;
}

/// Waits until none of `marker`'s processes is left alive.
async fn all_gone(marker: &str, what: &str) {
    let deadline = tokio::time::Instant::now() + SETTLE;
    while !live_processes_with(marker).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: processes outlived the run: {:?}",
            live_processes_with(marker)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn every_descendant_is_stopped(mode: &str) {
    let rig = DaemonRig::start("tree-test", &["--enable-script-glue", "--script-tree", mode], &[]).await;

    // Kill: the script waits in the foreground; every escaped sleeper goes with it.
    let killed = marker(mode, 1);
    let source = format!("{ESCAPES}sleep \"$1\"\n");
    let reply = rig.post("/run", script(21, 210, &source, &killed)).await;
    assert_eq!(reply["code"], 200, "{reply}");
    started(&killed, 1).await;
    assert_eq!(rig.post("/kill", json!({"jobId": 21})).await["code"], 200);
    let result = rig.admin.callback_for(210, SETTLE).await;
    assert_eq!(result.handle_code, 500, "{}", result.handle_msg);
    all_gone(&killed, "kill").await;

    // Timeout: the same, ended by the job's timeout.
    let timed_out = marker(mode, 2);
    let mut body = script(22, 220, &source, &timed_out);
    body["executorTimeout"] = json!(2);
    assert_eq!(rig.post("/run", body).await["code"], 200);
    started(&timed_out, 1).await;
    let result = rig.admin.callback_for(220, SETTLE).await;
    assert_eq!(result.handle_code, 502, "{}", result.handle_msg);
    all_gone(&timed_out, "timeout").await;

    // The script exits at once, leaving daemons behind: they do not outlive the run.
    let exited = marker(mode, 3);
    let source = format!(
        "{ESCAPES}while [ \"$(pgrep -fc \"sleep $1\")\" -lt 3 ]; do sleep 0.05; done\necho started\n"
    );
    assert_eq!(rig.post("/run", script(23, 230, &source, &exited)).await["code"], 200);
    let result = rig.admin.callback_for(230, SETTLE).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    all_gone(&exited, "the script's own exit").await;
}

#[tokio::test]
async fn cgroup_mode_stops_descendants_that_left_the_process_group() {
    every_descendant_is_stopped("cgroup").await;
}

#[tokio::test]
async fn subreaper_mode_stops_descendants_that_left_the_process_group() {
    every_descendant_is_stopped("subreaper").await;
}
