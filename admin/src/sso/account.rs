//! The jobwheel user a single sign-on identity signs in as: found by `(provider, subject)`,
//! created at the first login, and given the role and executor groups of the provider's mapping
//! at every login. Removing someone from every mapped group at the provider revokes the account
//! at their next sign-in attempt ([`revoke`]), and otherwise within `reconfirm_secs`: each
//! sign-in confirms the identity, and a session or API token is honoured only that long after.

use super::mapping::Grant;
use super::{Identity, SsoError};
use crate::store::{Store, StoreError, User, UserRow};

/// `xxl_job_user.password` of accounts made by single sign-on: no password (argon2 or upstream's
/// MD5/SHA-256) ever verifies against it, so the account has no local login.
pub const NO_PASSWORD: &str = "!sso";
/// `xxl_job_user.username` is `varchar(50)` in upstream's schema.
const USERNAME_CHARS: usize = 50;

/// The user `identity` signs in as under `grant`, created or updated.
pub async fn sign_in(
    store: &dyn Store,
    provider: &str,
    identity: &Identity,
    grant: &Grant,
    now_ms: i64,
) -> Result<UserRow, SsoError> {
    let groups = store.list_groups().await?;
    let role = i16::from(grant.admin);
    let permission = grant.permission(&groups, provider);
    if let Some(user_id) = store.find_identity(provider, &identity.subject).await? {
        match store.load_user(user_id).await? {
            Some(mut row) => {
                if row.user.role != role || row.user.permission != permission {
                    row.user.role = role;
                    row.user.permission = permission;
                    store.update_user(row.id, &row.user).await?;
                    tracing::info!(provider, username = %row.user.username, role, "rights updated from the provider's groups");
                }
                store.confirm_identity(provider, &identity.subject, now_ms).await?;
                return Ok(row);
            }
            // Its user was deleted behind the identity's back (an older admin, a manual
            // DELETE): start over as at a first login.
            None => {
                store.delete_user_identities(user_id).await?;
            }
        }
    }
    let username = identity.username.as_str();
    if username.chars().count() > USERNAME_CHARS {
        return Err(SsoError::Refused(format!(
            "the user name {username:?} is longer than jobwheel's {USERNAME_CHARS} characters"
        )));
    }
    if store.find_user(username).await?.is_some() {
        return Err(taken(username, provider));
    }
    let user = User {
        username: username.to_owned(),
        password: NO_PASSWORD.to_owned(),
        token: None,
        role,
        permission,
    };
    let id = match store.add_user(&user).await {
        Ok(id) => id,
        // Someone took the name between the check and the insert (or the same person's second
        // tab): the same answer as above.
        Err(StoreError::Database(sqlx::Error::Database(e))) if e.is_unique_violation() => {
            return Err(taken(username, provider));
        }
        Err(e) => return Err(e.into()),
    };
    store.add_identity(provider, &identity.subject, id, now_ms).await?;
    tracing::info!(provider, username, role, "created a user at its first single sign-on");
    store
        .load_user(id)
        .await?
        .ok_or_else(|| SsoError::Refused(format!("user {username:?} vanished as it was created")))
}

/// The provider signed `identity` in but mapped it to no group (review N4): if it has an account,
/// that account loses its rights, its sessions and its API tokens now, rather than at the end
/// of its reconfirmation time. Nothing happens for an identity never seen.
pub async fn revoke(store: &dyn Store, provider: &str, identity: &Identity) -> Result<(), StoreError> {
    let Some(user_id) = store.find_identity(provider, &identity.subject).await? else { return Ok(()) };
    let Some(mut row) = store.load_user(user_id).await? else { return Ok(()) };
    row.user.role = 0;
    row.user.permission = None;
    store.update_user(row.id, &row.user).await?;
    let sessions = store.delete_user_sessions(row.id, None).await?;
    let tokens = store.delete_user_tokens(row.id).await?;
    tracing::warn!(
        provider,
        username = %row.user.username,
        sessions,
        tokens,
        "the provider no longer puts this person in a mapped group: rights, sessions and API tokens revoked"
    );
    Ok(())
}

fn taken(username: &str, provider: &str) -> SsoError {
    SsoError::NameTaken(format!(
        "a jobwheel user named {username:?} already exists and does not sign in with {provider}; \
         an administrator can rename or delete that user"
    ))
}
