//! A loopback stand-in for an executor that is not jobwheel's (upstream's Java executor, a
//! 3.5-style one): it answers every request `{"code":200}` and keeps what it was sent, with the
//! credentials it came with, so a test can compare the admin's requests with upstream's.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One request the executor received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    /// Its path: `/run` (2.x–3.4) or `/trigger` (3.5), `/beat`, `/kill`, …
    pub(crate) path: String,
    /// `XXL-JOB-ACCESS-TOKEN`, if sent.
    pub(crate) token: Option<String>,
    /// `XXL-JOB-APPNAME` (3.5's protocol), if sent.
    pub(crate) appname: Option<String>,
    /// The JSON body (`Null` when there was none).
    pub(crate) body: Value,
}

type Log = Arc<Mutex<Vec<Received>>>;

/// The running stand-in; stops when dropped.
pub(crate) struct RecordingExecutor {
    /// Its base address, `http://127.0.0.1:port/`.
    pub(crate) address: String,
    received: Log,
    _stop: oneshot::Sender<()>,
}

impl RecordingExecutor {
    pub(crate) async fn start() -> Self {
        let received: Log = Arc::default();
        let app = Router::new()
            .fallback(|State(log): State<Log>, uri: Uri, headers: HeaderMap, body: String| async move {
                let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
                log.lock().expect("lock").push(Received {
                    path: uri.path().to_owned(),
                    token: header("XXL-JOB-ACCESS-TOKEN"),
                    appname: header("XXL-JOB-APPNAME"),
                    body: serde_json::from_str(&body).unwrap_or(Value::Null),
                });
                axum::Json(json!({"code": 200}))
            })
            .with_state(Arc::clone(&received));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = format!("http://{}/", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(async { drop(stopped.await) }).await;
        });
        Self { address, received, _stop: stop }
    }

    /// The triggers it received (`/run` or `/trigger`), oldest first.
    pub(crate) fn runs(&self) -> Vec<Received> {
        let received = self.received.lock().expect("lock");
        received.iter().filter(|r| r.path == "/run" || r.path == "/trigger").cloned().collect()
    }
}
