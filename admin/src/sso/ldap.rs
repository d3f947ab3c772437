//! LDAP sign-in on `ldap3`: bind as the user with the password they typed (the directory checks
//! it; jobwheel keeps no copy), then search the group base for the user's groups, on the same
//! connection and with the user's own rights.

use std::time::Duration;

use ldap3::{LdapConnAsync, LdapConnSettings, LdapError, Scope, SearchEntry, dn_escape, ldap_escape};

use super::config::LdapProvider;
use super::{Identity, SsoError};

/// LDAP's `invalidCredentials` result code.
const INVALID_CREDENTIALS: u32 = 49;

/// `Ok(None)` when the directory refuses the name or password; `Err` when it cannot be asked.
pub async fn authenticate(
    provider: &LdapProvider,
    username: &str,
    password: &str,
) -> Result<Option<Identity>, SsoError> {
    // An empty password is an "unauthenticated bind", which many directories accept for any
    // name (RFC 4513 5.1.2): it must never reach the server as a login.
    if password.is_empty() || username.is_empty() {
        return Ok(None);
    }
    let timeout = Duration::from_secs(provider.timeout_secs);
    let settings = LdapConnSettings::new().set_conn_timeout(timeout).set_starttls(provider.starttls);
    let (conn, mut ldap) = LdapConnAsync::with_settings(settings, &provider.url)
        .await
        .map_err(|e| SsoError::Provider(format!("cannot reach the directory {}: {e}", provider.url)))?;
    ldap3::drive!(conn);
    let bind_dn = provider.bind_dn.replace("{username}", &dn_escape(username));
    let bound =
        ldap.with_timeout(timeout).simple_bind(&bind_dn, password).await.map_err(unreachable(provider))?;
    if bound.rc == INVALID_CREDENTIALS {
        let _ = ldap.unbind().await;
        return Ok(None);
    }
    bound.success().map_err(|e| SsoError::Provider(format!("the directory refused the bind: {e}")))?;
    let filter = provider
        .group_filter
        .replace("{dn}", &ldap_escape(bind_dn.as_str()))
        .replace("{username}", &ldap_escape(username));
    let attribute = provider.group_attribute.as_str();
    // The entry's whole name (N5): no attribute to fetch, `1.1` asks for none.
    let by_dn = attribute.eq_ignore_ascii_case("dn") || attribute.eq_ignore_ascii_case("distinguishedName");
    let wanted = if by_dn { "1.1" } else { attribute };
    let searched = ldap
        .with_timeout(timeout)
        .search(&provider.group_base, Scope::Subtree, &filter, vec![wanted])
        .await
        .map_err(unreachable(provider))?
        .success();
    let _ = ldap.unbind().await;
    let (entries, _) = searched.map_err(|e| SsoError::Provider(format!("the group search failed: {e}")))?;
    let mut groups = Vec::new();
    for entry in entries {
        let entry = SearchEntry::construct(entry);
        if by_dn {
            groups.push(normal_dn(&entry.dn));
            continue;
        }
        let values =
            entry.attrs.iter().filter(|(name, _)| name.eq_ignore_ascii_case(attribute)).flat_map(|(_, v)| v);
        groups.extend(values.cloned());
    }
    Ok(Some(Identity { subject: bind_dn, username: username.to_owned(), groups }))
}

/// A distinguished name as the mapping compares it: no spaces around `,` and `=` (directories
/// write `cn=a, ou=b` and `cn=a,ou=b` for one entry); case is ignored by the comparison.
pub(crate) fn normal_dn(dn: &str) -> String {
    dn.split(',')
        .map(|rdn| rdn.split('=').map(str::trim).collect::<Vec<_>>().join("="))
        .collect::<Vec<_>>()
        .join(",")
}

fn unreachable(provider: &LdapProvider) -> impl Fn(LdapError) -> SsoError + '_ {
    move |e| SsoError::Provider(format!("the directory {} did not answer: {e}", provider.url))
}
