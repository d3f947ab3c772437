//! Who is calling the management API: [`Principal`], extracted from an API token or a session
//! cookie on every request, with the CSRF check for cookie-authenticated writes and the
//! role/group checks every handler makes.
//!
//! Two credentials, because they have different threats: a browser sends the session cookie
//! by itself on cross-site requests (hence HttpOnly + SameSite=Strict + a synchronizer CSRF
//! token on writes), while a bearer token is only ever sent on purpose by a script.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts, MatchedPath};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use super::token_scope::TokenScope;
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, UserRow};

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "jobwheel_session";
/// The header cookie-authenticated writes must carry.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// `xxl_job_user.role` of administrators.
pub(crate) const ROLE_ADMIN: i16 = 1;
/// API tokens' `last_used_ms` is written at most this often (ms), not on every request.
const TOUCH_EVERY_MS: i64 = 60_000;

/// How a request authenticated.
#[derive(Debug, Clone)]
pub(crate) enum Credential {
    /// A browser session: the stored digest of its cookie and its CSRF token.
    Session { id_hash: String, csrf_token: String },
    /// An API token (its scope was checked against the route when it was accepted; handlers
    /// that narrow a route further read it, e.g. a `run` token triggers only with the job's own
    /// parameter).
    Token(TokenScope),
}

/// The authenticated caller.
#[derive(Debug, Clone)]
pub(crate) struct Principal {
    pub(crate) user: UserRow,
    pub(crate) credential: Credential,
}

impl Principal {
    pub(crate) fn is_admin(&self) -> bool {
        self.user.user.role == ROLE_ADMIN
    }

    /// Whether a change this caller makes may widen what a job may reach without an
    /// administrator's approval, and whether it may approve others' (docs/replay.md,
    /// "Capabilities and approval"): an administrator signed in, or with an `approve` token. A
    /// `write` token — what an agent holds — waits like a member's change does.
    pub(crate) fn may_widen(&self) -> bool {
        self.is_admin()
            && matches!(self.credential, Credential::Session { .. } | Credential::Token(TokenScope::Approve))
    }

    /// The groups a normal user may manage (upstream's comma-separated `permission`).
    pub(crate) fn groups(&self) -> BTreeSet<GroupId> {
        parse_permission(self.user.user.permission.as_deref())
    }

    /// `Ok` for administrators.
    pub(crate) fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::Forbidden("this needs the administrator role".to_owned()))
        }
    }

    /// `Ok` if the caller may manage jobs and logs of `group`.
    pub(crate) fn require_group(&self, group: GroupId) -> Result<(), ApiError> {
        if self.may_use(group) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!("you have no permission on executor group {group}")))
        }
    }

    /// The group a list or clear is limited to: the requested one (`jobGroup`, absent or ≤ 0
    /// meaning "all") if the caller may use it. Only administrators may ask for all groups;
    /// upstream's pages always name one, so a normal user's answer never mixes in groups they
    /// may not see.
    pub(crate) fn group_scope(&self, requested: Option<i32>) -> Result<Option<GroupId>, ApiError> {
        match requested.filter(|g| *g > 0).map(GroupId) {
            Some(group) => {
                self.require_group(group)?;
                Ok(Some(group))
            }
            None if self.is_admin() => Ok(None),
            None => Err(ApiError::BadRequest(
                "jobGroup: required (choose one of your executor groups)".to_owned(),
            )),
        }
    }

    pub(crate) fn may_use(&self, group: GroupId) -> bool {
        self.is_admin() || self.groups().contains(&group)
    }
}

/// Group ids in a `permission` column; entries that are not numbers are ignored.
pub(crate) fn parse_permission(permission: Option<&str>) -> BTreeSet<GroupId> {
    permission.unwrap_or_default().split(',').filter_map(|id| id.trim().parse().ok().map(GroupId)).collect()
}

/// An API token an agent presented to the MCP server (docs/mcp.md), put on the MCP request by
/// its authentication layer and on each management call a tool makes in-process with it. The
/// management room owns the type: its audit log names the client from it (the token's name
/// and the agent's address), and the MCP room only fills it in.
#[derive(Clone)]
pub(crate) struct AgentToken {
    pub(crate) token: String,
    pub(crate) name: String,
    /// The agent's address (behind `--trusted-proxies`, the client a proxy names), for the
    /// audit log: a stolen token used through MCP leaves its source as on REST (review N18).
    pub(crate) client: String,
}

// Never print the token.
impl std::fmt::Debug for AgentToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToken").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Lower-case hex SHA-256: what the store keeps of cookies and tokens.
pub(crate) fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// A new random secret (256 bits, URL-safe hex).
pub(crate) fn new_secret() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The session cookie's value, if the request has one.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, SESSION_COOKIE)
}

