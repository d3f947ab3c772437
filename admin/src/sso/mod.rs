//! Single sign-on (docs/sso.md): OpenID Connect providers (`oidc.rs`) and LDAP directories
//! (`ldap.rs`) from the settings file (`config.rs`), their groups turned into jobwheel's role
//! and executor groups (`mapping.rs`), and the jobwheel user a person signs in as, created at
//! the first login and brought in line with the mapping at every one (`account.rs`).
//!
//! The HTTP edge (`http/mgmt/sso.rs`, `http/mgmt/session.rs`) turns a signed-in [`Identity`] into
//! the same session a password login makes.

pub mod account;
pub mod config;
pub mod discovery;
pub mod ldap;
pub mod mapping;
pub mod oidc;

use std::time::Duration;

pub use config::{LocalPasswords, SsoConfig, SsoConfigError};

/// Who a provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The provider's stable id for the person: the ID token's `sub`, the LDAP bind DN.
    pub subject: String,
    /// The jobwheel username (a claim, or the LDAP login name).
    pub username: String,
    /// The provider's groups, as the mapping names them.
    pub groups: Vec<String>,
}

/// Why a single sign-on login did not end in a session. Messages name no secret.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    /// The provider could not be asked, or answered something unusable.
    #[error("{0}")]
    Provider(String),
    /// The person is known but may not use jobwheel.
    #[error("{0}")]
    Refused(String),
    /// The provider vouched for the person, but they are in no mapped group.
    #[error("{0}")]
    NotMapped(String),
    /// A local user has the name the provider gives the person.
    #[error("{0}")]
    NameTaken(String),
    /// The sign-in's cookie is missing, expired or from another login.
    #[error("{0}")]
    Expired(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

impl SsoError {
    /// What the login page is told (`#/login?error=<code>`): a code from a fixed list that the
    /// page turns into its own text, never text from the URL (review N15: a link could
    /// otherwise put any words on the real login page). The details are in the audit log.
    pub fn code(&self) -> &'static str {
        match self {
            SsoError::Provider(_) => "provider",
            SsoError::Refused(_) => "refused",
            SsoError::NotMapped(_) => "not_mapped",
            SsoError::NameTaken(_) => "name_taken",
            SsoError::Expired(_) => "expired",
            SsoError::Store(_) => "internal",
        }
    }
}

/// The configured providers and the client they are reached with.
#[derive(Debug)]
pub struct Sso {
    pub config: SsoConfig,
    /// For OpenID Connect: redirects are not followed (the library's advice: a provider's
    /// endpoint must not send the client secret on to another host).
    pub http: reqwest::Client,
    /// The providers' metadata and keys, read once every few minutes (N6).
    pub discovery: discovery::DiscoveryCache,
    /// Logins started per client address (`GET …/login`; N6).
    pub login_starts: LoginStarts,
}

/// `GET /api/v1/sso/oidc/{id}/login` per client address: [`LOGIN_STARTS_PER_MINUTE`], then 429.
pub type LoginStarts = governor::DefaultKeyedRateLimiter<std::net::IpAddr>;

/// Logins a client address may start per minute: a person needs one, a retry or two.
pub const LOGIN_STARTS_PER_MINUTE: u32 = 20;

/// How long a provider may take to answer one request.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

impl Sso {
    /// Fails only when the TLS backend cannot start; the default client it would otherwise
    /// fall back to follows redirects, which the providers' client must not.
    pub fn new(config: SsoConfig) -> Result<Sso, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()?;
        let per_minute =
            std::num::NonZeroU32::new(LOGIN_STARTS_PER_MINUTE).unwrap_or(std::num::NonZeroU32::MIN);
        let login_starts = governor::RateLimiter::keyed(governor::Quota::per_minute(per_minute));
        Ok(Sso { config, http, discovery: discovery::DiscoveryCache::default(), login_starts })
    }

    /// No providers, passwords for everyone: an admin started without `--sso-config`.
    pub fn disabled() -> Result<Sso, reqwest::Error> {
        Sso::new(SsoConfig {
            public_url: None,
            local_passwords: LocalPasswords::Everyone,
            oidc: Vec::new(),
            ldap: Vec::new(),
            reconfirm_secs: config::DEFAULT_RECONFIRM_SECS,
        })
    }

    pub fn oidc(&self, id: &str) -> Option<&config::OidcProvider> {
        self.config.oidc.iter().find(|p| p.id == id)
    }

    pub fn ldap(&self, id: &str) -> Option<&config::LdapProvider> {
        self.config.ldap.iter().find(|p| p.id == id)
    }
}

/// An error and its sources on one line (the crates' top-level messages are often generic,
/// "Request failed", with the cause below).
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let next = cause.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = cause.source();
    }
    text
}
