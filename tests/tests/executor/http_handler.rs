//! `httpJobHandler` in the real daemon, from the attacker's side (security review M6): an
//! `HTTP_PROXY` in the executor's environment must see no request (a proxy would resolve the
//! name itself, around the address check), and an endless response must not be read whole.

use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use jobwheel_tests::{FakeAdmin, TOKEN};
use serde_json::json;
use tokio::process::Command;

use crate::daemon::{daemon, free_port};
use crate::support::SETTLE;

/// A loopback server answering every request with `body()`, counting the requests.
async fn serve(body: fn() -> Body) -> (u16, Arc<AtomicUsize>, tokio::sync::oneshot::Sender<()>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = Router::new().fallback(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { body() }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).with_graceful_shutdown(async { drop(stopped.await) }).await;
    });
    (port, hits, stop)
}

/// 64 KiB chunks, 4 GiB in all: far more than anyone should read.
struct Endless {
    left: usize,
}

impl http_body::Body for Endless {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from_static(&[b'x'; 64 * 1024])))))
    }
}

#[tokio::test]
async fn http_job_handler_uses_no_environment_proxy_and_reads_a_bounded_body() {
    let (proxy_port, proxy_hits, _proxy) = serve(|| Body::from("proxied")).await;
    let (target_port, target_hits, _target) = serve(|| Body::new(Endless { left: 65_536 })).await;
    let admin = FakeAdmin::start(Some(TOKEN)).await;
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let proxy = format!("http://127.0.0.1:{proxy_port}");
    let mut child = Command::new(daemon())
        .args(["--listen", &format!("127.0.0.1:{port}"), "--app-name", "http-test"])
        .args(["--admin-addresses", &admin.base_url(), "--http-handler-allow-private", "--log-path"])
        .arg(dir.path())
        .env("JOBWHEEL_ACCESS_TOKEN", TOKEN)
        .env("HTTP_PROXY", &proxy)
        .env("http_proxy", &proxy)
        .env("ALL_PROXY", &proxy)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    admin.wait_for(SETTLE, "the executor's registration", |r| !r.registry.is_empty()).await;

    let url = format!("http://localhost:{target_port}/big");
    let reply: serde_json::Value = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/run"))
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, TOKEN)
        .json(&jobwheel_tests::trigger(31, 310, "BEAN", "httpJobHandler", &url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["code"], json!(200), "{reply}");
    let result = admin.callback_for(310, SETTLE).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    assert_eq!(target_hits.load(Ordering::SeqCst), 1, "the target was called directly");
    assert_eq!(proxy_hits.load(Ordering::SeqCst), 0, "the environment's proxy saw nothing");

    // The 4 GiB body was not read: the executor's memory stayed small.
    let pid = child.id().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    assert!(rss_kib < 512 * 1024, "peak RSS {rss_kib} KiB");
    let text = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .find_map(|day| std::fs::read_to_string(day.path().join("310.log")).ok())
        .expect("the run's job log");
    assert!(text.contains("the rest was not read"), "{text}");
    child.kill().await.unwrap();
}
