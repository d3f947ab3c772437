//! `GLUE_WASM` through the executor's real `/run`: real sample-job modules fetched from a fake
//! admin, sandboxing, timeouts and kills of runaway guests, hot reload, and the compiled-module
//! cache across restarts.

use std::time::{Duration, Instant};

use jobwheel_executor::{ExecutorConfig, Handlers};
use jobwheel_tests::sample_jobs::sample_job;
use jobwheel_tests::{FakeAdmin, TOKEN, TestExecutor, test_config, wasm_trigger};
use serde_json::json;

use crate::support::{Rig, SETTLE, rig};

async fn wasm_rig() -> Rig {
    rig(Handlers::new(), |_| {}).await
}

#[tokio::test]
async fn hello_logs_its_param_and_reports_a_message() {
    let rig = wasm_rig().await;
    let digest = rig.admin.add_module(sample_job("hello"));
    assert_eq!(rig.executor.run(wasm_trigger(1, 1, &digest, "jobwheel")).await, json!({"code": 200}));
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (200, "said hello to jobwheel"));
    let text = rig.executor.log_text(1, result.log_date_tim).await;
    assert!(text.contains("hello, jobwheel! (job 1, log 1)"), "{text}");
    assert!(text.contains("module fetched from the admin and compiled"), "{text}");
    assert!(text.contains("[jobwheel] fuel used"), "stats line: {text}");
}

#[tokio::test]
async fn sharding_values_arrive_in_the_guest() {
    let rig = wasm_rig().await;
    let digest = rig.admin.add_module(sample_job("sharding"));
    for index in 0..3 {
        let mut body = wasm_trigger(10 + index, i64::from(index) + 1, &digest, "9");
        body["broadcastIndex"] = json!(index);
        body["broadcastTotal"] = json!(3);
        rig.executor.run(body).await;
    }
    let mut messages = Vec::new();
    for log_id in 1..=3 {
        let result = rig.admin.callback_for(log_id, SETTLE).await;
        assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
        messages.push(result.handle_msg);
    }
    assert_eq!(
        messages,
        [
            "shard 0/3: processed 3 items 0..3 (sum 3)",
            "shard 1/3: processed 3 items 3..6 (sum 12)",
            "shard 2/3: processed 3 items 6..9 (sum 21)"
        ]
    );
}

#[tokio::test]
async fn a_failing_guest_is_a_500_with_its_message() {
    let rig = wasm_rig().await;
    let digest = rig.admin.add_module(sample_job("failing"));
    rig.executor.run(wasm_trigger(1, 1, &digest, "x")).await;
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(result.handle_code, 500);
    assert!(result.handle_msg.contains("failing on purpose (param: \"x\")"), "{}", result.handle_msg);
}

#[tokio::test]
async fn an_infinite_loop_times_out_with_502_and_the_executor_keeps_serving() {
    let rig = wasm_rig().await;
    let burner = rig.admin.add_module(sample_job("cpu-burner"));
    let hello = rig.admin.add_module(sample_job("hello"));
    // Compile both first (a debug build compiles slowly) so the measured time is the run's.
    rig.executor.run(wasm_trigger(9, 9, &hello, "warm")).await;
    let warm = wasm_trigger(8, 8, &burner, "");
    rig.executor.run(warm.clone()).await;
    crate::support::wait_log_contains(&rig.executor, &warm, "burning CPU").await;
    rig.executor.post("/kill", json!({"jobId": 8})).await;
    rig.admin.callback_for(9, SETTLE).await;
    rig.admin.callback_for(8, SETTLE).await;

    let mut body = wasm_trigger(1, 1, &burner, "");
    body["executorTimeout"] = json!(1);
    let started = Instant::now();
    rig.executor.run(body).await;
    // Another job runs to completion while the loop burns.
    rig.executor.run(wasm_trigger(2, 2, &hello, "meanwhile")).await;
    assert_eq!(rig.admin.callback_for(2, SETTLE).await.handle_code, 200);
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (502, "job execute timeout "));
    assert!(started.elapsed() < Duration::from_millis(2500), "502 after {:?}", started.elapsed());
    let text = rig.executor.log_text(1, result.log_date_tim).await;
    assert!(text.contains("burning CPU until stopped"), "{text}");
    assert!(text.contains("[jobwheel] fuel used"), "{text}");
}

#[tokio::test]
async fn kill_stops_an_infinite_loop_at_once() {
    let rig = wasm_rig().await;
    let burner = rig.admin.add_module(sample_job("cpu-burner"));
    let body = wasm_trigger(1, 1, &burner, "");
    rig.executor.run(body.clone()).await;
    crate::support::wait_log_contains(&rig.executor, &body, "burning CPU").await;
    let killed_at = Instant::now();
    assert_eq!(rig.executor.post("/kill", json!({"jobId": 1})).await, json!({"code": 200}));
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(
        (result.handle_code, result.handle_msg.as_str()),
        (500, "scheduling center kill job. [job running, killed]")
    );
    assert!(killed_at.elapsed() < Duration::from_secs(1), "stopped after {:?}", killed_at.elapsed());
}

#[tokio::test]
async fn a_memory_hog_fails_without_hurting_the_executor() {
    let rig = rig(Handlers::new(), |c| c.wasm.max_memory_bytes = 16 << 20).await;
    let hog = rig.admin.add_module(sample_job("memory-hog"));
    let hello = rig.admin.add_module(sample_job("hello"));
    rig.executor.run(wasm_trigger(1, 1, &hog, "")).await;
    let result = rig.admin.callback_for(1, SETTLE).await;
    assert_eq!(result.handle_code, 500);
    assert!(result.handle_msg.contains("out of memory"), "{}", result.handle_msg);
    rig.executor.run(wasm_trigger(2, 2, &hello, "after")).await;
    assert_eq!(rig.admin.callback_for(2, SETTLE).await.handle_code, 200);
}

