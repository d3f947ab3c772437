//! Per-group access tokens (xxl-job 3.5's per-executor tokens), as the HTTP edge and the engine
//! read them.
//!
//! A group with its own token is a "3.5 group": its executors register, call back and download
//! modules with that token and the group's AppName (`XXL-JOB-ACCESS-TOKEN` +
//! `XXL-JOB-APPNAME`), scripts use the pair for xxl-job 3.5's job OpenAPI, and the admin calls
//! the group's executors with 3.5's protocol (`/trigger`, both headers). The global access
//! token keeps working for every other group, so 2.x/3.x executors and 3.5-style ones share
//! one admin.
//!
//! Tokens are stored sealed (`crate::sealing`, owner = the group, name [`SEAL_NAME`]). Every
//! executor request and every trigger of a 3.5 group needs one, so they are read as one
//! snapshot of all groups' tokens, kept for [`SNAPSHOT_TTL`]: a token changed on another admin
//! of the same database is in force here within that time; on this admin at once
//! ([`GroupTokens::invalidate`]).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::AccessToken;
use crate::sealing::SecretBox;
use crate::store::{GroupId, Store, StoreError, StoredToken, VariableOwner};

/// How long a snapshot of the tokens is used before the next request reads them again.
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(5);

/// The sealing name of a group's token; a variable cannot be called this (names are
/// identifiers), so a sealed variable never opens as a token or the reverse.
pub const SEAL_NAME: &str = "xxl-job-access-token";

/// Shortest token the management API accepts (upstream's sample `default_token` is 13).
pub const MIN_TOKEN_CHARS: usize = 8;
/// Longest token (`xxl_job_group.access_token` is `varchar(255)` in upstream 3.5).
pub const MAX_TOKEN_CHARS: usize = 255;

/// One group's token and AppName.
pub struct GroupCredential {
    /// The group.
    pub group: GroupId,
    /// Its AppName: sent as `XXL-JOB-APPNAME` to its executors, expected from its callers.
    pub app_name: String,
    token: String,
    digest: AccessToken,
}

impl GroupCredential {
    fn new(group: GroupId, app_name: String, token: String) -> Self {
        let digest = AccessToken::new(&token);
        Self { group, app_name, token, digest }
    }

    /// The token, for requests to the group's executors.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether `given` is the token, compared on digests in constant time (as the global
    /// token is: neither its bytes nor its length leak through timing).
    pub fn matches(&self, given: &[u8]) -> bool {
        self.digest.matches_value(given)
    }
}

impl std::fmt::Debug for GroupCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCredential")
            .field("group", &self.group)
            .field("app_name", &self.app_name)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Snapshot {
    by_group: HashMap<GroupId, Arc<GroupCredential>>,
    by_app: HashMap<String, Arc<GroupCredential>>,
}

/// The admin's view of every group's token.
pub struct GroupTokens {
    store: Arc<dyn Store>,
    secrets: Arc<SecretBox>,
    current: RwLock<Option<(Instant, Arc<Snapshot>)>>,
    /// One reader at a time refreshes; the others wait for its snapshot.
    refreshing: tokio::sync::Mutex<()>,
}

impl GroupTokens {
    /// Tokens read from `store` and opened with `secrets`.
    pub fn new(store: Arc<dyn Store>, secrets: Arc<SecretBox>) -> Self {
        Self { store, secrets, current: RwLock::new(None), refreshing: tokio::sync::Mutex::new(()) }
    }

    /// Seals `token` as group `group`'s, for [`Store::set_group_token`].
    pub fn seal(secrets: &SecretBox, group: GroupId, token: &str) -> String {
        secrets.seal(VariableOwner::Group(group), SEAL_NAME, token)
    }

    /// `token` in the form the database keeps it: in the clear in `xxl_job_group.access_token`
    /// on an xxl-job 3.5 schema (where a 3.5 admin sharing the database reads and writes it),
    /// sealed everywhere else.
    pub fn stored_form(&self, group: GroupId, token: &str) -> StoredToken {
        if self.store.schema().group_token_column {
            StoredToken::Plain(token.to_owned())
        } else {
            StoredToken::Sealed(Self::seal(&self.secrets, group, token))
        }
    }

    /// The credential of the group whose AppName is `app_name`, if it has a token.
    pub async fn by_app(&self, app_name: &str) -> Result<Option<Arc<GroupCredential>>, StoreError> {
        Ok(self.snapshot().await?.by_app.get(app_name).cloned())
    }

    /// The credential of group `group`, if it has a token.
    pub async fn by_group(&self, group: GroupId) -> Result<Option<Arc<GroupCredential>>, StoreError> {
        Ok(self.snapshot().await?.by_group.get(&group).cloned())
    }

    /// The groups that have a token of their own: the global token does not act for them.
    pub async fn guarded_groups(&self) -> Result<std::collections::HashSet<GroupId>, StoreError> {
        Ok(self.snapshot().await?.by_group.keys().copied().collect())
    }

    /// Forgets the snapshot: the next read sees the tokens as stored now.
    pub fn invalidate(&self) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn fresh(&self) -> Option<Arc<Snapshot>> {
        let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
        current.as_ref().filter(|(at, _)| at.elapsed() < SNAPSHOT_TTL).map(|(_, s)| Arc::clone(s))
    }

    async fn snapshot(&self) -> Result<Arc<Snapshot>, StoreError> {
        if let Some(snapshot) = self.fresh() {
            return Ok(snapshot);
        }
        let _refreshing = self.refreshing.lock().await;
        if let Some(snapshot) = self.fresh() {
            return Ok(snapshot);
        }
        let mut snapshot = Snapshot::default();
        for row in self.store.group_tokens().await? {
            let owner = VariableOwner::Group(row.group_id);
            let opened = match row.token {
                StoredToken::Plain(token) => Ok(token),
                StoredToken::Sealed(sealed) => self.secrets.open(owner, SEAL_NAME, &sealed),
            };
            let token = match opened {
                Ok(token) => token,
                Err(error) => {
                    // That group's callers are refused and its executors called with the
                    // global token until the key is fixed or the token set again.
                    tracing::error!(group = row.group_id.0, app = %row.app_name, %error, "cannot open a group's access token");
                    continue;
                }
            };
            let credential = Arc::new(GroupCredential::new(row.group_id, row.app_name, token));
            snapshot.by_app.insert(credential.app_name.clone(), Arc::clone(&credential));
            snapshot.by_group.insert(credential.group, credential);
        }
        let snapshot = Arc::new(snapshot);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), Arc::clone(&snapshot)));
        Ok(snapshot)
    }
}

impl std::fmt::Debug for GroupTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GroupTokens(..)")
    }
}
