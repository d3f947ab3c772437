//! `httpJobHandler` in the real daemon, from the attacker's side (security review M6): an
//! `HTTP_PROXY` in the executor's environment must see no request (a proxy would resolve the
//! name itself, around the address check), and an endless response must not be read whole.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use serde_json::json;

use crate::daemon::DaemonRig;
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
    let proxy = format!("http://127.0.0.1:{proxy_port}");
    // Every spelling a client might honour, and no exemption list.
    let proxies = [
        ("HTTP_PROXY", proxy.as_str()),
        ("http_proxy", proxy.as_str()),
        ("ALL_PROXY", proxy.as_str()),
        ("NO_PROXY", ""),
        ("no_proxy", ""),
    ];
    let rig = DaemonRig::start("http-test", &["--http-handler-allow-private"], &proxies).await;

    let url = format!("http://localhost:{target_port}/big");
    let reply = rig.post("/run", jobwheel_tests::trigger(31, 310, "BEAN", "httpJobHandler", &url)).await;
    assert_eq!(reply["code"], json!(200), "{reply}");
    let result = rig.admin.callback_for(310, SETTLE).await;
    assert_eq!(result.handle_code, 200, "{}", result.handle_msg);
    assert_eq!(target_hits.load(Ordering::SeqCst), 1, "the target was called directly");
    assert_eq!(proxy_hits.load(Ordering::SeqCst), 0, "the environment's proxy saw nothing");

    // The 4 GiB body was not read: the executor's memory stayed small.
    let rss_kib = rig.peak_rss_kib();
    assert!(rss_kib < 512 * 1024, "peak RSS {rss_kib} KiB");
    let text = std::fs::read_dir(rig.dir.path())
        .unwrap()
        .flatten()
        .find_map(|day| std::fs::read_to_string(day.path().join("310.log")).ok())
        .expect("the run's job log");
    assert!(text.contains("the rest was not read"), "{text}");
}
