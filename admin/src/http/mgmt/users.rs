//! `/api/v1/users`: user management, administrators only (upstream `JobUserController`).
//!
//! A role or permission change applies to the user's next request: [`Principal`] loads the
//! user row on every request instead of trusting what the session saw at login.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::auth::{Principal, ROLE_ADMIN};
use super::session::{check_password_rule, stored_password};
use super::{ApiJson, ApiQuery, Listed, Paging, UserView};
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, StoreError, User, UserFilter, UserId, UserRow};

/// Upstream's username length rule (after trimming).
const USERNAME_CHARS: std::ops::RangeInclusive<usize> = 4..=20;
/// `xxl_job_user.role` of normal users.
const ROLE_NORMAL: i16 = 0;

#[derive(Deserialize)]
pub(crate) struct UserQuery {
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    role: Option<i16>,
    #[serde(flatten)]
    paging: Paging,
}

/// `GET /api/v1/users`.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Listed<UserView>>, ApiError> {
    principal.require_admin()?;
    let page = query.paging.page()?;
    let filter = UserFilter {
        username: query.username.map(|u| u.trim().to_owned()).filter(|u| !u.is_empty()),
        role: query.role.filter(|r| *r >= 0),
    };
    let paged = state.store.page_users(&filter, page).await?;
    Ok(Json(Listed { total: paged.total, items: paged.rows.iter().map(UserView::from).collect() }))
}

/// The add/edit form; `password` may be left out (or empty) when editing.
#[derive(Debug, Deserialize)]
pub(crate) struct UserInput {
    username: String,
    #[serde(default)]
    password: Option<String>,
    role: i16,
    #[serde(default)]
    permission: Vec<i32>,
}

/// What a valid form amounts to (the password still in clear, hashed by the caller).
struct Checked {
    username: String,
    password: Option<String>,
    permission: Option<String>,
}

impl UserInput {
    async fn check(&self, state: &MgmtState, password_required: bool) -> Result<Checked, ApiError> {
        let username = self.username.trim();
        if !USERNAME_CHARS.contains(&username.chars().count()) {
            return Err(ApiError::BadRequest("username: must be 4 to 20 characters".to_owned()));
        }
        if let Some(bad) = username.chars().find(|c| !(c.is_ascii_alphanumeric() || "_.@-".contains(*c))) {
            return Err(ApiError::BadRequest(format!(
                "username: {bad:?} is not allowed (use letters, digits, '_', '.', '@' and '-')"
            )));
        }
        let password = self.password.clone().filter(|p| !p.is_empty());
        match &password {
            Some(password) => check_password_rule(password)?,
            None if password_required => {
                return Err(ApiError::BadRequest("password: required for a new user".to_owned()));
            }
            None => {}
        }
        if self.role != ROLE_NORMAL && self.role != ROLE_ADMIN {
            return Err(ApiError::BadRequest(
                "role: must be 0 (normal user) or 1 (administrator)".to_owned(),
            ));
        }
        let existing: BTreeSet<GroupId> =
            state.store.list_groups().await?.into_iter().map(|g| g.id).collect();
        let permission: BTreeSet<GroupId> = self.permission.iter().copied().map(GroupId).collect();
        if let Some(missing) = permission.iter().find(|g| !existing.contains(g)) {
            return Err(ApiError::BadRequest(format!("permission: executor group {missing} does not exist")));
        }
        let permission = permission.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        Ok(Checked {
            username: username.to_owned(),
            password,
            permission: (!permission.is_empty()).then_some(permission),
        })
    }
}

fn taken(username: &str) -> ApiError {
    ApiError::Conflict(format!("username {username:?} is already taken"))
}

/// A unique-key violation (two requests racing for one name) as 409, anything else as 500.
fn store_error(e: StoreError, username: &str) -> ApiError {
    match &e {
        StoreError::Database(sqlx::Error::Database(db)) if db.is_unique_violation() => taken(username),
        _ => e.into(),
    }
}

/// `POST /api/v1/users`.
pub(crate) async fn create(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(input): ApiJson<UserInput>,
) -> Result<(StatusCode, Json<UserView>), ApiError> {
    principal.require_admin()?;
    let checked = input.check(&state, true).await?;
    if state.store.find_user(&checked.username).await?.is_some() {
        return Err(taken(&checked.username));
    }
    let password = stored_password(&state, checked.password.unwrap_or_default()).await?;
    let user = User {
        username: checked.username.clone(),
        password,
        token: None,
        role: input.role,
        permission: checked.permission,
    };
    let id = state.store.add_user(&user).await.map_err(|e| store_error(e, &checked.username))?;
    Ok((StatusCode::CREATED, Json(UserView::from(&UserRow { id, user }))))
}

/// The user `id`, unless it is the caller (upstream: your own account changes through the
/// password page, so an admin cannot lock itself out).
async fn other_user(
    state: &MgmtState,
    principal: &Principal,
    id: i32,
    what: &str,
) -> Result<UserRow, ApiError> {
    if principal.user.id == UserId(id) {
        return Err(ApiError::BadRequest(format!(
            "you cannot {what} your own account (change your password with PUT /api/v1/session/password)"
        )));
    }
    state.store.load_user(UserId(id)).await?.ok_or_else(|| ApiError::NotFound(format!("user {id} not found")))
}

/// `PUT /api/v1/users/{id}`.
pub(crate) async fn update(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
    ApiJson(input): ApiJson<UserInput>,
) -> Result<Json<UserView>, ApiError> {
    principal.require_admin()?;
    let mut row = other_user(&state, &principal, id, "edit").await?;
    let checked = input.check(&state, false).await?;
    if checked.username != row.user.username && state.store.find_user(&checked.username).await?.is_some() {
        return Err(taken(&checked.username));
    }
    let password_changed = checked.password.is_some();
    if let Some(password) = checked.password {
        row.user.password = stored_password(&state, password).await?;
    }
    row.user.username = checked.username.clone();
    row.user.role = input.role;
    row.user.permission = checked.permission;
    if !state.store.update_user(row.id, &row.user).await.map_err(|e| store_error(e, &checked.username))? {
        return Err(ApiError::NotFound(format!("user {id} not found")));
    }
    if password_changed {
        // Like the password page: a new password ends the sessions that knew the old one.
        state.store.delete_user_sessions(row.id, None).await?;
    }
    Ok(Json(UserView::from(&row)))
}

/// `DELETE /api/v1/users/{id}`: the user's sessions, API tokens and single sign-on identities
/// end with it.
pub(crate) async fn delete(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    Path(id): Path<i32>,
) -> Result<StatusCode, ApiError> {
    principal.require_admin()?;
    let row = other_user(&state, &principal, id, "delete").await?;
    state.store.delete_user_sessions(row.id, None).await?;
    state.store.delete_user_tokens(row.id).await?;
    state.store.delete_user_identities(row.id).await?;
    if !state.store.delete_user(row.id).await? {
        return Err(ApiError::NotFound(format!("user {id} not found")));
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A user as the API shows it (no password hash), for the audit log.
pub(crate) struct UserSnapshot;

#[async_trait::async_trait]
impl super::audit::AuditSnapshot for UserSnapshot {
    async fn read(&self, state: &MgmtState, id: i64) -> Result<Option<serde_json::Value>, ApiError> {
        let Some(id) = super::audit::small_id(id) else { return Ok(None) };
        Ok(state
            .store
            .load_user(crate::store::UserId(id))
            .await?
            .map(|u| serde_json::json!(super::UserView::from(&u))))
    }
}
