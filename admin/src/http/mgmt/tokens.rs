//! `/api/v1/tokens`: the caller's own API tokens. A token is shown once, at creation; the store
//! keeps only its SHA-256, so a lost token is deleted and replaced, never recovered.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use super::ApiJson;
use super::auth::{Principal, digest, new_secret};
use super::token_scope::TokenScope;
use crate::http::{ApiError, MgmtState};
use crate::store::{ApiTokenRow, NewApiToken};

/// Longest token name (characters).
const NAME_MAX: usize = 100;

/// A token as listed (never the secret).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TokenView {
    id: i64,
    name: String,
    created_at: i64,
    last_used_at: Option<i64>,
    /// `read`, `run` or `write`.
    scope: String,
    /// When it stops working (epoch ms); null: when it is revoked.
    expires_at: Option<i64>,
}

impl From<ApiTokenRow> for TokenView {
    fn from(row: ApiTokenRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            created_at: row.created_ms,
            last_used_at: row.last_used_ms,
            scope: row.scope,
            expires_at: row.expires_ms,
        }
    }
}

/// `GET /api/v1/tokens`: the caller's tokens, newest first.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
) -> Result<Json<Vec<TokenView>>, ApiError> {
    let rows = state.store.list_api_tokens(principal.user.id).await?;
    Ok(Json(rows.into_iter().map(TokenView::from).collect()))
}

#[derive(Deserialize)]
pub(crate) struct NewTokenBody {
    name: String,
    /// `read`, `run` or `write` (default: `write`, what tokens could always do).
    #[serde(default)]
    scope: Option<String>,
    /// Days until it stops working (1 to 3650); none: until it is revoked.
    #[serde(default, rename = "expiresInDays")]
    expires_in_days: Option<i64>,
}

/// Longest expiry a token may be given, in days.
const EXPIRY_MAX_DAYS: i64 = 3650;

/// The answer to a creation: the only time `token` is shown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreatedToken {
    id: i64,
    name: String,
    token: String,
    created_at: i64,
    scope: &'static str,
    expires_at: Option<i64>,
}

/// `POST /api/v1/tokens`.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(body): ApiJson<NewTokenBody>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let name = body.name.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(ApiError::BadRequest(format!("name: must be 1 to {NAME_MAX} characters")));
    }
    let scope = match body.scope.as_deref() {
        None => TokenScope::Write,
        Some(name) => TokenScope::parse(name)
            .ok_or_else(|| ApiError::BadRequest("scope: must be read, run, write or approve".to_owned()))?,
    };
    // An `approve` token skips the approval of new capabilities: only an administrator who could
    // approve them may mint one — not a `write` token, which an agent may hold.
    if scope == TokenScope::Approve && !principal.may_widen() {
        return Err(ApiError::Forbidden(
            "scope approve: only an administrator, signed in or with an approve token, may create one"
                .to_owned(),
        ));
    }
    let token = new_secret();
    let created_at = state.clock.now_ms();
    let expires_at = match body.expires_in_days {
        None => None,
        Some(days) if (1..=EXPIRY_MAX_DAYS).contains(&days) => Some(created_at + days * 24 * 3600 * 1000),
        Some(_) => {
            return Err(ApiError::BadRequest(format!(
                "expiresInDays: 1 to {EXPIRY_MAX_DAYS}, or left out for a token that works until revoked"
            )));
        }
    };
    let id = state
        .store
        .add_api_token(&NewApiToken {
            user_id: principal.user.id,
            name: name.to_owned(),
            token_hash: digest(&token),
            created_ms: created_at,
            scope: scope.as_str().to_owned(),
            expires_ms: expires_at,
        })
        .await?;
    let created =
        CreatedToken { id, name: name.to_owned(), token, created_at, scope: scope.as_str(), expires_at };
    Ok((StatusCode::CREATED, Json(created)))
}

/// `DELETE /api/v1/tokens/{id}`: only the caller's own tokens (another user's id is 404).
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i64>,
) -> Result<StatusCode, ApiError> {
    if state.store.delete_api_token(id, principal.user.id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("you have no API token {id}")))
    }
}
