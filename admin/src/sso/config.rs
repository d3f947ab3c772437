//! The single sign-on settings file (`--sso-config`, docs/sso.md): OpenID Connect and LDAP
//! providers, how their groups map to jobwheel's role and executor groups, and whether local
//! passwords stay on for everyone.
//!
//! A file rather than flags because a mapping is a list of records, and rather than rows in the
//! database because it holds a client secret that belongs with the admin's other settings (the
//! packaged `admin.env` is root-only for the same reason). It is read once at start; a mistake
//! stops the admin with the line that is wrong.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use serde::Deserialize;

/// What the settings file says, checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsoConfig {
    /// The admin's address as browsers reach it (`https://jobwheel.example.com`); OpenID
    /// Connect callbacks go to `{public_url}/api/v1/sso/oidc/{id}/callback`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Who may still sign in with a password kept by jobwheel.
    #[serde(default)]
    pub local_passwords: LocalPasswords,
    #[serde(default)]
    pub oidc: Vec<OidcProvider>,
    #[serde(default)]
    pub ldap: Vec<LdapProvider>,
    /// Seconds a single sign-on account's sessions and API tokens are honoured after the person
    /// last signed in through the provider (default a day): removing someone at the provider
    /// takes their access away within this time even if they never sign in again (N4).
    #[serde(default = "default_reconfirm_secs")]
    pub reconfirm_secs: u64,
}

fn default_reconfirm_secs() -> u64 {
    DEFAULT_RECONFIRM_SECS
}

/// `reconfirm_secs` when the settings do not say: a day.
pub const DEFAULT_RECONFIRM_SECS: u64 = 24 * 3600;

/// `local_passwords`: `everyone` (the default) or `administrators` (every other account signs
/// in through a provider).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalPasswords {
    #[default]
    Everyone,
    Administrators,
}

/// One OpenID Connect provider (`[[oidc]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcProvider {
    /// Short name in URLs and on users' identities (`[a-z0-9-]`, at most 32).
    pub id: String,
    /// What the login page's button says.
    pub name: String,
    /// The issuer URL; its `/.well-known/openid-configuration` is read at each login.
    pub issuer: String,
    pub client_id: String,
    /// Absent for a public client (PKCE alone).
    #[serde(default)]
    pub client_secret: Option<Secret>,
    /// Scopes besides `openid` (default `profile`, `email`, `groups`).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The claim that names the jobwheel user (a dotted path for nested claims).
    #[serde(default = "default_username_claim")]
    pub username_claim: String,
    /// The claim holding the user's groups or roles, e.g. Keycloak's `realm_access.roles`.
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// Which groups give which rights; a user in none of them is refused.
    pub map: Vec<GroupMapping>,
    /// Accept an `http://` issuer, whose keys a network attacker could swap to forge ID tokens
    /// (test benches only; review N17).
    #[serde(default)]
    pub insecure: bool,
}

/// One LDAP directory (`[[ldap]]`): bind as the user, then search for the user's groups.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LdapProvider {
    pub id: String,
    pub name: String,
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    /// Upgrade an `ldap://` connection with StartTLS before the password is sent.
    #[serde(default)]
    pub starttls: bool,
    /// Accept a plain `ldap://` URL without StartTLS, which sends passwords in the clear (test
    /// benches only; review N17).
    #[serde(default)]
    pub insecure: bool,
    /// The name to bind as; `{username}` is replaced by the escaped login name
    /// (`uid={username},ou=people,dc=example,dc=org`, or `{username}@corp.example` for AD).
    pub bind_dn: String,
    /// Where groups are searched (subtree).
    pub group_base: String,
    /// Which entries are the user's groups; `{dn}` is the bound name and `{username}` the login
    /// name, both escaped for a filter.
    #[serde(default = "default_group_filter")]
    pub group_filter: String,
    /// What of a group entry the mapping names: `dn` (the default), the entry's whole
    /// distinguished name, so a group of the same `cn` in another branch of the directory is
    /// another group (review N5); or an attribute such as `cn`, which any entry under
    /// `group_base` may carry.
    #[serde(default = "default_group_attribute")]
    pub group_attribute: String,
    /// Seconds for connecting and for each operation.
    #[serde(default = "default_ldap_timeout")]
    pub timeout_secs: u64,
    pub map: Vec<GroupMapping>,
}

/// One rule of a provider's `map`: members of `group` get `role` and the executor groups named.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupMapping {
    /// The provider's group (claim value or the LDAP group's attribute).
    pub group: String,
    #[serde(default)]
    pub role: MappedRole,
    /// AppNames of the executor groups a normal user may manage (ignored for administrators).
    #[serde(default)]
    pub executor_groups: Vec<String>,
}

/// The jobwheel role a mapping gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MappedRole {
    Admin,
    #[default]
    User,
}

/// A secret from the settings file: never printed, never in an error.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

