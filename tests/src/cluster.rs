//! Real `jobwheel-admin` and `jobwheel-executor` processes for multi-process tests: started
//! from the target directory on a free loopback port, their stderr kept in a file for failure
//! reports and for following what they do, killed on drop, and killable with SIGKILL or
//! stoppable with SIGTERM and restarted with the same flags.
//!
//! The binaries are built by `cargo build --workspace --bins` (scripts/test.sh does this before
//! `cargo test`); this module finds them beside the running test binary.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::TOKEN;

/// `target/<profile>/<name>` for the profile of the running test or benchmark binary.
pub fn binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // Test binaries live in target/<profile>/deps, binaries (benchmarks too) one level up.
    let own_dir = exe.parent().context("target directory")?;
    let candidates = [Some(own_dir), own_dir.parent()];
    if let Some(path) = candidates.into_iter().flatten().map(|dir| dir.join(name)).find(|p| p.is_file()) {
        return Ok(path);
    }
    bail!(
        "{name} missing beside {}: build it first (`cargo build --workspace --bins`, as scripts/test.sh does)",
        exe.display()
    )
}

/// A port of 127.0.0.1 that was free a moment ago, for a daemon to bind (it cannot be handed a
/// listener). Chosen at random *below* the kernel's ephemeral range: a port from that range (what
/// binding port 0 gives) is also what any process's next outgoing connection may take, and one
/// did take such a port between its choice and an admin's bind (CI, 2026-12-07: `--metrics-listen`
/// "Address already in use"). Below the range only another listener can take it, and the random
/// choice makes two tests picking the same port unlikely.
pub fn free_port() -> anyhow::Result<u16> {
    use rand::Rng as _;
    let below = ephemeral_start().unwrap_or(32_768).clamp(11_000, 65_535);
    let mut rng = rand::rng();
    for _ in 0..200 {
        let port = rng.random_range(10_000..below);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The first port of the kernel's ephemeral range (Linux), if it can be read.
fn ephemeral_start() -> Option<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

/// How a daemon shows it is up.
#[derive(Debug, Clone, Copy)]
enum Ready {
    /// The admin: `GET /api/v1/meta` answers (401 without a session is fine).
    Admin,
    /// The executor: `POST /beat` with the token answers.
    Executor,
}

/// One `jobwheel-admin` or `jobwheel-executor` process and how to start it again.
pub struct Daemon {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Its stderr (all starts appended).
    pub log: PathBuf,
    binary: &'static str,
    ready: Ready,
    args: Vec<String>,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Daemon {
    /// Starts an admin on `database_url` with the test token, data under `data_dir`, plus
    /// `extra` flags and environment; returns once its HTTP API answers.
    pub async fn start_admin(
        database_url: &str,
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Daemon> {
        std::fs::create_dir_all(data_dir)?;
        let port = free_port()?;
        let mut args: Vec<String> = vec![
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--database-url".into(),
            database_url.into(),
            "--access-token".into(),
            TOKEN.into(),
            "--data-dir".into(),
            data_dir.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let mut admin = Daemon {
            base: format!("http://127.0.0.1:{port}"),
            log: data_dir.join("admin.log"),
            binary: "jobwheel-admin",
            ready: Ready::Admin,
            args,
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            child: None,
        };
        admin.spawn().await?;
        Ok(admin)
    }

    /// Starts an executor named `app_name` reporting to `admins`, with logs, spool and Wasm
    /// cache under `data_dir`, heartbeats and callback retries every second, plus `extra`
    /// flags; returns once it answers `/beat`.
    pub async fn start_executor(
        app_name: &str,
        admins: &[String],
        data_dir: &Path,
        extra: &[&str],
    ) -> anyhow::Result<Daemon> {
        Self::start_executor_with_env(app_name, admins, data_dir, extra, &[]).await
    }

    /// Like [`start_executor`](Self::start_executor), with `env` set for the process (e.g. a
    /// `PATH` without some interpreter).
    pub async fn start_executor_with_env(
        app_name: &str,
        admins: &[String],
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> anyhow::Result<Daemon> {
        std::fs::create_dir_all(data_dir)?;
        let port = free_port()?;
        let mut args: Vec<String> = vec![
            "--listen".into(),
            format!("127.0.0.1:{port}"),
            "--app-name".into(),
            app_name.into(),
            "--admin-addresses".into(),
            admins.join(","),
            "--access-token".into(),
            TOKEN.into(),
            "--log-path".into(),
            data_dir.join("logs").display().to_string(),
            "--wasm-cache-dir".into(),
            data_dir.join("wasm-cache").display().to_string(),
            "--beat-interval".into(),
            "1".into(),
            "--callback-retry-interval".into(),
            "1".into(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let mut executor = Daemon {
            base: format!("http://127.0.0.1:{port}"),
            log: data_dir.join("executor.log"),
            binary: "jobwheel-executor",
            ready: Ready::Executor,
            args,
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            child: None,
        };
        executor.spawn().await?;
        Ok(executor)
    }

    /// The address executors register and admins route to: `http://127.0.0.1:<port>/`.
    pub fn address(&self) -> String {
        format!("{}/", self.base)
    }

    async fn answers(&self) -> bool {
        let http = reqwest::Client::new();
        let sent = match self.ready {
            Ready::Admin => http.get(format!("{}/api/v1/meta", self.base)).send().await,
            Ready::Executor => {
                http.post(format!("{}/beat", self.base))
                    .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
                    .send()
                    .await
            }
        };
        sent.is_ok()
    }

    async fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log)?;
        let child = Command::new(binary(self.binary)?)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", self.binary))?;
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if self.answers().await {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("{} exited with {status} while starting:\n{}", self.binary, self.log_tail(30));
            }
            if tokio::time::Instant::now() > deadline {
                bail!("{} did not answer within 30 s:\n{}", self.binary, self.log_tail(30));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Whether a process is running (it may have been killed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL: no shutdown of any kind, as in a crash.
    pub async fn kill9(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.start_kill()?;
            child.wait().await?;
        }
        Ok(())
    }

    /// Whether the process ended by itself (a fault point's SIGKILL), without waiting; it is
    /// then not running, and [`restart`](Self::restart) starts it again.
    pub fn has_exited(&mut self) -> anyhow::Result<bool> {
        let Some(child) = self.child.as_mut() else { return Ok(true) };
        if child.try_wait()?.is_some() {
            self.child = None;
            return Ok(true);
        }
        Ok(false)
    }

    /// Waits up to `timeout` for the process to end by itself (a fault point's SIGKILL); true
    /// if it did (it is then not running, and [`restart`](Self::restart) starts it again).
    pub async fn wait_exit(&mut self, timeout: Duration) -> anyhow::Result<bool> {
        let Some(child) = self.child.as_mut() else { return Ok(true) };
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(status) => {
                status?;
                self.child = None;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// SIGTERM and wait for a graceful exit (bounded).
    pub async fn stop(&mut self) -> anyhow::Result<()> {
        self.terminate()?;
        self.stopped().await
    }

    /// Sends SIGTERM without waiting: the process drains while the test goes on; then
    /// [`stopped`](Self::stopped).
    pub fn terminate(&self) -> anyhow::Result<()> {
        if let Some(pid) = self.child.as_ref().and_then(Child::id) {
            kill(Pid::from_raw(i32::try_from(pid)?), Signal::SIGTERM)?;
        }
        Ok(())
    }

    /// Waits (bounded) for the process to exit after a SIGTERM, and checks it exited cleanly.
    pub async fn stopped(&mut self) -> anyhow::Result<()> {
        let Some(mut child) = self.child.take() else { return Ok(()) };
        match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("{} exited with {status}:\n{}", self.binary, self.log_tail(30));
                }
                Ok(())
            }
            Err(_) => bail!("{} did not stop within 30 s of SIGTERM", self.binary),
        }
    }

    /// Starts it again with the same flags (after [`AdminProcess::kill9`] or `stop`).
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        if self.child.is_some() {
            bail!("{} is still running", self.binary);
        }
        self.spawn().await
    }

    /// Starts it again on a new free port (after a kill), as a restarted container comes back
    /// on a new address: an executor then registers anew and its old address goes stale.
    pub async fn restart_elsewhere(&mut self) -> anyhow::Result<()> {
        let port = free_port()?;
        let listen = self.args.iter().position(|a| a == "--listen").context("no --listen flag")?;
        self.args[listen + 1] = format!("127.0.0.1:{port}");
        self.base = format!("http://127.0.0.1:{port}");
        self.restart().await
    }

    /// The last `lines` lines of its stderr.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Its whole stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many stderr lines so far contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().filter(|l| l.contains(needle)).count()
    }
}
