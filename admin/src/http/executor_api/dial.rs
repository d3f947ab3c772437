//! `GET /api/dial`: a dial-out executor's WebSocket (`jobwheel_protocol::dial`,
//! docs/executor.md). It authenticates as `/api/registry` does — the global token, or its
//! group's own token with `XXL-JOB-APPNAME` — and names the address it registers in
//! `X-Jobwheel-Dial-Address`, which must be `dial://{its AppName}/{instance}`. The link is then
//! the way the engine's client reaches that address (`executor_client/dial.rs`); this file only
//! pumps messages between the socket and the link.
//!
//! Refusals are plain HTTP statuses before the upgrade (the caller is a jobwheel executor, not
//! an upstream peer): 401 for a wrong token (counted by the wrong-token throttle, 429 once
//! blocked), 400 for a missing or foreign address, 409 while another socket holds the address
//! (unless it is the same process's, by its dial key: it replaces its stale socket).

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::APPNAME_HEADER;
use jobwheel_protocol::dial::{DIAL_ADDRESS_HEADER, DIAL_KEY_HEADER, dial_app};
use tokio::sync::mpsc;

use super::auth::{Caller, admit};
use crate::clock::Clock;
use crate::executor_client::DialLink;
use crate::http::ExecutorApiState;

/// Largest message read from an executor: a `/log` page is at most 8 MiB.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// How often the admin pings an idle socket.
const PING_EVERY: Duration = Duration::from_secs(15);
/// A socket that sent nothing (not even a pong) for this long is closed as dead.
const SILENT_LIMIT: Duration = Duration::from_secs(45);

/// `GET /api/dial`.
pub(crate) async fn connect(State(state): State<Arc<ExecutorApiState>>, request: Request) -> Response {
    let (mut parts, _) = request.into_parts();
    let caller = match admit(&state, &parts).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let app_name = header(APPNAME_HEADER).unwrap_or_default().to_owned();
    let address = header(DIAL_ADDRESS_HEADER).unwrap_or_default().to_owned();
    let key = header(DIAL_KEY_HEADER).unwrap_or_default().to_owned();
    if let Err(why) = own_address(&state, &caller, &app_name, &address).await {
        return (StatusCode::BAD_REQUEST, why).into_response();
    }
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    let (link, outgoing) = match state.dial.attach(&address, &key) {
        Ok(attached) => attached,
        Err(taken) => return (StatusCode::CONFLICT, taken.to_string()).into_response(),
    };
    let hub = Arc::clone(&state.dial);
    let refresh = Arc::clone(&state.core);
    let clock = Arc::clone(&state.clock);
    upgrade.max_message_size(MAX_MESSAGE_BYTES).on_upgrade(move |socket| async move {
        tracing::info!(app = %app_name, %address, "dial-out executor connected");
        // Its group's addresses may now include it; it registers over HTTP as well.
        refresh.refresh_group(&app_name).await;
        pump(socket, &link, outgoing, clock.as_ref()).await;
        hub.detach(&address, &link);
        tracing::info!(app = %app_name, %address, "dial-out executor disconnected");
    })
}

/// The address must be a dial address of the caller's AppName, which a group token proves and
/// the global token may claim for any group without a token of its own (as `/api/registry`).
async fn own_address(
    state: &ExecutorApiState,
    caller: &Caller,
    app_name: &str,
    address: &str,
) -> Result<(), String> {
    if app_name.is_empty() {
        return Err(format!("send the executor's AppName in {APPNAME_HEADER}"));
    }
    if dial_app(address) != Some(app_name) {
        return Err(format!(
            "{DIAL_ADDRESS_HEADER} must be dial://{app_name}/<instance> (1 to 64 letters, digits, - or _), not {address:?}"
        ));
    }
    match caller {
        Caller::Group(group) if group.app_name == app_name => Ok(()),
        Caller::Group(group) => Err(format!("the access token is {}'s, not {app_name}'s", group.app_name)),
        Caller::Global => match state.group_tokens.by_app(app_name).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => Err(format!(
                "executor group {app_name} has its own access token: connect with that token; the global token is refused for it"
            )),
            Err(error) => {
                tracing::error!(%error, "cannot read the groups' access tokens");
                Err("the access token could not be checked (database error)".to_owned())
            }
        },
    }
}

/// Writes the link's calls to the socket and hands its answers to the link, until the socket
/// closes, goes silent for [`SILENT_LIMIT`], sends something that is not an answer, or the link
/// is closed (the admin stopping).
async fn pump(
    mut socket: WebSocket,
    link: &DialLink,
    mut outgoing: mpsc::Receiver<Vec<u8>>,
    clock: &dyn Clock,
) {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut heard = clock.instant();
    loop {
        tokio::select! {
            call = outgoing.recv() => {
                let Some(call) = call else { break };
                if socket.send(Message::Binary(call.into())).await.is_err() {
                    break;
                }
            }
            message = socket.recv() => {
                heard = clock.instant();
                match message {
                    Some(Ok(Message::Binary(bytes))) => {
                        if let Err(why) = link.answer(&bytes) {
                            tracing::warn!(%why, "closing a dial-out socket that sent something else than an answer");
                            break;
                        }
                    }
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                    Some(Ok(Message::Text(_))) => {
                        tracing::warn!("closing a dial-out socket that sent a text message");
                        break;
                    }
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                }
            }
            _ = ping.tick() => {
                if clock.instant().saturating_duration_since(heard) > SILENT_LIMIT || socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
            () = link.closed() => break,
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}
