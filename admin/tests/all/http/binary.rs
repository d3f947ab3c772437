//! The `jobwheel-admin` binary: secrets printed on the first start only, exit code 64 on bad
//! configuration, no transparent huge pages, the runtime's workers.

use std::path::Path;
use std::process::Stdio;

use anyhow::Context as _;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::Command;

use crate::http::PATIENCE;

fn admin_command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jobwheel-admin"));
    command
        .args(["--listen", "127.0.0.1:0", "--database-url", &crate::http::sqlite_url(dir)])
        .env("RUST_LOG", "info")
        .env_remove("JOBWHEEL_ACCESS_TOKEN")
        .env_remove("JOBWHEEL_DATA_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Starts `command`'s admin and collects its stderr until it reports being started; the
/// running child and what it printed.
async fn start(mut command: Command) -> anyhow::Result<(tokio::process::Child, String)> {
    let mut child = command.spawn()?;
    let stderr = child.stderr.take().context("stderr is piped")?;
    let mut lines = BufReader::new(stderr).lines();
    let mut output = String::new();
    let started = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await? {
            output.push_str(&line);
            output.push('\n');
            if line.contains("jobwheel admin started") {
                return Ok(true);
            }
        }
        anyhow::Ok(false)
    })
    .await;
    if !matches!(started, Ok(Ok(true))) {
        child.kill().await?;
        anyhow::bail!("the admin did not start; stderr:\n{output}");
    }
    Ok((child, output))
}

/// Starts the binary, collects its stderr until it reports being started, and stops it.
async fn output_until_started(dir: &Path) -> anyhow::Result<String> {
    let (mut child, output) = start(admin_command(dir)).await?;
    child.kill().await?;
    Ok(output)
}

/// The `THP_enabled` line of a process's `/proc/<pid>/status`: 0 once it asked the kernel for
/// no transparent huge pages.
fn thp_enabled(pid: &str) -> anyhow::Result<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("THP_enabled:"))
        .map(|v| v.trim().to_owned())
        .context("the kernel reports THP_enabled")
}

#[tokio::test]
async fn the_admin_runs_without_transparent_huge_pages_unless_allowed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (mut child, _) = start(admin_command(dir.path())).await?;
    let pid = child.id().context("running")?.to_string();
    assert_eq!(thp_enabled(&pid)?, "0", "huge pages kept the admin's memory resident");
    child.kill().await?;

    // `MIMALLOC_ALLOW_THP` set: the process keeps what it inherited (this test's own setting).
    let mut command = admin_command(dir.path());
    command.env("MIMALLOC_ALLOW_THP", "1");
    let (mut child, _) = start(command).await?;
    let pid = child.id().context("running")?.to_string();
    assert_eq!(thp_enabled(&pid)?, thp_enabled("self")?);
    child.kill().await?;
    Ok(())
}

#[tokio::test]
async fn secrets_are_printed_on_the_first_start_only() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let first = output_until_started(dir.path()).await?;
    // With the default data directory the token lives beside the SQLite file.
    let token = std::fs::read_to_string(dir.path().join("db").join("access-token"))?.trim().to_owned();
    assert!(first.contains(&token), "the generated token is shown:\n{first}");
    let password = first
        .lines()
        .find_map(|l| l.trim().strip_prefix("password: "))
        .context("the generated password is shown")?
        .to_owned();
    assert_eq!(password.len(), 20);

    let second = output_until_started(dir.path()).await?;
    assert!(!second.contains(&token), "the token is not shown again:\n{second}");
    assert!(!second.contains(&password) && !second.contains("password:"), "{second}");
    assert!(second.contains("using the access token stored in a file"), "{second}");

    let store = jobwheel_admin::store::connect(&crate::http::sqlite_url(dir.path())).await?;
    let hash = store.find_user("admin").await?.context("admin exists")?.user.password;
    assert!(jobwheel_admin::secrets::verify_password(&password, &hash), "the printed password logs in");
    Ok(())
}

#[tokio::test]
async fn bad_configuration_exits_with_64() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for args in [
        &["--access-token", "   "][..],
        &["--executor-timeout", "0"],
        &["--smtp-host", "mail.example.invalid"],
        &["--alarm-webhook-url", "ftp://x"],
    ] {
        let output = admin_command(dir.path()).args(args).output().await?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains("configuration error"), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("db").exists(), "nothing is created before the configuration is valid");
    Ok(())
}

#[tokio::test]
async fn the_runtime_workers_are_a_flag_of_at_least_one() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // The default (one worker) is what every other test of the binary runs; more start too.
    let mut command = admin_command(dir.path());
    command.args(["--worker-threads", "3"]);
    let (mut child, _) = start(command).await?;
    child.kill().await?;

    let output = admin_command(dir.path()).args(["--worker-threads", "0"]).output().await?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "no runtime without a worker: {stderr}");
    assert!(stderr.contains("--worker-threads") && stderr.contains("1..=256"), "{stderr}");
    Ok(())
}
