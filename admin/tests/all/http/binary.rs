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

/// A listener that counts connections and answers each with `reply`; its address.
async fn counting_listener(
    reply: String,
) -> anyhow::Result<(String, std::sync::Arc<std::sync::atomic::AtomicUsize>)> {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    // Ends with the test's runtime.
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = tokio::io::AsyncReadExt::read(&mut socket, &mut request).await;
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    Ok((address, count))
}

/// Review N7 and L2, as an operator runs the binary: with `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`
/// set in its environment, an alarm channel's test message goes straight to the receiver — the
/// proxy sees no connection — and the receiver's redirect is not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alarm_requests_use_no_proxy_and_follow_no_redirect() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let (proxy, proxied) =
        counting_listener("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n".into()).await?;
    let (target, redirected) =
        counting_listener("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".into()).await?;
    let (receiver, received) = counting_listener(format!(
        "HTTP/1.1 302 Found\r\nLocation: http://{target}/elsewhere\r\nContent-Length: 0\r\n\r\n"
    ))
    .await?;
    let mut command = admin_command(dir.path());
    command.args(["--alarm-allow-private", "127.0.0.0/8", "--access-token", "proxy-test-token-0123456789"]);
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"] {
        command.env(var, format!("http://{proxy}"));
    }
    command.env_remove("NO_PROXY").env_remove("no_proxy");
    // Its stderr is read to the end, so the admin never waits on a full pipe.
    let mut child = command.spawn()?;
    let mut lines = BufReader::new(child.stderr.take().context("stderr is piped")?).lines();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<String>();
    tokio::spawn(async move {
        let mut output = String::new();
        let mut started = Some(started_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            output.push_str(&line);
            output.push('\n');
            if line.contains("jobwheel admin started")
                && let Some(tx) = started.take()
            {
                let _ = tx.send(output.clone());
            }
        }
    });
    let output = tokio::time::timeout(PATIENCE, started_rx).await.context("the admin did not start")??;
    let password = output
        .lines()
        .find_map(|l| l.trim().strip_prefix("password: "))
        .context("the generated password is shown")?
        .to_owned();
    let local = output
        .lines()
        .find(|l| l.contains("jobwheel admin started"))
        .and_then(|l| l.split("local=").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or_default().to_owned())
        .context("the listening address")?;
    let base = format!("http://{local}");
    // The test's own client must not use the proxy either.
    let http = reqwest::Client::builder().no_proxy().build()?;
    let login = http
        .post(format!("{base}/api/v1/session"))
        .json(&serde_json::json!({"username": "admin", "password": password}))
        .send()
        .await?;
    let cookie = login
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .context("the session cookie")?
        .to_owned();
    let session: serde_json::Value = login.json().await?;
    let csrf = session["csrfToken"].as_str().context("csrf token")?.to_owned();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("cookie", cookie.parse()?);
    headers.insert("x-csrf-token", csrf.parse()?);
    let http = reqwest::Client::builder().no_proxy().default_headers(headers).build()?;
    let created: serde_json::Value = http
        .post(format!("{base}/api/v1/alarm-channels"))
        .json(
            &serde_json::json!({"name": "hook", "kind": "webhook", "url": format!("http://{receiver}/hook")}),
        )
        .send()
        .await?
        .json()
        .await?;
    let id = created["id"].as_i64().with_context(|| format!("channel created: {created}"))?;
    let queued = http.post(format!("{base}/api/v1/alarm-channels/{id}/test")).send().await?;
    assert_eq!(queued.status(), 202);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let answer_code = loop {
        let log: serde_json::Value =
            http.get(format!("{base}/api/v1/alarm-deliveries?channel={id}")).send().await?.json().await?;
        if let Some(code) =
            log["items"].as_array().and_then(|i| i.first()).and_then(|d| d["answerCode"].as_i64())
            && code != 0
        {
            break code;
        }
        assert!(tokio::time::Instant::now() < deadline, "no attempt in the delivery log: {log}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    child.kill().await?;
    let count = |c: &std::sync::atomic::AtomicUsize| c.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(answer_code, 302, "the redirect is the answer, not followed");
    assert!(count(&received) >= 1, "the receiver was reached directly");
    assert_eq!(count(&proxied), 0, "the proxy from the environment saw nothing");
    assert_eq!(count(&redirected), 0, "the redirect's target saw nothing");
    Ok(())
}
