//! `/api/v1/groups/{id}/access-token`: a group's own access token (xxl-job 3.5's per-executor
//! token), administrators only.
//!
//! `PUT` sets it — to the `accessToken` given (to match executors already configured with one,
//! e.g. after moving from xxl-job 3.5) or, without one, to a new random token — and answers it
//! once; `DELETE` removes it, and the group's executors go back to the global token. Reads never
//! show it (`accessTokenSet` on the group), and the audit log records only that it changed.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::ApiJson;
use super::auth::{Principal, new_secret};
use super::groups::load;
use crate::credentials::{MAX_TOKEN_CHARS, MIN_TOKEN_CHARS};
use crate::http::{ApiError, MgmtState};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TokenInput {
    #[serde(default)]
    access_token: Option<String>,
}

/// The answer of a `PUT`: the token, shown this once.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TokenSet {
    group_id: i32,
    appname: String,
    access_token: String,
}

/// `PUT /api/v1/groups/{id}/access-token`.
pub(crate) async fn put(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<TokenInput>,
) -> Result<Json<TokenSet>, ApiError> {
    principal.require_admin()?;
    let group = load(&state, id).await?;
    let token = match input.access_token.as_deref().map(str::trim) {
        None | Some("") => new_secret(),
        Some(token) => checked(token)?.to_owned(),
    };
    let stored = state.group_tokens.stored_form(group.id, &token);
    if !state.store.set_group_token(group.id, Some(&stored), state.clock.now_ms()).await? {
        return Err(ApiError::NotFound(format!("executor group {id} not found")));
    }
    state.group_tokens.invalidate();
    Ok(Json(TokenSet { group_id: group.id.0, appname: group.group.app_name, access_token: token }))
}

/// `DELETE /api/v1/groups/{id}/access-token`.
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<StatusCode, ApiError> {
    principal.require_admin()?;
    let group = load(&state, id).await?;
    state.store.set_group_token(group.id, None, state.clock.now_ms()).await?;
    state.group_tokens.invalidate();
    Ok(StatusCode::NO_CONTENT)
}

/// A token given by the administrator: long enough to resist guessing, short enough for
/// upstream's column, and free of what would break an HTTP header.
fn checked(token: &str) -> Result<&str, ApiError> {
    let chars = token.chars().count();
    if !(MIN_TOKEN_CHARS..=MAX_TOKEN_CHARS).contains(&chars) {
        return Err(ApiError::BadRequest(format!(
            "accessToken: must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} characters (leave it out to generate one)"
        )));
    }
    if let Some(weakness) = crate::credentials::token_weakness(token) {
        return Err(ApiError::BadRequest(format!(
            "accessToken: {} tokens are refused (leave it out to generate one)",
            weakness.describe()
        )));
    }
    if !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err(ApiError::BadRequest(
            "accessToken: only printable ASCII characters without spaces (it travels in an HTTP header)"
                .to_owned(),
        ));
    }
    Ok(token)
}
