//! Stopping and starting this machine's PostgreSQL cluster (Debian's `pg_ctlcluster`, as
//! `scripts/test.sh` starts it), for the chaos suite's database outage. Cargo runs test
//! binaries one at a time and this binary has one test, so no other suite sees the outage.

use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use tokio::process::Command;

/// The cluster's version directory under `/etc/postgresql` (e.g. `15`).
fn version() -> anyhow::Result<String> {
    let mut versions: Vec<String> = std::fs::read_dir("/etc/postgresql")
        .context("the chaos suite stops PostgreSQL with pg_ctlcluster; /etc/postgresql is missing")?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .collect();
    versions.sort();
    versions.pop().context("no cluster under /etc/postgresql")
}

async fn ctl(action: &str, extra: &[&str]) -> anyhow::Result<()> {
    let status = Command::new("pg_ctlcluster")
        .args(["--skip-systemctl-redirect", &version()?, "main", action])
        .args(extra)
        .status()
        .await
        .with_context(|| format!("running pg_ctlcluster {action}"))?;
    ensure!(status.success(), "pg_ctlcluster {action} failed: {status}");
    Ok(())
}

async fn is_ready() -> bool {
    Command::new("pg_isready")
        .args(["-q", "-h", "127.0.0.1", "-p", "5432"])
        .status()
        .await
        .is_ok_and(|status| status.success())
}

/// Stops the server at once (`-m fast`: every connection is cut, as in a crash of the host).
pub(crate) async fn stop() -> anyhow::Result<()> {
    ctl("stop", &["-m", "fast"]).await
}

/// Starts the server and waits until it accepts connections.
pub(crate) async fn start() -> anyhow::Result<()> {
    ctl("start", &[]).await?;
    wait_ready().await
}

/// Starts the server if it is down (after a failure midway through the suite).
pub async fn ensure_up() -> anyhow::Result<()> {
    if is_ready().await { Ok(()) } else { start().await }
}

async fn wait_ready() -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !is_ready().await {
        if tokio::time::Instant::now() > deadline {
            bail!("PostgreSQL did not accept connections within 30 s of its start");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
