//! `POST /api/logShip`: job log lines an executor running with `--job-logs both|admin` ships
//! (`jobwheel_protocol::log_ship`; stored by `job_logs::ingest`). It authenticates as a
//! callback does — the global token, or a group's own token with `XXL-JOB-APPNAME` — and
//! pieces of logs outside the caller's groups are dropped and counted, as foreign results are.
//!
//! Plain HTTP statuses (the caller is a jobwheel executor): 200 stored (with what was dropped),
//! 400 for a body that is not a gzip log batch and 413 for one over the limits — both refusals
//! the executor drops rather than resends, since every admin would refuse them too — 401 for a
//! wrong token (429 once the throttle blocks the client), 503 when the database fails (the
//! executor keeps the batch and sends it again).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use jobwheel_protocol::log_ship::{MAX_SHIP_BODY, ShipDecodeError, decode};
use serde_json::json;

use super::auth::{admit, report_groups};
use crate::http::ExecutorApiState;

/// `POST /api/logShip`.
pub(crate) async fn ship(State(state): State<Arc<ExecutorApiState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let caller = match admit(&state, &parts).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let gzip = parts
        .headers
        .get(axum::http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"));
    if !gzip {
        return refuse(
            StatusCode::BAD_REQUEST,
            "send the log batch gzip-compressed with Content-Encoding: gzip",
        );
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_SHIP_BODY).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("a log batch is at most {MAX_SHIP_BODY} bytes compressed"),
        );
    };
    // Inflating is CPU work bounded by the limit: off the async threads.
    let batch = match tokio::task::spawn_blocking(move || decode(&body)).await {
        Ok(Ok(batch)) => batch,
        Ok(Err(error @ ShipDecodeError::TooLarge)) => {
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, &error.to_string());
        }
        Ok(Err(error)) => return refuse(StatusCode::BAD_REQUEST, &error.to_string()),
        Err(_) => {
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "the batch could not be read; send it again");
        }
    };
    let allowed = match report_groups(&state, &caller).await {
        Ok(allowed) => allowed,
        Err(error) => return not_stored(&error),
    };
    match crate::job_logs::ingest(state.store.as_ref(), batch, allowed.as_ref()).await {
        Ok(done) => {
            if done.foreign > 0 {
                tracing::warn!(
                    foreign = done.foreign,
                    "ignored shipped log lines of logs outside the caller's groups"
                );
            }
            state.metrics.log_pieces_stored(done.stored);
            Json(json!({
                "code": 200,
                "stored": done.stored,
                "foreign": done.foreign,
                "capped": done.capped,
            }))
            .into_response()
        }
        Err(error) => not_stored(&error),
    }
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, Json(json!({ "code": status.as_u16(), "msg": why }))).into_response()
}

fn not_stored(error: &crate::store::StoreError) -> Response {
    tracing::error!(%error, "cannot store shipped log lines");
    refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        "the log lines could not be stored (database error); send them again",
    )
}
