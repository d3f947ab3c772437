//! Single sign-on at the edge (docs/sso.md): `GET /api/v1/sso` (what the login page offers),
//! the OpenID Connect redirect and callback, and the LDAP branch of `POST /api/v1/session`.
//!
//! Between the redirect and the callback the browser carries the login's state, nonce and PKCE
//! verifier in a cookie sealed with the admin's key: any admin sharing the database can finish a
//! login another started, and the callback is bound to the browser that began it (a forged
//! callback link carries no cookie and is refused before anything in it is read).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;
use subtle::ConstantTimeEq as _;

use super::audit::store_entry;
use super::auth::cookie;
use super::session::open_session;
use crate::http::{ApiError, MgmtState};
use crate::sso::config::OidcProvider;
use crate::sso::mapping::{self, Matching};
use crate::sso::oidc::{self, PendingLogin};
use crate::sso::{LocalPasswords, SsoError, account, ldap};
use crate::store::{NewAudit, UserRow};

/// The cookie that carries a login from the redirect to the callback.
const LOGIN_COOKIE: &str = "jobwheel_sso";
/// Its name over https: browsers keep a `__Host-` cookie only if the host itself set it with
/// `Secure` and `Path=/`, so a sibling subdomain cannot plant one with its own state and code
/// (cookie tossing, review N17).
const HOST_LOGIN_COOKIE: &str = "__Host-jobwheel_sso";
/// How long a login at the provider may take.
const LOGIN_MS: i64 = 10 * 60 * 1000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderView {
    id: String,
    name: String,
    /// `oidc` (a button) or `ldap` (the login form, with this provider chosen).
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SsoView {
    local_passwords: LocalPasswords,
    providers: Vec<ProviderView>,
}

/// `GET /api/v1/sso`: public, for the login page.
pub(crate) async fn providers(State(state): State<Arc<MgmtState>>) -> Json<SsoView> {
    let config = &state.sso.config;
    let oidc =
        config.oidc.iter().map(|p| ProviderView { id: p.id.clone(), name: p.name.clone(), kind: "oidc" });
    let ldap =
        config.ldap.iter().map(|p| ProviderView { id: p.id.clone(), name: p.name.clone(), kind: "ldap" });
    Json(SsoView { local_passwords: config.local_passwords, providers: oidc.chain(ldap).collect() })
}

/// `GET /api/v1/sso/oidc/{id}/login`: off to the provider.
pub(crate) async fn oidc_login(
    State(state): State<Arc<MgmtState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let Some((provider, callback)) = oidc_provider(&state, &id) else {
        return unknown(&id);
    };
    // Anonymous, and each start may cost a request to the provider: bounded per address (N6).
    let client = state.trusted_proxies.client(peer.ip(), &headers);
    if state.sso.login_starts.check_key(&client).is_err() {
        return ApiError::TooManyRequests(60).into_response();
    }
    let expires_ms = state.clock.now_ms() + LOGIN_MS;
    match oidc::begin(provider, &callback, (&state.sso.http, &state.sso.discovery), expires_ms).await {
        Ok((url, pending)) => {
            let sealed = state.secret_box.seal_login(&serde_json::to_string(&pending).unwrap_or_default());
            let mut response = redirect(&url);
            response
                .headers_mut()
                .insert(header::SET_COOKIE, login_cookie(&sealed, LOGIN_MS / 1000, secure_login(&state)));
            response
        }
        Err(e) => {
            tracing::warn!(provider = %id, error = %e, "cannot start an OpenID Connect login");
            back_to_login(&state, &e)
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /api/v1/sso/oidc/{id}/callback`: the provider sends the browser back here.
pub(crate) async fn oidc_callback(
    State(state): State<Arc<MgmtState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Response {
    let Some(provider) = oidc_provider(&state, &id) else {
        return unknown(&id);
    };
    let client = state.trusted_proxies.client(peer.ip(), &headers).to_string();
    let mut username = String::new();
    let outcome = callback(&state, provider, &headers, query, &mut username).await;
    let mut response = match outcome {
        Ok(user) => match open_session(&state, &user, false).await {
            Ok((cookie, _csrf)) => {
                audit(&state, client, Some(&user), &username, "session.login", json!({ "provider": id }))
                    .await;
                let mut response = redirect(&home(&state, "#/dashboard"));
                response.headers_mut().append(header::SET_COOKIE, cookie);
                response
            }
            Err(e) => e.into_response(),
        },
        Err(e) => {
            // Anonymous and free (a callback without the cookie is refused at once): recorded
            // once per client and window with the number folded into it, as refused password
            // logins are (N6, review M2).
            if let Some(folded) = state.refused_logins.admit(&client, state.clock.instant()) {
                tracing::info!(provider = %id, username, error = %e, folded, "a single sign-on was refused");
                let detail = json!({ "provider": id, "reason": e.to_string(), "folded": folded });
                audit(&state, client, None, &username, "session.login_failed", detail).await;
            }
            back_to_login(&state, &e)
        }
    };
    response.headers_mut().append(header::SET_COOKIE, login_cookie("", 0, secure_login(&state)));
    response
}

async fn callback(
    state: &MgmtState,
    (provider, callback_url): (&OidcProvider, String),
    headers: &HeaderMap,
    query: CallbackQuery,
    username: &mut String,
) -> Result<UserRow, SsoError> {
    let again =
        || SsoError::Expired("the sign-in expired or began in another browser: sign in again".to_owned());
    let id = provider.id.as_str();
    let name = if secure_login(state) { HOST_LOGIN_COOKIE } else { LOGIN_COOKIE };
    let sealed = cookie(headers, name).ok_or_else(again)?;
    let pending: PendingLogin = state
        .secret_box
        .open_login(sealed)
        .ok()
        .and_then(|json| serde_json::from_str(&json).ok())
        .ok_or_else(again)?;
    let given = query.state.unwrap_or_default();
    let same_state = bool::from(given.as_bytes().ct_eq(pending.state.as_bytes()));
    if !same_state || pending.provider != id || pending.expires_ms < state.clock.now_ms() {
        return Err(again());
    }
    if let Some(error) = query.error {
        let about = query.error_description.map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(SsoError::Provider(format!("{} did not sign you in: {error}{about}", provider.name)));
    }
    let code = query
        .code
        .ok_or_else(|| SsoError::Provider(format!("{} sent no authorization code", provider.name)))?;
    let identity =
        oidc::finish(provider, &callback_url, (&state.sso.http, &state.sso.discovery), pending, code).await?;
    username.clone_from(&identity.username);
    let Some(grant) = mapping::grant(&provider.map, &identity.groups, Matching::Exact) else {
        account::revoke(state.store.as_ref(), &provider.id, &identity).await?;
        return Err(outside(&identity.username, &provider.name));
    };
    let now_ms = state.clock.now_ms();
    account::sign_in(state.store.as_ref(), &provider.id, &identity, &grant, now_ms).await
}

/// The LDAP branch of `POST /api/v1/session`: `Ok(None)` for a wrong name or password.
pub(crate) async fn ldap_login(
    state: &MgmtState,
    provider: &str,
    username: &str,
    password: &str,
) -> Result<Option<UserRow>, ApiError> {
    let Some(directory) = state.sso.ldap(provider) else {
        return Err(ApiError::BadRequest(format!("provider: there is no LDAP provider {provider:?}")));
    };
    let identity = match ldap::authenticate(directory, username, password).await {
        Ok(Some(identity)) => identity,
        Ok(None) => return Ok(None),
        Err(e) => return Err(api_error(e)),
    };
    let Some(grant) = mapping::grant(&directory.map, &identity.groups, Matching::IgnoreCase) else {
        account::revoke(state.store.as_ref(), &directory.id, &identity).await?;
        return Err(api_error(outside(username, &directory.name)));
    };
    let now_ms = state.clock.now_ms();
    account::sign_in(state.store.as_ref(), &directory.id, &identity, &grant, now_ms)
        .await
        .map(Some)
        .map_err(api_error)
}

/// A provider id that is not configured (a stale link): a 404 rather than the login page.
fn unknown(id: &str) -> Response {
    ApiError::NotFound(format!("there is no OpenID Connect provider {id:?}")).into_response()
}

fn outside(username: &str, provider: &str) -> SsoError {
    SsoError::NotMapped(format!(
        "{username:?} signed in with {provider} but is in none of the groups jobwheel is set up to admit; \
         ask an administrator to add you to one"
    ))
}

fn api_error(e: SsoError) -> ApiError {
    match e {
        SsoError::Provider(message) => ApiError::BadGateway(message),
        SsoError::Refused(message)
        | SsoError::NotMapped(message)
        | SsoError::NameTaken(message)
        | SsoError::Expired(message) => ApiError::Forbidden(message),
        SsoError::Store(e) => e.into(),
    }
}

fn oidc_provider<'a>(state: &'a MgmtState, id: &str) -> Option<(&'a OidcProvider, String)> {
    let provider = state.sso.oidc(id)?;
    Some((provider, state.sso.config.callback_url(id)?))
}

/// The UI at `fragment`, under the configured public URL.
fn home(state: &MgmtState, fragment: &str) -> String {
    let base = state.sso.config.public_url.as_deref().unwrap_or("").trim_end_matches('/');
    format!("{base}/{fragment}")
}

/// The login page with `message` shown (as text: the UI never parses it as HTML).
/// Back to the login page with the refusal's code only (N15): the page has its own text for
/// each code and shows nothing it reads from the URL.
fn back_to_login(state: &MgmtState, error: &SsoError) -> Response {
    redirect(&home(state, &format!("#/login?error={}", error.code())))
}

fn redirect(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::SEE_OTHER, [(header::LOCATION, value)]).into_response(),
        Err(_) => {
            ApiError::BadGateway("the provider's login address is not a valid URL".to_owned()).into_response()
        }
    }
}

/// `SameSite=Lax`, unlike the session cookie: the provider sends the browser back with a
/// cross-site top-level GET, which `Strict` would strip the cookie from.
/// Whether cookies are `Secure` (and the login cookie `__Host-`): with `--secure-cookie`, or
/// when the admin's `public_url` is https (N17: the URL browsers are sent back to says so).
pub(crate) fn secure_login(state: &MgmtState) -> bool {
    let https = state
        .sso
        .config
        .public_url
        .as_deref()
        .is_some_and(|u| u.to_ascii_lowercase().starts_with("https://"));
    state.secure_cookie || https
}

fn login_cookie(value: &str, max_age: i64, secure: bool) -> HeaderValue {
    let cookie = if secure {
        format!("{HOST_LOGIN_COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}; Secure")
    } else {
        format!("{LOGIN_COOKIE}={value}; Path=/api/v1/sso/oidc/; HttpOnly; SameSite=Lax; Max-Age={max_age}")
    };
    HeaderValue::from_str(&cookie).expect("sealed values are hex")
}

async fn audit(
    state: &MgmtState,
    client: String,
    user: Option<&UserRow>,
    username: &str,
    action: &str,
    detail: serde_json::Value,
) {
    let entry = NewAudit {
        at_ms: state.clock.now_ms(),
        user_id: user.map(|u| u.id),
        username: username.chars().take(50).collect(),
        client,
        action: action.to_owned(),
        target: String::new(),
        detail: Some(detail.to_string()),
        before_json: None,
        after_json: None,
    };
    store_entry(state, &entry).await;
}
