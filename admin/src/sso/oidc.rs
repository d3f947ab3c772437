//! OpenID Connect sign-in on the `openidconnect` crate: the authorization code flow with PKCE
//! and a nonce, the ID token verified against the issuer's keys, and the user's claims read
//! from the ID token and the UserInfo endpoint (many providers, `oidc-provider` among them, put
//! `groups` only in UserInfo).
//!
//! The provider's metadata and keys come from the admin's cache (`discovery.rs`, five minutes),
//! read again when an ID token is refused.

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreGenderClaim,
    CoreJsonWebKey, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreRevocableToken,
    CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, Client, ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields,
    EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields, Nonce, OAuth2TokenResponse as _,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, StandardErrorResponse, StandardTokenResponse,
    TokenResponse as _, UserInfoClaims,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::OidcProvider;
use super::discovery::DiscoveryCache;
use super::{Identity, SsoError, chain};

/// Every claim the provider sends besides the standard ones (`groups`, `realm_access`, …).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct OtherClaims {
    #[serde(flatten)]
    claims: Map<String, Value>,
}
impl AdditionalClaims for OtherClaims {}

type Fields = IdTokenFields<
    OtherClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type Tokens = StandardTokenResponse<Fields, CoreTokenType>;
/// `CoreClient` with [`OtherClaims`] kept, as discovery builds it.
type OidcClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    Tokens,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// What the browser carries (sealed, in a cookie) from the redirect to the provider back to the
/// callback: it binds the callback to the browser that started the login.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingLogin {
    pub provider: String,
    /// The OAuth `state`; the callback's must equal it.
    pub state: String,
    pub nonce: String,
    /// The PKCE verifier whose challenge went to the provider.
    pub verifier: String,
    /// Epoch ms after which the callback is refused.
    pub expires_ms: i64,
}

/// The provider's authorization URL for a new login, and what the callback will need.
pub async fn begin(
    provider: &OidcProvider,
    callback: &str,
    (http, cache): (&reqwest::Client, &DiscoveryCache),
    expires_ms: i64,
) -> Result<(String, PendingLogin), SsoError> {
    let client = discover(provider, callback, http, cache).await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random)
        .set_pkce_challenge(challenge);
    for scope in provider.scopes.iter().filter(|s| s.as_str() != "openid") {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state, nonce) = request.url();
    let pending = PendingLogin {
        provider: provider.id.clone(),
        state: state.secret().clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
        expires_ms,
    };
    Ok((url.to_string(), pending))
}

/// Redeems the authorization `code` and returns who signed in, with their groups.
pub async fn finish(
    provider: &OidcProvider,
    callback: &str,
    (http, cache): (&reqwest::Client, &DiscoveryCache),
    pending: PendingLogin,
    code: String,
) -> Result<Identity, SsoError> {
    let client = discover(provider, callback, http, cache).await?;
    let tokens = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| SsoError::Provider(format!("the provider has no token endpoint: {e}")))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(http)
        .await
        .map_err(|e| SsoError::Provider(format!("the code was not redeemed: {}", chain(&e))))?;
    let id_token = tokens
        .id_token()
        .ok_or_else(|| SsoError::Provider("the provider answered without an ID token".to_owned()))?;
    let claims = match id_token.claims(&client.id_token_verifier(), &Nonce::new(pending.nonce)) {
        Ok(claims) => claims,
        Err(e) => {
            // Perhaps signed with a key published after the cache was filled.
            cache.forget(&provider.issuer).await;
            return Err(SsoError::Provider(format!("the ID token was refused: {}", chain(&e))));
        }
    };
    let subject = claims.subject().clone();
    let mut all = to_object(serde_json::to_value(claims))?;
    if let Ok(request) = client.user_info(tokens.access_token().clone(), Some(subject.clone())) {
        let info: UserInfoClaims<OtherClaims, CoreGenderClaim> = request
            .request_async(http)
            .await
            .map_err(|e| SsoError::Provider(format!("the UserInfo request failed: {}", chain(&e))))?;
        // The ID token's claims win; UserInfo adds what the token left out.
        for (name, value) in to_object(serde_json::to_value(info))? {
            all.entry(name).or_insert(value);
        }
    }
    let all = Value::Object(all);
    let username = match claim(&all, &provider.username_claim) {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        _ => {
            return Err(SsoError::Provider(format!(
                "the provider sent no {:?} claim to name the user by (username_claim)",
                provider.username_claim
            )));
        }
    };
    check_username(&username)?;
    // An address the person typed but never proved is anybody's to claim (N16).
    if provider.username_claim == "email" && claim(&all, "email_verified") != Some(&Value::Bool(true)) {
        return Err(SsoError::Refused(
            "the provider has not verified this e-mail address, which names the jobwheel user: verify it there first"
                .to_owned(),
        ));
    }
    Ok(Identity {
        subject: subject.as_str().to_owned(),
        username,
        groups: groups(claim(&all, &provider.groups_claim)),
    })
}