#[tokio::test]
async fn every_sandbox_probe_is_denied_inside_the_guest() {
    let rig = wasm_rig().await;
    let probe = rig.admin.add_module(sample_job("sandbox-probe"));
    rig.executor.run(wasm_trigger(1, 1, &probe, "")).await;
    let result = rig.admin.callback_for(1, SETTLE).await;
    let text = rig.executor.log_text(1, result.log_date_tim).await;
    assert_eq!(result.handle_code, 200, "{}\n{text}", result.handle_msg);
    assert!(!text.contains("ESCAPED"), "{text}");
    for probe in ["read /etc/passwd", "host environment variables", "TCP connect 127.0.0.1:22"] {
        assert!(text.contains(&format!("denied: {probe}")), "{probe} not denied:\n{text}");
    }
}

#[tokio::test]
async fn a_new_module_version_is_picked_up_by_the_next_trigger() {
    let rig = wasm_rig().await;
    let v1 = rig.admin.add_module(sample_job("hello"));
    let v2 = rig.admin.add_module(sample_job("failing"));
    rig.executor.run(wasm_trigger(1, 1, &v1, "v1")).await;
    assert_eq!(rig.admin.callback_for(1, SETTLE).await.handle_code, 200);
    rig.executor.run(wasm_trigger(1, 2, &v2, "v2")).await;
    let second = rig.admin.callback_for(2, SETTLE).await;
    assert_eq!(second.handle_code, 500, "the second trigger ran the new version");
    assert!(second.handle_msg.contains("failing on purpose"), "{}", second.handle_msg);
    rig.executor.run(wasm_trigger(1, 3, &v1, "v1 again")).await;
    assert_eq!(rig.admin.callback_for(3, SETTLE).await.handle_msg, "said hello to v1 again");
    let fetches = rig.admin.recorded().module_fetches;
    assert_eq!(fetches, [v1.clone(), v2], "each version fetched once, then served from memory");
}

#[tokio::test]
async fn bad_module_references_fail_clearly() {
    let rig = wasm_rig().await;
    let mut no_module = wasm_trigger(1, 1, &"0".repeat(64), "");
    no_module.as_object_mut().unwrap().remove("wasmModule");
    let reply = rig.executor.run(no_module).await;
    assert!(reply["msg"].as_str().unwrap().contains("no wasmModule"), "{reply}");
    let reply = rig.executor.run(wasm_trigger(1, 2, "not-a-digest", "")).await;
    assert!(reply["msg"].as_str().unwrap().contains("invalid module digest"), "{reply}");

    // The admin serves bytes that do not match the digest.
    let digest = "ab".repeat(32);
    rig.admin.add_module_as(&digest, sample_job("hello"));
    rig.executor.run(wasm_trigger(2, 3, &digest, "")).await;
    let mismatch = rig.admin.callback_for(3, SETTLE).await;
    assert_eq!(mismatch.handle_code, 500);
    assert!(mismatch.handle_msg.contains("digest mismatch"), "{}", mismatch.handle_msg);

    // An absolute URL on another host never receives the token.
    let mut foreign = wasm_trigger(3, 4, &"cd".repeat(32), "");
    foreign["wasmModule"]["url"] = json!("http://203.0.113.9/steal");
    rig.executor.run(foreign).await;
    let refused = rig.admin.callback_for(4, SETTLE).await;
    assert!(refused.handle_msg.contains("refusing to send the access token"), "{}", refused.handle_msg);
}

fn cached_config(dir: &std::path::Path, admin: &FakeAdmin) -> ExecutorConfig {
    let mut config = test_config(&dir.join("logs"));
    config.admin_addresses = vec![admin.base_url()];
    config.wasm.cache_dir = Some(dir.join("wasm-cache"));
    config
}

#[tokio::test]
async fn compiled_modules_survive_a_restart_and_a_corrupt_cache_is_recovered() {
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().unwrap();
    let digest = admin.add_module(sample_job("hello"));

    let first = TestExecutor::start(cached_config(dir.path(), &admin), Handlers::new()).await;
    first.run(wasm_trigger(1, 1, &digest, "one")).await;
    assert_eq!(admin.callback_for(1, SETTLE).await.handle_code, 200);
    first.stop().await.unwrap();

    let second = TestExecutor::start(cached_config(dir.path(), &admin), Handlers::new()).await;
    second.run(wasm_trigger(1, 2, &digest, "two")).await;
    let result = admin.callback_for(2, SETTLE).await;
    assert_eq!(result.handle_code, 200);
    let text = second.log_text(2, result.log_date_tim).await;
    assert!(text.contains("loaded from the disk cache"), "{text}");
    assert_eq!(admin.recorded().module_fetches.len(), 1, "no second download after the restart");
    second.stop().await.unwrap();

    // Corrupt every cached artifact: the next executor discards it and recompiles.
    let mut corrupted = 0;
    for entry in walk(&dir.path().join("wasm-cache")) {
        std::fs::write(&entry, b"definitely not a compiled module").unwrap();
        corrupted += 1;
    }
    assert!(corrupted > 0, "the cache held a compiled artifact");
    let third = TestExecutor::start(cached_config(dir.path(), &admin), Handlers::new()).await;
    third.run(wasm_trigger(1, 3, &digest, "three")).await;
    let result = admin.callback_for(3, SETTLE).await;
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (200, "said hello to three"));
    third.stop().await.unwrap();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
