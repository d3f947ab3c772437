//! Dial-out mode (`--dial-out`, docs/executor.md): the executor serves no executor API; it
//! keeps a WebSocket open to **each** admin it is given (`GET {admin}/api/dial`) and answers
//! the calls that arrive on it — `/run`, `/kill`, `/log`, `/beat`, `/idleBeat`, … — with the
//! same dispatch an HTTP request goes through (`server.rs`), token and AppName checks included.
//! Each admin fires through its own socket, so whichever admin fires reaches this executor.
//!
//! A socket that closes, errs or goes silent is dialled again with backoff (0.5 s doubling to
//! 30 s, with jitter so a fleet does not reconnect in step). Calls run concurrently; their
//! answers share the socket through one writer. tokio-tungstenite is the WebSocket stack: the
//! one axum serves on the admin's side, with rustls for `wss://` admins.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request};
use futures_util::{SinkExt as _, StreamExt as _};
use jobwheel_protocol::dial::{
    DIAL_ADDRESS_HEADER, DIAL_KEY_HEADER, DIAL_PATH, DialAnswer, DialCall, decode, encode,
};
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER, RUN_BATCH_HEADER};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::{ApiState, MAX_BODY_BYTES, serve_call};

/// First wait before dialling an admin again; doubled after each failure.
const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one attempt may take (TCP, TLS, upgrade).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an idle socket is pinged.
const PING_EVERY: Duration = Duration::from_secs(15);
/// A socket that brought nothing (not even a pong) for this long is dialled again.
const SILENT_LIMIT: Duration = Duration::from_secs(45);
/// Largest message taken from an admin: a `/runBatch` body is at most 5 MiB.
const MAX_MESSAGE_BYTES: usize = MAX_BODY_BYTES + 64 * 1024;
/// Answers waiting for the writer.
const ANSWER_QUEUE: usize = 1024;

/// Who this executor is on its sockets.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// The access token (global or its group's).
    pub(crate) access_token: Option<String>,
    /// Its AppName.
    pub(crate) app_name: String,
    /// The `dial://{app}/{instance}` address it registers.
    pub(crate) address: String,
    /// This process's random key, sent on every socket: the admin lets a new socket of the same
    /// process replace one it still holds (after a break it has not noticed yet).
    pub(crate) key: String,
}

/// Keeps one socket open to each of `admins` until `stop` is cancelled.
pub(crate) fn spawn(
    tracker: &TaskTracker,
    admins: &[String],
    identity: &Identity,
    state: &Arc<ApiState>,
    stop: &CancellationToken,
) {
    for admin in admins {
        let url = dial_url(admin);
        tracker.spawn(keep_dialling(url, identity.clone(), Arc::clone(state), stop.clone()));
    }
}

/// A random key for this process's sockets: 128 bits from the kernel's generator, hex.
pub(crate) fn random_key() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(hex::encode(bytes))
}

/// `ws(s)://…/api/dial` of an admin base address (`http(s)://host[:port][/context]`).
fn dial_url(admin: &str) -> String {
    let base = admin.trim_end_matches('/');
    let base = match base.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some((_, rest)) => format!("ws://{rest}"),
        None => format!("ws://{base}"),
    };
    format!("{base}{DIAL_PATH}")
}