async fn discover(
    provider: &OidcProvider,
    callback: &str,
    http: &reqwest::Client,
    cache: &DiscoveryCache,
) -> Result<OidcClient, SsoError> {
    let metadata = cache.metadata(&provider.issuer, http).await?;
    let secret = provider.client_secret.as_ref().map(|s| ClientSecret::new(s.expose().to_owned()));
    let redirect = RedirectUrl::new(callback.to_owned())
        .map_err(|e| SsoError::Provider(format!("callback URL {callback:?}: {e}")))?;
    Ok(OidcClient::from_provider_metadata(metadata, ClientId::new(provider.client_id.clone()), secret)
        .set_redirect_uri(redirect))
}

/// A username from a provider follows the local accounts' characters — ASCII letters, digits,
/// `_`, `.`, `@`, `-` — so a look-alike of another account (`ad\u{200b}min`, Cyrillic letters)
/// cannot be signed in as (review N16); up to upstream's 50 characters, as e-mail addresses are
/// often longer than local names' 20.
fn check_username(name: &str) -> Result<(), SsoError> {
    let length = name.chars().count();
    let characters = name.chars().all(|c| c.is_ascii_alphanumeric() || "_.@-".contains(c));
    if (1..=50).contains(&length) && characters {
        return Ok(());
    }
    Err(SsoError::Refused(format!(
        "the provider's user name {:?} is not one jobwheel accepts (1 to 50 ASCII letters, digits, '_', '.', '@', '-')",
        name.escape_default().to_string()
    )))
}

fn to_object(value: Result<Value, serde_json::Error>) -> Result<Map<String, Value>, SsoError> {
    match value {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(SsoError::Provider("the provider's claims are not a JSON object".to_owned())),
    }
}

/// The claim named `path`: the whole name first (claims may be URLs with dots), then as a
/// dotted path into nested objects (Keycloak's `realm_access.roles`).
pub(crate) fn claim<'a>(claims: &'a Value, path: &str) -> Option<&'a Value> {
    if let Some(value) = claims.get(path) {
        return Some(value);
    }
    path.split('.').try_fold(claims, |value, part| value.get(part))
}

/// A groups claim as names: a list of strings, or one string.
pub(crate) fn groups(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_found_by_name_or_by_dotted_path() {
        let claims = serde_json::json!({
            "https://example.com/groups": ["a"],
            "realm_access": { "roles": ["ops", 7, "dev"] },
            "team": "blue",
        });
        assert_eq!(groups(claim(&claims, "https://example.com/groups")), ["a"]);
        assert_eq!(groups(claim(&claims, "realm_access.roles")), ["ops", "dev"]);
        assert_eq!(groups(claim(&claims, "team")), ["blue"]);
        assert!(groups(claim(&claims, "missing.path")).is_empty());
    }
}
