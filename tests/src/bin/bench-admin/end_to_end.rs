//! `--executor-process`: the end-to-end form of the benchmark (issue 34). Instead of executors
//! in this process with a no-op handler, real `jobwheel-executor` processes (the binary beside
//! this one) run `demoJobHandler`, and a run counts when it **starts**: when its job-log file
//! `{log-path}/{yyyy-MM-dd}/{logId}.log` is created. The file's birth time (statx, ext4 and
//! most Linux file systems keep it) is read after the window, so watching costs nothing while
//! the admin works; lateness is (birth time − scheduled second), the executor's queueing and
//! its own HTTP handling included, as a user sees it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use jobwheel_tests::TOKEN;
use tokio::process::{Child, Command};

use crate::setup::{Arrival, Arrivals};

/// What the processes run: a built-in of the daemon that logs two lines and succeeds.
pub(crate) const HANDLER: &str = "demoJobHandler";

/// The running executor processes.
pub(crate) struct ExecutorProcesses {
    children: Vec<Child>,
    log_dirs: Vec<PathBuf>,
    /// `http://127.0.0.1:PORT/` of each, for the group's address list.
    pub(crate) addresses: Vec<String>,
}

impl ExecutorProcesses {
    /// Starts `count` executors registered with `admin_urls`, logging under `dir`.
    pub(crate) async fn start(count: usize, dir: &Path, admin_urls: &[String]) -> anyhow::Result<Self> {
        let binary = std::env::current_exe()?.parent().context("binary directory")?.join("jobwheel-executor");
        if !binary.is_file() {
            bail!(
                "{} missing: build it with the same profile (cargo build --release -p jobwheel-executor)",
                binary.display()
            );
        }
        let mut started =
            ExecutorProcesses { children: Vec::new(), log_dirs: Vec::new(), addresses: Vec::new() };
        for n in 0..count {
            let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
            let home = dir.join(format!("executor-{n}"));
            let logs = home.join("logs");
            std::fs::create_dir_all(&logs)?;
            let mut admins = admin_urls.to_vec();
            admins.rotate_left(n % admin_urls.len().max(1));
            let address = format!("http://127.0.0.1:{port}/");
            let child = Command::new(&binary)
                .args(["--listen", &format!("127.0.0.1:{port}"), "--address", &address])
                .args([
                    "--admin-addresses",
                    &admins.join(","),
                    "--access-token",
                    TOKEN,
                    "--app-name",
                    "bench",
                ])
                .args(["--max-queue", "1000000"])
                .arg("--log-path")
                .arg(&logs)
                .arg("--wasm-cache-dir")
                .arg(home.join("wasm-cache"))
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(home.join("executor.log"))?)
                .kill_on_drop(true)
                .spawn()
                .context("starting jobwheel-executor")?;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
                if tokio::time::Instant::now() > deadline {
                    bail!(
                        "the executor did not listen within 30 s; see {}",
                        home.join("executor.log").display()
                    );
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            started.children.push(child);
            started.log_dirs.push(logs);
            started.addresses.push(address);
        }
        Ok(started)
    }

    /// Process ids, for the CPU and memory samples.
    pub(crate) fn pids(&self) -> anyhow::Result<Vec<u32>> {
        self.children.iter().map(|c| c.id().context("executor pid")).collect()
    }

    /// Every run started so far, from the job-log files' birth times, into `arrivals`; with
    /// `with_jobs`, each with its job's id, read from the file's first line (the admin's
    /// database knows it otherwise; ratchjob's cannot be read).
    pub(crate) fn collect(&self, arrivals: &Arrivals, with_jobs: bool) -> anyhow::Result<()> {
        let mut found = Vec::new();
        for logs in &self.log_dirs {
            for day in std::fs::read_dir(logs)? {
                let day = day?.path();
                if !day.is_dir() {
                    continue;
                }
                for file in std::fs::read_dir(&day)? {
                    let path = file?.path();
                    let Some(log_id) = path.file_stem().and_then(|s| s.to_str()).and_then(|s| s.parse().ok())
                    else {
                        continue;
                    };
                    let born = std::fs::metadata(&path)?
                        .created()
                        .context("this file system keeps no birth times; use the in-process executors")?;
                    let at_ms = i64::try_from(born.duration_since(UNIX_EPOCH)?.as_millis())?;
                    let job_id = if with_jobs { job_of(&path)? } else { 0 };
                    found.push(Arrival { log_id, job_id, scheduled_ms: 0, at_ms });
                }
            }
        }
        arrivals.lock().expect("arrivals").extend(found);
        Ok(())
    }
}

/// The job id of the job-log file `path`: its lines read `{time} [JobThread-{jobId}] …`.
fn job_of(path: &Path) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(path)?;
    let id = text
        .split_once("[JobThread-")
        .and_then(|(_, rest)| rest.split_once(']'))
        .and_then(|(id, _)| id.parse().ok());
    id.with_context(|| format!("no job id in {}", path.display()))
}
