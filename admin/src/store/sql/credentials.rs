//! Login sessions (`jobwheel_session`) and API tokens (`jobwheel_api_token`), both keyed by
//! SHA-256 digests computed by the callers, and single sign-on identities
//! (`jobwheel_user_identity`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::{ApiTokenRow, CredentialStore, NewApiToken, NewSession, SessionRow, StoreError, UserId};

static INSERT_SESSION: Sql = Sql::new(
    "INSERT INTO jobwheel_session (id_hash, user_id, csrf_token, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)",
);
static LOAD_SESSION: Sql = Sql::new(
    "SELECT id_hash, user_id, csrf_token, created_ms, expires_ms \
    FROM jobwheel_session WHERE id_hash = ? AND expires_ms > ?",
);
static DELETE_SESSION: Sql = Sql::new("DELETE FROM jobwheel_session WHERE id_hash = ?");
static DELETE_USER_SESSIONS: Sql = Sql::new("DELETE FROM jobwheel_session WHERE user_id = ?");
static DELETE_USER_SESSIONS_EXCEPT: Sql =
    Sql::new("DELETE FROM jobwheel_session WHERE user_id = ? AND id_hash <> ?");
static PURGE_SESSIONS: Sql = Sql::new("DELETE FROM jobwheel_session WHERE expires_ms <= ?");
static INSERT_TOKEN: Sql = Sql::new(
    "INSERT INTO jobwheel_api_token (user_id, name, token_hash, created_ms, scope, expires_ms) \
    VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
);
macro_rules! token_select {
    () => {
        "SELECT id, user_id, name, created_ms, last_used_ms, scope, expires_ms FROM jobwheel_api_token"
    };
}
static LIST_TOKENS: Sql = Sql::new(concat!(token_select!(), " WHERE user_id = ? ORDER BY id DESC"));
static FIND_TOKEN: Sql = Sql::new(concat!(token_select!(), " WHERE token_hash = ?"));
static TOUCH_TOKEN: Sql = Sql::new("UPDATE jobwheel_api_token SET last_used_ms = ? WHERE id = ?");
static DELETE_TOKEN: Sql = Sql::new("DELETE FROM jobwheel_api_token WHERE id = ? AND user_id = ?");
static DELETE_USER_TOKENS: Sql = Sql::new("DELETE FROM jobwheel_api_token WHERE user_id = ?");
static FIND_IDENTITY: Sql =
    Sql::new("SELECT user_id FROM jobwheel_user_identity WHERE provider = ? AND subject = ?");
static INSERT_IDENTITY: Sql = Sql::new(
    "INSERT INTO jobwheel_user_identity (provider, subject, user_id, created_ms, confirmed_ms) VALUES (?, ?, ?, ?, ?)",
);
static CONFIRM_IDENTITY: Sql =
    Sql::new("UPDATE jobwheel_user_identity SET confirmed_ms = ? WHERE provider = ? AND subject = ?");
static IDENTITY_CONFIRMED: Sql =
    Sql::new("SELECT MAX(confirmed_ms) FROM jobwheel_user_identity WHERE user_id = ?");
static DELETE_USER_IDENTITIES: Sql = Sql::new("DELETE FROM jobwheel_user_identity WHERE user_id = ?");

#[async_trait]
impl CredentialStore for SqlStore {
    async fn insert_session(&self, s: &NewSession) -> Result<(), StoreError> {
        let args = args![&s.id_hash, s.user_id, &s.csrf_token, s.created_ms, s.expires_ms];
        self.ex().execute(&INSERT_SESSION, &args).await?;
        Ok(())
    }

    async fn load_session(&self, id_hash: &str, now_ms: i64) -> Result<Option<SessionRow>, StoreError> {
        self.ex().fetch_optional(&LOAD_SESSION, &args![id_hash, now_ms]).await
    }

    async fn delete_session(&self, id_hash: &str) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&DELETE_SESSION, &args![id_hash]).await? > 0)
    }

    async fn delete_user_sessions(&self, user_id: UserId, keep: Option<&str>) -> Result<u64, StoreError> {
        match keep {
            Some(keep) => self.ex().execute(&DELETE_USER_SESSIONS_EXCEPT, &args![user_id, keep]).await,
            None => self.ex().execute(&DELETE_USER_SESSIONS, &args![user_id]).await,
        }
    }

    async fn purge_sessions(&self, now_ms: i64) -> Result<u64, StoreError> {
        self.ex().execute(&PURGE_SESSIONS, &args![now_ms]).await
    }

    async fn add_api_token(&self, t: &NewApiToken) -> Result<i64, StoreError> {
        let args = args![t.user_id, &t.name, &t.token_hash, t.created_ms, &t.scope, t.expires_ms];
        self.ex().insert_id(&INSERT_TOKEN, &args).await
    }

    async fn list_api_tokens(&self, user_id: UserId) -> Result<Vec<ApiTokenRow>, StoreError> {
        self.ex().fetch_all(&LIST_TOKENS, &args![user_id]).await
    }

    async fn find_api_token(&self, token_hash: &str) -> Result<Option<ApiTokenRow>, StoreError> {
        self.ex().fetch_optional(&FIND_TOKEN, &args![token_hash]).await
    }

    async fn touch_api_token(&self, id: i64, now_ms: i64) -> Result<(), StoreError> {
        self.ex().execute(&TOUCH_TOKEN, &args![now_ms, id]).await?;
        Ok(())
    }

    async fn delete_api_token(&self, id: i64, user_id: UserId) -> Result<bool, StoreError> {
        Ok(self.ex().execute(&DELETE_TOKEN, &args![id, user_id]).await? > 0)
    }

    async fn delete_user_tokens(&self, user_id: UserId) -> Result<u64, StoreError> {
        self.ex().execute(&DELETE_USER_TOKENS, &args![user_id]).await
    }

    async fn find_identity(&self, provider: &str, subject: &str) -> Result<Option<UserId>, StoreError> {
        let row: Option<(i32,)> = self.ex().fetch_optional(&FIND_IDENTITY, &args![provider, subject]).await?;
        Ok(row.map(|(id,)| UserId(id)))
    }

    async fn add_identity(
        &self,
        provider: &str,
        subject: &str,
        user_id: UserId,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.ex().execute(&INSERT_IDENTITY, &args![provider, subject, user_id, at_ms, at_ms]).await?;
        Ok(())
    }

    async fn confirm_identity(&self, provider: &str, subject: &str, at_ms: i64) -> Result<(), StoreError> {
        self.ex().execute(&CONFIRM_IDENTITY, &args![at_ms, provider, subject]).await?;
        Ok(())
    }

    async fn identity_confirmed_ms(&self, user_id: UserId) -> Result<Option<i64>, StoreError> {
        let row: Option<(Option<i64>,)> =
            self.ex().fetch_optional(&IDENTITY_CONFIRMED, &args![user_id]).await?;
        Ok(row.and_then(|(ms,)| ms))
    }

    async fn delete_user_identities(&self, user_id: UserId) -> Result<u64, StoreError> {
        self.ex().execute(&DELETE_USER_IDENTITIES, &args![user_id]).await
    }
}