/// The non-empty value of cookie `name`.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn unauthenticated() -> ApiError {
    ApiError::Unauthenticated(
        "not logged in (log in, or send an API token as Authorization: Bearer …)".to_owned(),
    )
}

/// Taken in any room whose state hands out the management room's (the `/metrics` page too).
impl<S: Send + Sync> FromRequestParts<S> for Principal
where
    Arc<MgmtState>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let state = &Arc::<MgmtState>::from_ref(state);
        let now_ms = state.clock.now_ms();
        if let Some(token) = bearer(&parts.headers) {
            let row = state
                .store
                .find_api_token(&digest(token))
                .await?
                .ok_or_else(|| ApiError::Unauthenticated("unknown or revoked API token".to_owned()))?;
            if row.expires_ms.is_some_and(|expires| expires <= now_ms) {
                return Err(ApiError::Unauthenticated(
                    "this API token has expired; make a new one".to_owned(),
                ));
            }
            let user = state.store.load_user(row.user_id).await?.ok_or_else(unauthenticated)?;
            require_recent_provider_sign_in(state, &user, now_ms).await?;
            if row.last_used_ms.is_none_or(|last| now_ms - last >= TOUCH_EVERY_MS) {
                state.store.touch_api_token(row.id, now_ms).await?;
            }
            // Unknown scopes (a newer admin's) get the least.
            let scope = TokenScope::parse(&row.scope).unwrap_or(TokenScope::Read);
            let route = parts.extensions.get::<MatchedPath>().map_or("", MatchedPath::as_str);
            scope.check(&parts.method, route)?;
            note_for_audit(parts, &user);
            return Ok(Self { user, credential: Credential::Token(scope) });
        }
        let cookie = session_cookie(&parts.headers).ok_or_else(unauthenticated)?;
        let id_hash = digest(cookie);
        let session =
            state.store.load_session(&id_hash, now_ms).await?.ok_or_else(|| {
                ApiError::Unauthenticated("your session has ended; log in again".to_owned())
            })?;
        if !matches!(parts.method, Method::GET | Method::HEAD) {
            let sent = parts.headers.get(CSRF_HEADER).map(|v| v.as_bytes()).unwrap_or_default();
            if !bool::from(sent.ct_eq(session.csrf_token.as_bytes())) {
                return Err(ApiError::Forbidden(
                    "missing or wrong X-CSRF-Token header (send the csrfToken from GET /api/v1/session)"
                        .to_owned(),
                ));
            }
        }
        let user = state.store.load_user(session.user_id).await?.ok_or_else(unauthenticated)?;
        require_recent_provider_sign_in(state, &user, now_ms).await?;
        note_for_audit(parts, &user);
        Ok(Self { user, credential: Credential::Session { id_hash, csrf_token: session.csrf_token } })
    }
}

/// A single sign-on account's sessions and tokens are honoured for `reconfirm_secs` after the
/// person last signed in through the provider (review N4): the provider's word that they still
/// belong is renewed at every sign-in, and someone removed there loses access within that time
/// without signing in again. Local accounts are not affected.
async fn require_recent_provider_sign_in(
    state: &MgmtState,
    user: &UserRow,
    now_ms: i64,
) -> Result<(), ApiError> {
    if user.user.password != crate::sso::account::NO_PASSWORD {
        return Ok(());
    }
    let limit_ms = i64::try_from(state.sso.config.reconfirm_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    match state.store.identity_confirmed_ms(user.id).await? {
        Some(confirmed) if confirmed.saturating_add(limit_ms) > now_ms => Ok(()),
        _ => Err(ApiError::Unauthenticated(
            "your organisation's provider has not confirmed this account recently: sign in through it again \
             (its sessions and API tokens then work again)"
                .to_owned(),
        )),
    }
}

/// Tells the audit middleware who is calling (a write it records carries the slot).
fn note_for_audit(parts: &Parts, user: &UserRow) {
    if let Some(slot) = parts.extensions.get::<super::audit::AuditSlot>() {
        slot.set(user);
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_session_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_static("a=1; jobwheel_session=abc; b=2"));
        assert_eq!(session_cookie(&headers), Some("abc"));
        headers.insert(header::COOKIE, HeaderValue::from_static("jobwheel_session="));
        assert_eq!(session_cookie(&headers), None);
    }

    #[test]
    fn permissions_ignore_junk() {
        let groups = parse_permission(Some("1, 3,x,,7"));
        assert_eq!(groups.into_iter().map(|g| g.0).collect::<Vec<_>>(), [1, 3, 7]);
        assert!(parse_permission(None).is_empty());
    }

    #[test]
    fn bearer_scheme_is_case_insensitive() {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer  tok "));
        assert_eq!(bearer(&headers), Some("tok"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
    }
}