fn default_scopes() -> Vec<String> {
    ["profile", "email", "groups"].map(str::to_owned).to_vec()
}
fn default_username_claim() -> String {
    "preferred_username".to_owned()
}
fn default_groups_claim() -> String {
    "groups".to_owned()
}
fn default_group_filter() -> String {
    "(|(member={dn})(uniqueMember={dn})(memberUid={username}))".to_owned()
}
fn default_group_attribute() -> String {
    "dn".to_owned()
}
fn default_ldap_timeout() -> u64 {
    5
}

/// Why the settings file was refused.
#[derive(Debug, thiserror::Error)]
pub enum SsoConfigError {
    #[error("cannot read the SSO settings file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the SSO settings file {path} is not valid: {message}")]
    Parse { path: String, message: String },
    #[error("the SSO settings file {path}: {message}")]
    Invalid { path: String, message: String },
}

impl SsoConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<SsoConfig, SsoConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| SsoConfigError::Read { path: shown.clone(), source })?;
        // toml's message names the line and the key, never a value.
        let config: SsoConfig = toml::from_str(&text)
            .map_err(|e| SsoConfigError::Parse { path: shown.clone(), message: e.to_string() })?;
        config.check().map_err(|message| SsoConfigError::Invalid { path: shown, message })?;
        Ok(config)
    }

    /// Parses settings from a string (tests and [`SsoConfig::load`]).
    pub fn parse(text: &str) -> Result<SsoConfig, String> {
        let config: SsoConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// The callback URL registered at the provider `id`.
    pub fn callback_url(&self, id: &str) -> Option<String> {
        let base = self.public_url.as_deref()?.trim_end_matches('/');
        Some(format!("{base}/api/v1/sso/oidc/{id}/callback"))
    }

    fn check(&self) -> Result<(), String> {
        let mut ids = BTreeSet::new();
        let kinds = self
            .oidc
            .iter()
            .map(|p| (&p.id, &p.name, &p.map))
            .chain(self.ldap.iter().map(|p| (&p.id, &p.name, &p.map)));
        for (id, name, map) in kinds {
            let valid = !id.is_empty()
                && id.len() <= 32
                && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !valid {
                return Err(format!("provider id {id:?} must be 1 to 32 of a-z, 0-9 and -"));
            }
            if !ids.insert(id.as_str()) {
                return Err(format!("provider id {id:?} is used twice"));
            }
            if name.trim().is_empty() {
                return Err(format!("provider {id:?} needs a name (the login page shows it)"));
            }
            if map.is_empty() {
                return Err(format!("provider {id:?} has no [[…map]]: nobody could sign in with it"));
            }
            if let Some(rule) = map.iter().find(|m| m.group.trim().is_empty()) {
                return Err(format!("provider {id:?} maps an empty group ({:?})", rule.executor_groups));
            }
        }
        if !self.oidc.is_empty() {
            let Some(url) = self.public_url.as_deref() else {
                return Err(
                    "public_url is required with an [[oidc]] provider (its callbacks go there)".to_owned()
                );
            };
            if !is_http_url(url) {
                return Err(format!("public_url {url:?} is not an http(s) URL"));
            }
        }
        for provider in &self.oidc {
            if !is_http_url(&provider.issuer) {
                return Err(format!(
                    "provider {:?}: issuer {:?} is not an http(s) URL",
                    provider.id, provider.issuer
                ));
            }
            if provider.issuer.to_ascii_lowercase().starts_with("http://") && !provider.insecure {
                return Err(format!(
                    "provider {:?}: issuer {:?} is plain http, where anyone on the network could swap its keys and \
                     forge sign-ins; use https (or insecure = true on a test bench)",
                    provider.id, provider.issuer
                ));
            }
            if provider.client_id.trim().is_empty() {
                return Err(format!("provider {:?} needs a client_id", provider.id));
            }
        }
        for provider in &self.ldap {
            let url = provider.url.to_ascii_lowercase();
            if !(url.starts_with("ldap://") || url.starts_with("ldaps://")) {
                return Err(format!(
                    "provider {:?}: url {:?} is not ldap:// or ldaps://",
                    provider.id, provider.url
                ));
            }
            if url.starts_with("ldap://") && !provider.starttls && !provider.insecure {
                return Err(format!(
                    "provider {:?}: {:?} without starttls = true sends passwords in the clear; use ldaps://, \
                     starttls = true (or insecure = true on a test bench)",
                    provider.id, provider.url
                ));
            }
            if !provider.bind_dn.contains("{username}") {
                return Err(format!("provider {:?}: bind_dn must contain {{username}}", provider.id));
            }
            if !(1..=60).contains(&provider.timeout_secs) {
                return Err(format!("provider {:?}: timeout_secs must be 1 to 60", provider.id));
            }
        }
        Ok(())
    }
}

fn is_http_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}
