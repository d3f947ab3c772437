//! What an API token may do (docs/security.md, "API token scopes"): `read` only reads; `run`
//! also triggers, starts and stops jobs and workflows, reruns and stops instances, kills and
//! replays runs (and what-ifs of module versions over them),
//! and requests and cancels backfills;
//! `write` does everything its user may, though a change that widens what a job may reach waits
//! for an administrator's approval; `approve` (administrators only) makes and approves such changes. The scope narrows the user's rights, never widens them:
//! every handler still checks the user's role and groups. The MCP server (docs/mcp.md) calls the
//! same routes, so a tool is refused exactly as its route would be.

use axum::http::Method;

use crate::http::ApiError;

/// A token's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TokenScope {
    /// GET only.
    Read,
    /// GET and the run routes.
    Run,
    /// Everything.
    Write,
    /// Everything, and an administrator's token may make changes that widen what a job may reach
    /// without waiting for approval, and approve others' (docs/replay.md, "Capabilities and
    /// approval"): for an administrator's own deploy pipeline, never for an agent.
    Approve,
}

/// The writes a `run` token may make: running things, not changing them.
const RUN_ROUTES: [&str; 14] = [
    "/api/v1/jobs/{id}/trigger",
    "/api/v1/jobs/{id}/start",
    "/api/v1/jobs/{id}/stop",
    "/api/v1/workflows/{id}/start",
    "/api/v1/workflows/{id}/stop",
    "/api/v1/workflows/{id}/instances",
    "/api/v1/workflow-instances/{id}/stop",
    "/api/v1/workflow-instances/{id}/rerun-failed",
    "/api/v1/workflow-instances/{id}/rerun",
    "/api/v1/logs/{id}/kill",
    "/api/v1/logs/{id}/replay",
    "/api/v1/jobs/{id}/wasm/what-if",
    "/api/v1/backfills",
    "/api/v1/backfills/{id}/cancel",
];

impl TokenScope {
    /// The stored name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TokenScope::Read => "read",
            TokenScope::Run => "run",
            TokenScope::Write => "write",
            TokenScope::Approve => "approve",
        }
    }

    /// The scope named `name` (any case).
    pub(crate) fn parse(name: &str) -> Option<TokenScope> {
        match name.trim().to_ascii_lowercase().as_str() {
            "read" => Some(TokenScope::Read),
            "run" => Some(TokenScope::Run),
            "write" => Some(TokenScope::Write),
            "approve" => Some(TokenScope::Approve),
            _ => None,
        }
    }

    /// The scope a request to `route` with `method` needs.
    pub(crate) fn needed(method: &Method, route: &str) -> TokenScope {
        if matches!(*method, Method::GET | Method::HEAD) {
            TokenScope::Read
        } else if RUN_ROUTES.contains(&route) {
            TokenScope::Run
        } else {
            TokenScope::Write
        }
    }

    /// `Ok` if this scope covers `method` on `route`; a 403 naming both otherwise.
    pub(crate) fn check(self, method: &Method, route: &str) -> Result<(), ApiError> {
        let needed = Self::needed(method, route);
        if self >= needed {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "this API token's scope is {}; {method} {route} needs a {} token",
            self.as_str(),
            needed.as_str()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_run_is_only_running() {
        let trigger = (Method::POST, "/api/v1/jobs/{id}/trigger");
        let edit = (Method::PUT, "/api/v1/jobs/{id}");
        assert!(TokenScope::Read.check(&Method::GET, "/api/v1/jobs").is_ok());
        assert!(TokenScope::Read.check(&trigger.0, trigger.1).is_err());
        assert!(TokenScope::Run.check(&trigger.0, trigger.1).is_ok());
        assert!(TokenScope::Run.check(&edit.0, edit.1).is_err());
        assert!(TokenScope::Write.check(&edit.0, edit.1).is_ok());
        assert!(TokenScope::Approve.check(&edit.0, edit.1).is_ok());
        assert_eq!(TokenScope::parse("approve"), Some(TokenScope::Approve));
        assert_eq!(TokenScope::parse("RUN"), Some(TokenScope::Run));
        assert_eq!(TokenScope::parse("admin"), None);
    }
}
