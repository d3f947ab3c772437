//! `GET /healthz` and `GET /readyz`, for service managers, load balancers and container
//! probes: no credentials, no data beyond which check failed.
//!
//! `/healthz` answers while the process serves HTTP. `/readyz` answers 200 only when the
//! database answers a read of upstream's lock table within [`PING_TIMEOUT`] and the core's
//! background work runs (the schedule thread began a pass recently, whether it schedules or
//! stands by for another admin); otherwise 503 with each check's verdict. A failed database
//! check says so in fixed words and logs the error: driver messages can name hosts and users.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use super::OpsState;

/// How long the readiness probe waits for the database.
const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// `/healthz`'s answer.
#[derive(Serialize)]
pub(crate) struct Up {
    status: &'static str,
}

/// `GET /healthz`.
pub(crate) async fn healthz() -> Json<Up> {
    Json(Up { status: "up" })
}

/// `/readyz`'s answer: `ok` or the reason, per check.
#[derive(Serialize)]
pub(crate) struct Readiness {
    status: &'static str,
    checks: Checks,
}

#[derive(Serialize)]
struct Checks {
    database: String,
    scheduler: String,
}

/// `GET /readyz`.
pub(crate) async fn readyz(State(state): State<Arc<OpsState>>) -> (StatusCode, Json<Readiness>) {
    let database = match tokio::time::timeout(PING_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database read failed");
            Err("the database read failed (see the admin's log)".to_owned())
        }
        Err(_) => Err(format!("the database did not answer within {} s", PING_TIMEOUT.as_secs())),
    };
    let scheduler = state.core.readiness();
    let ready = database.is_ok() && scheduler.is_ok();
    let verdict = |check: Result<(), String>| check.err().unwrap_or_else(|| "ok".to_owned());
    let body = Readiness {
        status: if ready { "ready" } else { "not ready" },
        checks: Checks { database: verdict(database), scheduler: verdict(scheduler) },
    };
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(body))
}
