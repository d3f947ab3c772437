//! `/api/v1/session`: log in with a password or through an LDAP directory (sets the session
//! cookie), who am I, log out, change password.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::auth::{Credential, Principal, ROLE_ADMIN, SESSION_COOKIE, digest, new_secret};
use super::{ApiJson, UserView};
use crate::http::{ApiError, MgmtState};
use crate::secrets::{self, DUMMY_HASH};
use crate::sso::LocalPasswords;
use crate::store::{NewSession, UserRow};

/// Server-side lifetime of a "remember me" session (and its cookie's Max-Age).
const REMEMBER_MS: i64 = 30 * 24 * 3600 * 1000;
/// Server-side lifetime of a browser-session login.
const SESSION_MS: i64 = 24 * 3600 * 1000;
/// Upstream's password length rule (4–20 characters).
pub(crate) const PASSWORD_CHARS: std::ops::RangeInclusive<usize> = 4..=20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoginBody {
    username: String,
    password: String,
    #[serde(default)]
    remember: bool,
    /// An LDAP provider's id (docs/sso.md); absent for jobwheel's own passwords.
    #[serde(default)]
    provider: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionView {
    user: UserView,
    csrf_token: Option<String>,
}

/// The refusal of a right password that everybody knows (upstream's seed `admin`/`123456`).
pub(crate) const PUBLISHED_PASSWORD_REFUSED: &str = "this account still has xxl-job's published default password, \
     which cannot sign in: an administrator sets a new one on the Users page, or the operator runs \
     `jobwheel-admin users reset-password <name>`";

/// `POST /api/v1/session`.
pub(crate) async fn login(
    State(state): State<Arc<MgmtState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<LoginBody>,
) -> Result<Response, ApiError> {
    let username = body.username.trim().to_owned();
    let addr = Some(state.trusted_proxies.client(peer.ip(), &headers));
    // The place under the throttle is taken before the password is checked (review M1).
    let attempt = state
        .login_limit
        .reserve(&username, addr, state.clock.instant())
        .map_err(ApiError::TooManyRequests)?;
    let verified = match body.provider.as_deref().filter(|p| !p.is_empty()) {
        Some(provider) => super::sso::ldap_login(&state, provider, &username, &body.password).await,
        None => local_login(&state, &username, body.password).await,
    };
    let user = match verified {
        Ok(Some(user)) => user,
        Ok(None) => {
            attempt.failed(state.clock.instant());
            return Err(ApiError::Unauthenticated("wrong username or password".to_owned()));
        }
        // Refused by the mapping or the password policy: the password was right, so it does not
        // count towards the throttle; the directory being down does not either.
        Err(e) => return Err(e),
    };
    attempt.succeeded();
    let (cookie, csrf_token) = open_session(&state, &user, body.remember).await?;
    let mut response =
        Json(SessionView { user: UserView::from(&user), csrf_token: Some(csrf_token) }).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    Ok(response)
}

/// A new session for `user` (after a password, LDAP or OpenID Connect login): its `Set-Cookie`
/// header and its CSRF token.
pub(crate) async fn open_session(
    state: &MgmtState,
    user: &UserRow,
    remember: bool,
) -> Result<(HeaderValue, String), ApiError> {
    let now_ms = state.clock.now_ms();
    let cookie = new_secret();
    let csrf_token = new_secret();
    let lifetime = if remember { REMEMBER_MS } else { SESSION_MS };
    state
        .store
        .insert_session(&NewSession {
            id_hash: digest(&cookie),
            user_id: user.id,
            csrf_token: csrf_token.clone(),
            created_ms: now_ms,
            expires_ms: now_ms + lifetime,
        })
        .await?;
    // Expired sessions are deleted here rather than by a timer: logins are rare and cheap.
    state.store.purge_sessions(now_ms).await?;
    let max_age = remember.then_some(REMEMBER_MS / 1000);
    Ok((cookie_header(&cookie, max_age, super::sso::secure_login(state)), csrf_token))
}

/// A password checked against `xxl_job_user`; `Ok(None)` when it does not match.
async fn local_login(
    state: &MgmtState,
    username: &str,
    password: String,
) -> Result<Option<UserRow>, ApiError> {
    let Some(user) = state.store.find_user(username).await? else {
        // Spend the same time as for a real user, so response times do not reveal names.
        let _ = verify_blocking(password, DUMMY_HASH.to_owned()).await?;
        return Ok(None);
    };
    let published = crate::credentials::published::is_published_password(&password);
    let Some(user) = check_password(state, user, password, published).await? else { return Ok(None) };
    if published {
        // Checked after the password: only someone who already knows it learns this (N1).
        return Err(ApiError::Forbidden(PUBLISHED_PASSWORD_REFUSED.to_owned()));
    }
    // Checked after the password, so the answer tells nobody without it who is an administrator.
    if state.sso.config.local_passwords == LocalPasswords::Administrators && user.user.role != ROLE_ADMIN {
        return Err(ApiError::Forbidden(
            "password sign-in is turned off for this account: sign in with your organisation's provider"
                .to_owned(),
        ));
    }
    Ok(Some(user))
}

/// The password check, with upstream's hashes (adopted databases: 2.x MD5 hex, 3.2+ SHA-256
/// hex) accepted and replaced by an argon2 hash on success, unless an upstream admin shares
/// the database (`--keep-upstream-password-hashes`). `Some(user)` when it matches.
async fn check_password(
    state: &MgmtState,
    mut user: UserRow,
    password: String,
    published: bool,
) -> Result<Option<UserRow>, ApiError> {
    let stored = user.user.password.clone();
    if let Some(legacy) = LegacyHash::of(&stored) {
        use subtle::ConstantTimeEq as _;
        // An argon2 run as for every other name, so timing does not single out the adopted
        // accounts that still have upstream's weak hashes (review L3).
        let _ = verify_blocking(password.clone(), DUMMY_HASH.to_owned()).await?;
        let given = legacy.digest(&password);
        if !bool::from(given.as_bytes().ct_eq(stored.to_ascii_lowercase().as_bytes())) {
            return Ok(None);
        }
        // A published password is refused, so its hash stays upstream's: the start-up log and
        // the Users page keep naming the account until it gets a new password.
        if state.keep_upstream_password_hashes || published {
            return Ok(Some(user));
        }
        user.user.password = hash_blocking(password).await?;
        state.store.update_user(user.id, &user.user).await?;
        tracing::info!(username = %user.user.username, from = legacy.name(), "upgraded an upstream password hash to argon2");
        return Ok(Some(user));
    }
    Ok(verify_blocking(password, stored).await?.then_some(user))
}

/// `password` as the users table should keep it: argon2, or with
/// `--keep-upstream-password-hashes` the hash an upstream admin of the database's generation
/// verifies (MD5 hex on 2.x, SHA-256 hex on 3.x).
pub(crate) async fn stored_password(state: &MgmtState, password: String) -> Result<String, ApiError> {
    if !state.keep_upstream_password_hashes {
        return hash_blocking(password).await;
    }
    let format = match state.store.schema().found {
        crate::store::Generation::V2 => LegacyHash::Md5,
        _ => LegacyHash::Sha256,
    };
    Ok(format.digest(&password))
}

/// Password hashes upstream xxl-job stores, told apart by length.
#[derive(Debug, Clone, Copy)]
enum LegacyHash {
    /// 2.x: `md5(password)`, 32 hex digits.
    Md5,
    /// 3.2+: `sha256(password)`, 64 hex digits.
    Sha256,
}

impl LegacyHash {
    fn of(hash: &str) -> Option<LegacyHash> {
        if !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        match hash.len() {
            32 => Some(LegacyHash::Md5),
            64 => Some(LegacyHash::Sha256),
            _ => None,
        }
    }

    /// The lower-case hex digest of `password` in this format.
    fn digest(self, password: &str) -> String {
        match self {
            LegacyHash::Md5 => hex::encode(<md5::Md5 as md5::Digest>::digest(password.as_bytes())),
            LegacyHash::Sha256 => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(password.as_bytes())),
        }
    }

    fn name(self) -> &'static str {
        match self {
            LegacyHash::Md5 => "md5",
            LegacyHash::Sha256 => "sha-256",
        }
    }
}

