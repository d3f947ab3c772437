//! [`Api`]: the management API called in-process with the MCP caller's own token, so each tool
//! gets exactly the route's authorization, scope check, validation and audit record.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, header};
use serde_json::Value;
use tower::ServiceExt as _;

use crate::http::mgmt::auth::AgentToken;

/// The management API's router.
#[derive(Clone)]
pub(crate) struct Api {
    router: Router,
}

/// An answer: its status and JSON body (`{"code","msg"}` for errors).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

impl Answer {
    /// The body on success; the API's message otherwise.
    pub(crate) fn ok(self) -> Result<Value, String> {
        if (200..300).contains(&self.status) {
            Ok(self.body)
        } else {
            let msg = self.body["msg"].as_str().map_or_else(|| self.body.to_string(), str::to_owned);
            Err(format!("HTTP {}: {msg}", self.status))
        }
    }
}

impl Api {
    pub(crate) fn new(router: Router) -> Self {
        Self { router }
    }

    /// `method path` (with its query) and an optional JSON body, as `token`.
    pub(crate) async fn call(
        &self,
        token: &AgentToken,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", token.token));
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let built = request.body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())));
        let Ok(mut request) = built else {
            return Answer {
                status: 400,
                body: serde_json::json!({"msg": format!("not a valid path: {path}")}),
            };
        };
        request.extensions_mut().insert(token.clone());
        let response = match self.router.clone().oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024).await.unwrap_or_default();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        Answer { status, body }
    }
}
