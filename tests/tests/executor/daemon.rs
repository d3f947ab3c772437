//! The `jobwheel-executor` binary as a real process: configuration errors, registration, a
//! SIGTERM that drains and deregisters, and a SIGKILL that loses no result already journaled.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use jobwheel_tests::cluster::Daemon;
use jobwheel_tests::{FakeAdmin, TOKEN, trigger, wait_until};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::Command;

use crate::support::SETTLE;

/// The daemon binary, built by `cargo build --workspace --bins` (scripts/test.sh) into the target directory.
pub(crate) fn daemon() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().and_then(|deps| deps.parent()).expect("target dir");
    let path = dir.join("jobwheel-executor");
    assert!(
        path.is_file(),
        "{} missing: build it first (`cargo build --workspace --bins`, as scripts/test.sh does)",
        path.display()
    );
    path
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `jobwheel-executor` process registered with a fake admin, for tests that need the real
/// daemon (its own memory, its own process tree, its own environment).
pub(crate) struct DaemonRig {
    pub(crate) admin: FakeAdmin,
    pub(crate) port: u16,
    pub(crate) child: tokio::process::Child,
    pub(crate) dir: tempfile::TempDir,
}

impl DaemonRig {
    /// Starts the daemon as AppName `app` with `extra` flags and `env`, and waits until it has
    /// registered.
    pub(crate) async fn start(app: &str, extra: &[&str], env: &[(&str, &str)]) -> DaemonRig {
        let admin = FakeAdmin::start(Some(TOKEN)).await;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(daemon());
        command
            .args(["--listen", &format!("127.0.0.1:{port}"), "--app-name", app])
            .args(["--admin-addresses", &admin.base_url()])
            .args(extra)
            .arg("--log-path")
            .arg(dir.path())
            .env("JOBWHEEL_ACCESS_TOKEN", TOKEN)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command.spawn().unwrap();
        admin.wait_for(SETTLE, "the daemon's registration", |r| !r.registry.is_empty()).await;
        DaemonRig { admin, port, child, dir }
    }

    /// POSTs `body` to the daemon's `path` with the token; the reply's JSON.
    pub(crate) async fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        reqwest::Client::new()
            .post(format!("http://127.0.0.1:{}{path}", self.port))
            .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The daemon's peak resident memory so far, in KiB (`VmHWM`).
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("the daemon runs");
        jobwheel_tests::procs::peak_rss_kib(pid).expect("the daemon's VmHWM")
    }
}

#[tokio::test]
async fn refuses_to_start_without_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(daemon())
        .args(["--listen", "127.0.0.1:0", "--log-path"])
        .arg(dir.path())
        .env_remove("JOBWHEEL_ACCESS_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(64), "EX_USAGE for configuration errors");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no access token") && stderr.contains("--access-token"), "{stderr}");
}

#[tokio::test]
async fn runs_registers_and_deregisters_on_sigterm() {
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(daemon())
        .args(["--listen", &format!("127.0.0.1:{port}"), "--app-name", "daemon-test"])
        .args(["--admin-addresses", &admin.base_url(), "--log-path"])
        .arg(dir.path())
        .env("JOBWHEEL_ACCESS_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    admin.wait_for(SETTLE, "daemon registry", |r| !r.registry.is_empty()).await;
    let registered = admin.recorded().registry[0].clone();
    assert_eq!(registered.registry_key, "daemon-test");
    assert_eq!(registered.registry_value, format!("http://127.0.0.1:{port}/"));

    // Built-in handler through the real process.
    let http = reqwest::Client::new();
    let reply: serde_json::Value = http
        .post(format!("http://127.0.0.1:{port}/run"))
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
        .json(&jobwheel_tests::trigger(1, 42, "BEAN", "demoJobHandler", "from-test"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["code"], 200, "{reply}");
    let result = admin.callback_for(42, SETTLE).await;
    assert_eq!((result.handle_code, result.handle_msg.as_str()), (200, "hello, from-test"));

    let pid = Pid::from_raw(i32::try_from(child.id().unwrap()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
    wait_until(SETTLE, "registryRemove", || !admin.recorded().registry_remove.is_empty()).await;
    assert_eq!(admin.recorded().registry_remove[0], registered);
}

#[tokio::test]
async fn insecure_no_token_warns_on_every_start() {
    use tokio::io::{AsyncBufReadExt as _, BufReader};
    let dir = tempfile::tempdir().unwrap();
    for start in 1..=2 {
        let mut child = Command::new(daemon())
            .args(["--listen", "127.0.0.1:0", "--insecure-no-token", "--log-path"])
            .arg(dir.path())
            .env_remove("JOBWHEEL_ACCESS_TOKEN")
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let warning = tokio::time::timeout(SETTLE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("WITHOUT an access token") {
                    return line;
                }
            }
            panic!("stderr ended without the warning");
        })
        .await
        .unwrap_or_else(|_| panic!("start {start}: no warning within {SETTLE:?}"));
        assert!(warning.contains("WARN") && warning.contains("anyone who can reach"), "{warning}");
        child.kill().await.unwrap();
    }
}

/// The journal: results whose batch was on its way to the admin when the executor process was
/// SIGKILLed (the admin had received it but not stored it) are sent again after a restart.
/// Upstream keeps such a batch only in memory, so it would be gone.
#[tokio::test]
async fn results_on_their_way_to_the_admin_survive_a_sigkill() {
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    admin.hold_callbacks(true);
    let dir = tempfile::tempdir().unwrap();
    let mut executor =
        Daemon::start_executor("journal-test", &[admin.base_url()], dir.path(), &[]).await.expect("executor");
    let http = reqwest::Client::new();
    for n in 1..=5 {
        let body = trigger(n, i64::from(n), "BEAN", "demoJobHandler", "");
        let reply: serde_json::Value = http
            .post(format!("{}/run", executor.base))
            .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
            .json(&body)
            .send()
            .await
            .expect("run")
            .json()
            .await
            .expect("reply");
        assert_eq!(reply["code"], 200, "{reply}");
    }
    // Usually one batch; a batch whose POST timed out meanwhile is spooled and may be held again.
    let held_ids = |r: &jobwheel_tests::fake_admin::Recorded| {
        let mut ids: Vec<i64> = r.held.iter().map(|c| c.log_id).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    admin.wait_for(SETTLE, "all five results held on their way", |r| held_ids(r) == 5).await;

    executor.kill9().await.expect("SIGKILL");
    admin.hold_callbacks(false);
    assert!(admin.recorded().callbacks.is_empty(), "nothing was delivered before the kill");
    executor.restart().await.expect("restart");
    admin.wait_for(SETTLE, "the five results delivered after the restart", |r| r.callbacks.len() >= 5).await;
    let mut delivered: Vec<i64> = admin.recorded().callbacks.iter().map(|c| c.log_id).collect();
    delivered.sort_unstable();
    delivered.dedup();
    assert_eq!(delivered, [1, 2, 3, 4, 5]);
    assert!(admin.recorded().callbacks.iter().all(|c| c.handle_code == 200));
}
