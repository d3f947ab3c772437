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
use super::published::{Weakness, token_weakness};
use crate::sealing::SecretBox;
use crate::store::{GroupId, Store, StoreError, StoredToken, VariableOwner};

/// How long a snapshot of the tokens is used before the next request reads them again.
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(5);

/// The sealing name of a group's token; a variable cannot be called this (names are
/// identifiers), so a sealed variable never opens as a token or the reverse.
pub const SEAL_NAME: &str = "xxl-job-access-token";

/// Longest token (`xxl_job_group.access_token` is `varchar(255)` in upstream 3.5).
pub const MAX_TOKEN_CHARS: usize = 255;

/// Why a group's stored token is refused: the group stays fenced off (its callers are
/// refused, the global token does not act for it) until an administrator sets a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// A token everybody knows or could guess (upstream 3.5's seed `default_token`, review N1).
    Weak(Weakness),
    /// Sealed under another key, or damaged: it cannot be opened (review N10, fail closed).
    Unopenable,
}

impl TokenRefusal {
    /// The reason as the log, the API and the UI name it.
    pub fn describe(self) -> &'static str {
        match self {
            TokenRefusal::Weak(weakness) => weakness.describe(),
            TokenRefusal::Unopenable => "cannot be opened with this admin's secret key",
        }
    }
}

/// One group's token and AppName.
pub struct GroupCredential {
    /// The group.
    pub group: GroupId,
    /// Its AppName: sent as `XXL-JOB-APPNAME` to its executors, expected from its callers.
    pub app_name: String,
    token: String,
    digest: AccessToken,
    refused: Option<TokenRefusal>,
}

impl GroupCredential {
    fn new(group: GroupId, app_name: String, token: String) -> Self {
        let digest = AccessToken::new(&token);
        let refused = token_weakness(&token).map(TokenRefusal::Weak);
        Self { group, app_name, token, digest, refused }
    }

    fn unopenable(group: GroupId, app_name: String) -> Self {
        let digest = AccessToken::refusing();
        Self { group, app_name, token: String::new(), digest, refused: Some(TokenRefusal::Unopenable) }
    }

    /// The token, for requests to the group's executors (empty when it cannot be opened, so
    /// they refuse the admin too rather than hear the global token).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether `given` is the token, compared on digests in constant time (as the global
    /// token is: neither its bytes nor its length leak through timing). Never for a refused
    /// token, whatever is given.
    pub fn matches(&self, given: &[u8]) -> bool {
        let right = self.digest.matches_value(given);
        right && self.refused.is_none()
    }

    /// Why the stored token is not accepted, if it is not.
    pub fn refused(&self) -> Option<TokenRefusal> {
        self.refused
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

    /// Every group with a token of its own and whether that token is refused (N1, N10), read as
    /// stored now (the snapshot is renewed with it): the Executors page shows a token another
    /// admin just set.
    pub async fn current_states(&self) -> Result<HashMap<GroupId, Option<TokenRefusal>>, StoreError> {
        self.invalidate();
        Ok(self.snapshot().await?.by_group.iter().map(|(id, c)| (*id, c.refused())).collect())
    }

    /// Logs every group whose stored token is refused, naming the group and the reason, so an
    /// operator who adopted an upstream database learns at start which tokens to replace.
    pub async fn report_refused(&self) -> Result<usize, StoreError> {
        let snapshot = self.snapshot().await?;
        let mut refused = 0;
        for credential in snapshot.by_group.values() {
            if let Some(reason) = credential.refused() {
                refused += 1;
                tracing::error!(
                    group = credential.group.0,
                    app = %credential.app_name,
                    reason = reason.describe(),
                    "this group's access token is refused: its executors and scripts cannot call the admin until an \
                     administrator sets a new one (Executors page, Token; or PUT /api/v1/groups/{{id}}/access-token with no body)"
                );
            }
        }
        // Read for the log only: the first request reads the tokens as stored by then.
        self.invalidate();
        Ok(refused)
    }

    /// The groups that have a token of their own, usable or refused: the global token does not
    /// act for them.
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
            let credential = match opened {
                Ok(token) => GroupCredential::new(row.group_id, row.app_name, token),
                Err(error) => {
                    // Fenced off, not skipped: skipped, the group would fall back to the global
                    // token, and any holder of that could register under its AppName (N10).
                    tracing::error!(group = row.group_id.0, app = %row.app_name, %error, "cannot open a group's access token; the group is fenced off until it is set again");
                    GroupCredential::unopenable(row.group_id, row.app_name)
                }
            };
            let credential = Arc::new(credential);
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