async fn keep_dialling(url: String, identity: Identity, state: Arc<ApiState>, stop: CancellationToken) {
    let mut backoff = MIN_BACKOFF;
    let mut failures = 0u32;
    while !stop.is_cancelled() {
        match tokio::time::timeout(CONNECT_TIMEOUT, dial(&url, &identity)).await {
            Ok(Ok(socket)) => {
                tracing::info!(admin = %url, address = %identity.address, "dialled out to the admin");
                backoff = MIN_BACKOFF;
                failures = 0;
                let open = state.dialled.clone().unwrap_or_default();
                open.fetch_add(1, Ordering::Relaxed);
                let why = serve(socket, &state, &stop).await;
                open.fetch_sub(1, Ordering::Relaxed);
                if !stop.is_cancelled() {
                    tracing::warn!(admin = %url, %why, "the admin's socket ended; dialling again");
                }
            }
            Ok(Err(error)) => {
                failures += 1;
                // Every failure while few, then one in ten: an admin down for hours is not a
                // log line every 30 s forever.
                if failures <= 3 || failures.is_multiple_of(10) {
                    tracing::warn!(admin = %url, %error, failures, "cannot dial out to the admin");
                }
            }
            Err(_) => {
                failures += 1;
                tracing::warn!(admin = %url, failures, "dialling out to the admin timed out");
            }
        }
        let jittered = backoff.mul_f64(0.5 + rand_fraction() / 2.0);
        tokio::select! {
            () = tokio::time::sleep(jittered) => {}
            () = stop.cancelled() => break,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// A fraction in [0, 1) from the clock's nanoseconds: jitter, not security.
fn rand_fraction() -> f64 {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    f64::from(nanos % 1000) / 1000.0
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn dial(url: &str, identity: &Identity) -> Result<Socket, String> {
    let mut request = url.into_client_request().map_err(|e| e.to_string())?;
    let headers = request.headers_mut();
    let value = |v: &str| HeaderValue::from_str(v).map_err(|e| e.to_string());
    if let Some(token) = &identity.access_token {
        headers.insert(ACCESS_TOKEN_HEADER, value(token)?);
    }
    headers.insert(APPNAME_HEADER, value(&identity.app_name)?);
    headers.insert(DIAL_ADDRESS_HEADER, value(&identity.address)?);
    headers.insert(DIAL_KEY_HEADER, value(&identity.key)?);
    let config = WebSocketConfig::default().max_message_size(Some(MAX_MESSAGE_BYTES));
    match tokio_tungstenite::connect_async_with_config(request, Some(config), true).await {
        Ok((socket, _)) => Ok(socket),
        // The admin's reason for a refusal is in the body of its HTTP answer.
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            Err(format!("the admin answered {}: {}", response.status(), body.trim()))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Answers the calls arriving on `socket` until it ends; why it ended.
async fn serve(socket: Socket, state: &Arc<ApiState>, stop: &CancellationToken) -> String {
    let (mut sink, mut stream) = socket.split();
    let (answers, mut to_write) = mpsc::channel::<Message>(ANSWER_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(message) = to_write.recv().await {
            if sink.send(message).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard = tokio::time::Instant::now();
    let why = loop {
        tokio::select! {
            message = stream.next() => {
                heard = tokio::time::Instant::now();
                match message {
                    Some(Ok(Message::Binary(bytes))) => {
                        let (state, answers) = (Arc::clone(state), answers.clone());
                        tokio::spawn(async move {
                            if let Some(answer) = answer(&state, &bytes).await {
                                let _ = answers.send(Message::Binary(answer.into())).await;
                            }
                        });
                    }
                    Some(Ok(Message::Close(_))) | None => break "closed by the admin".to_owned(),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => break e.to_string(),
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > SILENT_LIMIT {
                    break format!("nothing heard for {} s", SILENT_LIMIT.as_secs());
                }
                if answers.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break "the writer stopped".to_owned();
                }
            }
            () = stop.cancelled() => break "stopping".to_owned(),
        }
    };
    drop(answers);
    writer.abort();
    why
}

/// The answer to one call: what the executor API answers the same request over HTTP. `None`
/// for a message that is not a call (dropped; the admin's call times out).
async fn answer(state: &Arc<ApiState>, message: &[u8]) -> Option<Vec<u8>> {
    let (call, body): (DialCall, &[u8]) = match decode(message) {
        Ok(decoded) => decoded,
        Err(e) => {
            tracing::warn!(error = %e, "ignored a message from the admin that is not a call");
            return None;
        }
    };
    let path = format!("{}/{}", state.path_prefix, call.method);
    let mut request = Request::builder().method(Method::POST).uri(path);
    if let Some(token) = &call.token {
        request = request.header(ACCESS_TOKEN_HEADER, token);
    }
    if let Some(app_name) = &call.app_name {
        request = request.header(APPNAME_HEADER, app_name);
    }
    let request = request.body(Body::from(body.to_vec())).ok()?;
    let response = serve_call(Arc::clone(state), request).await;
    let status = response.status().as_u16();
    let run_batch = response.headers().get(RUN_BATCH_HEADER).is_some_and(|v| v.as_bytes() == b"1");
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.ok()?;
    Some(encode(&DialAnswer { id: call.id, status, run_batch }, &bytes))
}

#[cfg(test)]
mod tests {
    use super::dial_url;

    #[test]
    fn an_admin_address_becomes_its_dial_url() {
        assert_eq!(dial_url("http://127.0.0.1:8080"), "ws://127.0.0.1:8080/api/dial");
        assert_eq!(
            dial_url("https://jobs.example/xxl-job-admin/"),
            "wss://jobs.example/xxl-job-admin/api/dial"
        );
    }
}
