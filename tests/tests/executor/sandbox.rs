//! The sandbox escape suite: guest modules that try to read host files and environment, open
//! sockets, spawn processes, exhaust memory, recurse and loop forever, flood their output,
//! import functions the host does not provide, and grow tables past the limit — all triggered
//! through a real executor's `/run` at once, beside ordinary runs that must keep succeeding.
//! Each attempt must fail inside its guest (or be denied to it) with a clear message in the
//! run's result and job log. Rows are listed in docs/executor.md.

use std::collections::HashMap;

use jobwheel_executor::Handlers;
use jobwheel_tests::sample_jobs::{sample_component, sample_job};
use jobwheel_tests::wasm_trigger;
use serde_json::json;

use crate::support::{SETTLE, rig, wait_log_contains};

/// What an attempt runs.
enum Guest {
    /// A sample job from `sample-jobs/`.
    Sample(&'static str),
    /// A sample job built as a WASI 0.2 component.
    Component(&'static str),
    /// A module written in WAT here.
    Wat(&'static str),
}

/// One escape attempt and what must come of it.
struct Attempt {
    what: &'static str,
    guest: Guest,
    param: &'static str,
    timeout: i32,
    /// Killed through `/kill` once its job log shows this.
    kill_after: Option<&'static str>,
    code: i32,
    /// In the callback's handleMsg.
    message: &'static str,
    /// In the run's job log.
    log: &'static [&'static str],
}

const RECURSE: &str = r#"(module (func $down (call $down)) (func (export "_start") (call $down)))"#;
const IMPORT: &str = r#"(module (import "env" "escape" (func)) (func (export "_start") (call 0)))"#;
const TABLE_GROW: &str = r#"(module (table 1 funcref)
  (func (export "_start")
    (if (i32.eq (table.grow 0 (ref.null func) (i32.const 5000000)) (i32.const -1)) (then unreachable))))"#;
const TABLE_START: &str = r#"(module (table 5000000 funcref) (func (export "_start")))"#;

fn attempts() -> Vec<Attempt> {
    let probe = |what, log| Attempt {
        what,
        guest: Guest::Sample("sandbox-probe"),
        param: "",
        timeout: 0,
        kill_after: None,
        code: 200,
        message: "all 10 probes were denied",
        log,
    };
    vec![
        probe(
            "read host files",
            &["denied: read /etc/passwd", "denied: list /", "denied: create /tmp/jobwheel-probe"],
        ),
        probe("read the host environment", &["denied: host environment variables", "denied: read $PATH"]),
        probe(
            "open sockets",
            &["denied: TCP connect 127.0.0.1:22", "denied: TCP listen", "denied: UDP bind"],
        ),
        probe("spawn a process", &["denied: spawn sh"]),
        Attempt {
            what: "open sockets, read files and spawn from a component (wasi:sockets is linked, every use denied)",
            guest: Guest::Component("sandbox-probe"),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 200,
            message: "all 10 probes were denied",
            log: &[
                "denied: TCP connect 127.0.0.1:22",
                "denied: UDP bind",
                "denied: read /etc/passwd",
                "denied: spawn sh",
            ],
        },
        Attempt {
            what: "exhaust memory",
            guest: Guest::Sample("memory-hog"),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 500,
            message: "out of memory",
            log: &["out of memory: the guest tried to grow memory"],
        },
        Attempt {
            what: "recurse forever",
            guest: Guest::Wat(RECURSE),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 500,
            message: "wasm stack overflow",
            log: &["wasm stack overflow"],
        },
        Attempt {
            what: "loop forever (timeout)",
            guest: Guest::Sample("cpu-burner"),
            param: "",
            timeout: 2,
            kill_after: None,
            code: 502,
            message: "job execute timeout",
            log: &["burning CPU until stopped", "[jobwheel] fuel used"],
        },
        Attempt {
            what: "loop forever (kill)",
            guest: Guest::Sample("cpu-burner"),
            param: "",
            timeout: 0,
            kill_after: Some("burning CPU"),
            code: 500,
            message: "[job running, killed]",
            log: &["burning CPU until stopped"],
        },
        Attempt {
            what: "flood its output",
            guest: Guest::Sample("stdout-flood"),
            param: "64",
            timeout: 0,
            kill_after: None,
            code: 200,
            message: "wrote 67",
            log: &["output truncated"],
        },
        Attempt {
            what: "import an undefined function",
            guest: Guest::Wat(IMPORT),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 500,
            message: "env::escape",
            log: &["env::escape"],
        },
        Attempt {
            what: "grow a table past the limit",
            guest: Guest::Wat(TABLE_GROW),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 500,
            message: "wasm trap",
            log: &["table growth refused: the guest asked for 5000001 table elements"],
        },
        Attempt {
            what: "declare a table over the limit",
            guest: Guest::Wat(TABLE_START),
            param: "",
            timeout: 0,
            kill_after: None,
            code: 500,
            message: "table limit: the module needs 5000000 table elements at start",
            log: &["table limit"],
        },
    ]
}

/// The whole job log of a run, page by page through `/log` (a page holds at most 1 MiB).
async fn whole_log(executor: &jobwheel_tests::TestExecutor, log_id: i64, at: i64) -> String {
    let mut text = String::new();
    let mut from = 1;
    for _ in 0..64 {
        let page = executor.log(log_id, at, from).await;
        let content = &page["content"];
        text.push_str(content["logContent"].as_str().unwrap_or_default());
        let to = content["toLineNum"].as_i64().and_then(|t| i32::try_from(t).ok()).unwrap_or(0);
        if to < from || content["isEnd"] == json!(true) {
            break;
        }
        from = to + 1;
    }
    text
}

/// Compiles and runs `cpu-burner` once and kills it, so the timed rows time the loop, not a
/// first compile on a busy debug build.
async fn warm_burner(rig: &crate::support::Rig, digest: &str) {
    let warm = wasm_trigger(50, 50, digest, "");
    rig.executor.run(warm.clone()).await;
    wait_log_contains(&rig.executor, &warm, "burning CPU").await;
    rig.executor.post("/kill", json!({"jobId": 50})).await;
    rig.admin.callback_for(50, SETTLE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_escape_attempt_fails_inside_its_guest_while_other_jobs_run() {
    escape_suite(None).await;
}

/// The same suite with wasmtime's pooling allocator (`--wasm-pool-slots`): enough slots for
/// every run of the suite at once, so the verdicts are the allocator's, not a queue's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_escape_attempt_fails_the_same_way_from_pool_slots() {
    escape_suite(Some(48)).await;
}

async fn escape_suite(pool_slots: Option<u32>) {
    let rig = rig(Handlers::new(), |c| {
        c.wasm.max_memory_bytes = 16 << 20;
        c.wasm.pool_slots = pool_slots;
    })
    .await;
    let hello = rig.admin.add_module(sample_job("hello"));
    let mut attempts = attempts();
    if pool_slots.is_some() {
        // A module whose declared table cannot fit a pool slot is refused when it is loaded,
        // before any run, in wasmtime's words (docs/benchmarks.md, pooling).
        let table = attempts.iter_mut().find(|a| a.what == "declare a table over the limit").expect("row");
        table.message =
            "table index 0 has a minimum element size of 5000000 which exceeds the limit of 100000";
        table.log = &["does not fit in pooling allocator requirements"];
    }
    let mut modules: HashMap<&str, String> = HashMap::new();
    let burner = rig.admin.add_module(sample_job("cpu-burner"));
    warm_burner(&rig, &burner).await;
    modules.insert("cpu-burner", burner);
    let mut bodies = Vec::new();
    for (n, attempt) in attempts.iter().enumerate() {
        let digest = match attempt.guest {
            Guest::Sample(name) => {
                modules.entry(name).or_insert_with(|| rig.admin.add_module(sample_job(name))).clone()
            }
            Guest::Component(name) => rig.admin.add_module(sample_component(name)),
            Guest::Wat(text) => rig.admin.add_module(wat::parse_str(text).expect("fixture")),
        };
        let id = i32::try_from(n).expect("few rows") + 1;
        let mut body = wasm_trigger(id, i64::from(id), &digest, attempt.param);
        body["executorTimeout"] = json!(attempt.timeout);
        assert_eq!(rig.executor.run(body.clone()).await, json!({"code": 200}), "{}", attempt.what);
        bodies.push(body);
    }
    // Ordinary runs on other jobs while the attempts run.
    for n in 0..8 {
        let body = wasm_trigger(100 + n, 100 + i64::from(n), &hello, "neighbour");
        assert_eq!(rig.executor.run(body).await, json!({"code": 200}));
    }
    for (attempt, body) in attempts.iter().zip(&bodies) {
        if let Some(needle) = attempt.kill_after {
            wait_log_contains(&rig.executor, body, needle).await;
            rig.executor.post("/kill", json!({"jobId": body["jobId"]})).await;
        }
    }
    for n in 0..8 {
        let result = rig.admin.callback_for(100 + i64::from(n), SETTLE).await;
        assert_eq!(result.handle_code, 200, "a neighbour run failed: {}", result.handle_msg);
    }
    let mut failures = Vec::new();
    for (attempt, body) in attempts.iter().zip(&bodies) {
        let log_id = body["logId"].as_i64().expect("log id");
        let result = rig.admin.callback_for(log_id, SETTLE).await;
        let text = whole_log(&rig.executor, log_id, result.log_date_tim).await;
        let log_ok = attempt.log.iter().all(|needle| text.contains(needle));
        if result.handle_code != attempt.code || !result.handle_msg.contains(attempt.message) || !log_ok {
            failures.push(format!(
                "{}: expected {} with {:?} and {:?} in the log; got {} {:?}\n{text}",
                attempt.what,
                attempt.code,
                attempt.message,
                attempt.log,
                result.handle_code,
                result.handle_msg
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The executor still serves new work afterwards.
    rig.executor.run(wasm_trigger(200, 200, &hello, "after")).await;
    assert_eq!(rig.admin.callback_for(200, SETTLE).await.handle_code, 200);
}