/// argon2 is deliberately slow; keep it off the async workers.
/// Password hashings at once: each argon2 run takes 19 MiB and a core for tens of
/// milliseconds, so a flood of logins must queue here instead of filling the blocking pool
/// (512 threads, ~10 GiB) and starving the scheduler (review M1).
static ARGON2_SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);
/// How long a login waits for a slot before it is told to come back.
const ARGON2_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

async fn argon2_slot() -> Result<tokio::sync::SemaphorePermit<'static>, ApiError> {
    match tokio::time::timeout(ARGON2_WAIT, ARGON2_SLOTS.acquire()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(ApiError::TooManyRequests(1)),
    }
}

pub(crate) async fn verify_blocking(password: String, hash: String) -> Result<bool, ApiError> {
    let _slot = argon2_slot().await?;
    Ok(tokio::task::spawn_blocking(move || secrets::verify_password(&password, &hash)).await.unwrap_or(false))
}

pub(crate) async fn hash_blocking(password: String) -> Result<String, ApiError> {
    let _slot = argon2_slot().await?;
    tokio::task::spawn_blocking(move || secrets::hash_password(&password))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

pub(crate) fn cookie_header(value: &str, max_age: Option<i64>, secure: bool) -> HeaderValue {
    let mut cookie = format!("{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict");
    if let Some(seconds) = max_age {
        cookie.push_str(&format!("; Max-Age={seconds}"));
    }
    if secure {
        cookie.push_str("; Secure");
    }
    HeaderValue::from_str(&cookie).expect("cookie values are hex")
}

/// `GET /api/v1/session`.
pub(crate) async fn current(principal: Principal) -> Json<SessionView> {
    let csrf_token = match &principal.credential {
        Credential::Session { csrf_token, .. } => Some(csrf_token.clone()),
        Credential::Token(_) => None,
    };
    Json(SessionView { user: UserView::from(&principal.user), csrf_token })
}

/// `DELETE /api/v1/session`.
pub(crate) async fn logout(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
) -> Result<Response, ApiError> {
    if let Credential::Session { id_hash, .. } = &principal.credential {
        state.store.delete_session(id_hash).await?;
    }
    let mut headers = HeaderMap::new();
    headers.insert(header::SET_COOKIE, cookie_header("", Some(0), super::sso::secure_login(&state)));
    Ok((StatusCode::NO_CONTENT, headers).into_response())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PasswordBody {
    old_password: String,
    password: String,
}

/// `PUT /api/v1/session/password`.
pub(crate) async fn change_password(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiJson(body): ApiJson<PasswordBody>,
) -> Result<StatusCode, ApiError> {
    // An API token cannot change its user's password: a leaked token would otherwise be an
    // unthrottled oracle for the password and a way to keep the account after the token is
    // revoked (review N14).
    if matches!(principal.credential, Credential::Token(_)) {
        return Err(ApiError::Forbidden(
            "a password is changed in a signed-in session, not with an API token".to_owned(),
        ));
    }
    check_password_rule(&body.password)?;
    let Some(mut user) = check_password(&state, principal.user.clone(), body.old_password, false).await?
    else {
        return Err(ApiError::BadRequest("oldPassword: the current password is wrong".to_owned()));
    };
    user.user.password = stored_password(&state, body.password).await?;
    state.store.update_user(user.id, &user.user).await?;
    let keep = match &principal.credential {
        Credential::Session { id_hash, .. } => Some(id_hash.as_str()),
        Credential::Token(_) => None,
    };
    state.store.delete_user_sessions(user.id, keep).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Upstream's rule for new passwords, and none of upstream's published ones (N1).
pub(crate) fn check_password_rule(password: &str) -> Result<(), ApiError> {
    if !PASSWORD_CHARS.contains(&password.chars().count()) {
        Err(ApiError::BadRequest("password: must be 4 to 20 characters".to_owned()))
    } else if crate::credentials::published::is_published_password(password) {
        Err(ApiError::BadRequest(
            "password: that is xxl-job's published default password; choose another".to_owned(),
        ))
    } else {
        Ok(())
    }
}
