//! The `.deb` packages (docs/deployment.md), installed for real: `dpkg -i` both, check the
//! installed units with `systemd-analyze verify` (no warnings) and `systemd-analyze security`
//! (exposure "OK"), then start what each unit would start — its `ExecStart` with its
//! `EnvironmentFile`, state paths moved into a temporary directory (systemd, which would create
//! them, is not PID 1 here) and free ports — and wait for both `/readyz`; finally purge both.
//!
//! `scripts/test.sh` builds the packages with `cargo deb` into `JOBWHEEL_DEBS`. The test needs
//! root, as `dpkg -i` does.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail, ensure};
use jobwheel_tests::cluster::free_port;

const PACKAGES: [&str; 2] = ["jobwheel-admin", "jobwheel-executor"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_packages_install_and_start_what_their_units_start() -> anyhow::Result<()> {
    let debs = std::env::var("JOBWHEEL_DEBS")
        .context("JOBWHEEL_DEBS is not set (scripts/test.sh builds the packages)")?;
    let mut files = Vec::new();
    for package in PACKAGES {
        let found = std::fs::read_dir(&debs)?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{package}_")) && n.ends_with(".deb"))
            })
            .with_context(|| format!("no {package} package in {debs}"))?;
        files.push(found);
    }
    run(
        "dpkg",
        &[&["-i"], &files.iter().map(|f| f.to_str().unwrap_or_default()).collect::<Vec<_>>()[..]].concat(),
    )
    .await?;
    let outcome = installed().await;
    run("dpkg", &["--purge", PACKAGES[0], PACKAGES[1]]).await?;
    ensure!(!Path::new("/usr/bin/jobwheel-admin").exists(), "purge left the binary");
    outcome
}

async fn installed() -> anyhow::Result<()> {
    let units: Vec<String> =
        PACKAGES.iter().map(|p| format!("/usr/lib/systemd/system/{p}.service")).collect();
    for unit in &units {
        let verify = output("systemd-analyze", &["verify", unit]).await?;
        ensure!(verify.is_empty(), "systemd-analyze verify {unit}: {verify}");
        let security = output("systemd-analyze", &["security", "--offline=yes", unit]).await?;
        let verdict = security.lines().find(|l| l.contains("Overall exposure level")).unwrap_or_default();
        ensure!(verdict.contains(" OK"), "{unit} is exposed: {verdict}");
    }
    let state = tempfile::tempdir()?;
    let admin_port = free_port()?;
    let admin_env = unit_environment(&units[0], state.path(), &format!("127.0.0.1:{admin_port}"))?;
    let admin_data = admin_env.get("JOBWHEEL_DATA_DIR").context("admin.env sets the data dir")?.clone();
    let mut admin = start(&units[0], &admin_env, state.path(), "admin")?;
    let admin_base = format!("http://127.0.0.1:{admin_port}");
    ready(&format!("{admin_base}/readyz"), &mut admin).await?;

    // The operator's step: the admin's generated token goes into executor.env.
    let token = std::fs::read_to_string(Path::new(&admin_data).join("access-token"))?;
    let executor_port = free_port()?;
    let mut executor_env = unit_environment(&units[1], state.path(), &format!("127.0.0.1:{executor_port}"))?;
    executor_env.insert("JOBWHEEL_ACCESS_TOKEN".to_owned(), token.trim().to_owned());
    executor_env.insert("JOBWHEEL_ADMIN_ADDRESSES".to_owned(), format!("{admin_base}/"));
    let mut executor = start(&units[1], &executor_env, state.path(), "executor")?;
    ready(&format!("http://127.0.0.1:{executor_port}/readyz"), &mut executor).await
}

/// The unit's `EnvironmentFile`, read as systemd reads it, with `/var/lib/jobwheel` moved to
/// `state` and the listen address replaced.
fn unit_environment(unit: &str, state: &Path, listen: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let unit_text = std::fs::read_to_string(unit)?;
    let file = directive(&unit_text, "EnvironmentFile")?;
    let mut env = BTreeMap::new();
    for line in std::fs::read_to_string(file.trim_start_matches('-'))?.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) =
            line.split_once('=').with_context(|| format!("{file}: not VARIABLE=value: {line}"))?;
        let value = value.replace("/var/lib/jobwheel", &state.display().to_string());
        env.insert(key.to_owned(), value);
    }
    // What systemd would create before the start: the unit's StateDirectory (below
    // /var/lib), here below `state`.
    let state_dir = directive(&unit_text, "StateDirectory")?;
    let relative =
        state_dir.strip_prefix("jobwheel/").with_context(|| format!("StateDirectory={state_dir}"))?;
    std::fs::create_dir_all(state.join(relative))?;
    env.insert("JOBWHEEL_LISTEN".to_owned(), listen.to_owned());
    Ok(env)
}

fn directive<'a>(unit: &'a str, name: &str) -> anyhow::Result<&'a str> {
    unit.lines()
        .find_map(|line| line.strip_prefix(&format!("{name}=")))
        .with_context(|| format!("the unit has no {name}="))
}

/// A started daemon and the file its stderr goes to.
struct Started {
    child: tokio::process::Child,
    log: std::path::PathBuf,
}

/// Starts the unit's `ExecStart` with exactly `env` (systemd passes no other environment).
fn start(unit: &str, env: &BTreeMap<String, String>, cwd: &Path, name: &str) -> anyhow::Result<Started> {
    let unit_text = std::fs::read_to_string(unit)?;
    let exec = directive(&unit_text, "ExecStart")?;
    let mut words = exec.split_whitespace();
    let program = words.next().context("an empty ExecStart")?;
    let log = cwd.join(format!("{name}.log"));
    let child = tokio::process::Command::new(program)
        .args(words)
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {program}"))?;
    Ok(Started { child, log })
}

async fn ready(url: &str, started: &mut Started) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = reqwest::get(url).await
            && response.status() == 200
        {
            return Ok(());
        }
        let log = || std::fs::read_to_string(&started.log).unwrap_or_default();
        if let Some(status) = started.child.try_wait()? {
            bail!("exited with {status} before {url} answered 200:\n{}", log());
        }
        if tokio::time::Instant::now() > deadline {
            bail!("{url} did not answer 200 within 30 s:\n{}", log());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = tokio::process::Command::new(program).args(args).output().await?;
    ensure!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// What the command wrote to stdout and stderr; an error if it failed.
async fn output(program: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(program).args(args).output().await?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    ensure!(out.status.success(), "{program} {args:?}: {}\n{text}", out.status);
    Ok(text)
}
