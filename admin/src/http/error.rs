//! [`ApiError`], the one error type of the admin's HTTP edge, and the middleware that logs the
//! internal errors it hides.
//!
//! Responses carry `{"code": <HTTP status>, "msg": "…"}` — the shape of upstream's xxl-tool
//! `Response` (whose codes 400/401/500 mean what the HTTP statuses mean) — so a client reads
//! one shape on every endpoint. Internal errors answer a generic message; the cause travels to
//! [`log_internal_errors`] in a response extension and is logged there with the request's
//! method and path, which the error itself does not know.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::engine::EngineError;
use crate::store::StoreError;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed; the message says how.
    #[error("{0}")]
    BadRequest(String),
    /// 401: missing or wrong access token.
    #[error("The access token is wrong.")]
    Unauthorized,
    /// 401 from the management API: not logged in, session expired, unknown API token.
    #[error("{0}")]
    Unauthenticated(String),
    /// 403: authenticated but not allowed; the message names the role or group needed.
    #[error("{0}")]
    Forbidden(String),
    /// 409: the request conflicts with stored data (e.g. deleting a group that has jobs).
    #[error("{0}")]
    Conflict(String),
    /// 413: the body is larger than the endpoint accepts.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 502: an executor the request needed failed or could not be reached.
    #[error("{0}")]
    BadGateway(String),
    /// 429: too many attempts; retry after this many seconds.
    #[error("too many failed logins; try again in {0} s")]
    TooManyRequests(u64),
    /// 404: the named thing does not exist; the message says which.
    #[error("{0}")]
    NotFound(String),
    /// 405.
    #[error("HTTP method not allowed here")]
    MethodNotAllowed,
    /// 500: a fault of the admin (database down, bug). Hidden from the client, logged.
    #[error("internal error; see the admin's log")]
    Internal(#[source] anyhow::Error),
}

impl ApiError {
    /// An internal error with its cause (logged, never shown to the client).
    pub fn internal(cause: impl Into<anyhow::Error>) -> Self {
        Self::Internal(cause.into())
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized | Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TooManyRequests(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::BadGateway(_) => StatusCode::BAD_GATEWAY,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::JobNotFound(_) | EngineError::LogNotFound(_) => Self::NotFound(e.to_string()),
            EngineError::Refused(msg) => Self::BadRequest(msg),
            EngineError::Executor { .. } => Self::BadGateway(e.to_string()),
            EngineError::Store(e) => Self::internal(e),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        Self::internal(e)
    }
}

/// The body of every error response.
#[derive(serde::Serialize)]
struct ErrorBody {
    code: u16,
    msg: String,
}

/// The hidden cause of an [`ApiError::Internal`], handed to [`log_internal_errors`].
#[derive(Clone)]
struct InternalCause(Arc<anyhow::Error>);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody { code: status.as_u16(), msg: self.to_string() };
        let mut response = (status, axum::Json(body)).into_response();
        if let Self::TooManyRequests(seconds) = self {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        if let Self::Internal(cause) = self {
            response.extensions_mut().insert(InternalCause(Arc::new(cause)));
        }
        response
    }
}

/// Logs the cause of every internal error with the request that hit it.
pub async fn log_internal_errors(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let mut response = next.run(request).await;
    if let Some(InternalCause(cause)) = response.extensions_mut().remove::<InternalCause>() {
        tracing::error!(%method, %path, error = format!("{cause:#}"), "request failed");
    }
    response
}

/// The answer for paths no route matches.
pub(crate) async fn no_route(request: Request) -> ApiError {
    ApiError::NotFound(format!("no such path: {}", request.uri().path()))
}
