//! [`CredentialStore`](super::CredentialStore) for all three backends, stamped out by one macro.
//!
//! Unlike upstream's tables, these two are jobwheel's own and use only portable SQL, so the
//! three implementations differ in nothing but the placeholder style: the queries are written
//! once with `?` and numbered (`$1`, `$2`, …) for PostgreSQL when first used.

use std::borrow::Cow;

/// Rewrites `?` placeholders as `$1`, `$2`, … (PostgreSQL). No query here has a `?` in a literal.
pub(super) fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

/// The SQL of one credential query in a backend's placeholder style.
pub(super) fn sql(query: &'static str, dollar: bool) -> Cow<'static, str> {
    if dollar { Cow::Owned(numbered(query)) } else { Cow::Borrowed(query) }
}

pub(super) const INSERT_SESSION: &str = "INSERT INTO jobwheel_session \
    (id_hash, user_id, csrf_token, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?)";
pub(super) const LOAD_SESSION: &str = "SELECT id_hash, user_id, csrf_token, created_ms, expires_ms \
    FROM jobwheel_session WHERE id_hash = ? AND expires_ms > ?";
pub(super) const DELETE_SESSION: &str = "DELETE FROM jobwheel_session WHERE id_hash = ?";
pub(super) const DELETE_USER_SESSIONS: &str = "DELETE FROM jobwheel_session WHERE user_id = ?";
pub(super) const DELETE_USER_SESSIONS_EXCEPT: &str =
    "DELETE FROM jobwheel_session WHERE user_id = ? AND id_hash <> ?";
pub(super) const PURGE_SESSIONS: &str = "DELETE FROM jobwheel_session WHERE expires_ms <= ?";
pub(super) const INSERT_TOKEN: &str = "INSERT INTO jobwheel_api_token \
    (user_id, name, token_hash, created_ms) VALUES (?, ?, ?, ?)";
pub(super) const TOKEN_ID_BY_HASH: &str = "SELECT id FROM jobwheel_api_token WHERE token_hash = ?";
pub(super) const LIST_TOKENS: &str = "SELECT id, user_id, name, created_ms, last_used_ms \
    FROM jobwheel_api_token WHERE user_id = ? ORDER BY id DESC";
pub(super) const FIND_TOKEN: &str = "SELECT id, user_id, name, created_ms, last_used_ms \
    FROM jobwheel_api_token WHERE token_hash = ?";
pub(super) const TOUCH_TOKEN: &str = "UPDATE jobwheel_api_token SET last_used_ms = ? WHERE id = ?";
pub(super) const DELETE_TOKEN: &str = "DELETE FROM jobwheel_api_token WHERE id = ? AND user_id = ?";
pub(super) const DELETE_USER_TOKENS: &str = "DELETE FROM jobwheel_api_token WHERE user_id = ?";

/// Implements `CredentialStore` for a backend type with a `pool` field; `$dollar` says whether
/// its placeholders are numbered.
macro_rules! credential_store {
    ($store:ty, $dollar:expr) => {
        #[async_trait::async_trait]
        impl $crate::store::CredentialStore for $store {
            async fn insert_session(
                &self,
                s: &$crate::store::NewSession,
            ) -> Result<(), $crate::store::StoreError> {
                use $crate::store::credentials as c;
                sqlx::query(&c::sql(c::INSERT_SESSION, $dollar))
                    .bind(&s.id_hash)
                    .bind(s.user_id)
                    .bind(&s.csrf_token)
                    .bind(s.created_ms)
                    .bind(s.expires_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn load_session(
                &self,
                id_hash: &str,
                now_ms: i64,
            ) -> Result<Option<$crate::store::SessionRow>, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                Ok(sqlx::query_as(&c::sql(c::LOAD_SESSION, $dollar))
                    .bind(id_hash)
                    .bind(now_ms)
                    .fetch_optional(&self.pool)
                    .await?)
            }

            async fn delete_session(&self, id_hash: &str) -> Result<bool, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                let done = sqlx::query(&c::sql(c::DELETE_SESSION, $dollar))
                    .bind(id_hash)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn delete_user_sessions(
                &self,
                user_id: $crate::store::UserId,
                keep: Option<&str>,
            ) -> Result<u64, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                let done = match keep {
                    Some(keep) => {
                        sqlx::query(&c::sql(c::DELETE_USER_SESSIONS_EXCEPT, $dollar))
                            .bind(user_id)
                            .bind(keep)
                            .execute(&self.pool)
                            .await?
                    }
                    None => {
                        sqlx::query(&c::sql(c::DELETE_USER_SESSIONS, $dollar))
                            .bind(user_id)
                            .execute(&self.pool)
                            .await?
                    }
                };
                Ok(done.rows_affected())
            }

            async fn purge_sessions(&self, now_ms: i64) -> Result<u64, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                let done =
                    sqlx::query(&c::sql(c::PURGE_SESSIONS, $dollar)).bind(now_ms).execute(&self.pool).await?;
                Ok(done.rows_affected())
            }

            async fn add_api_token(
                &self,
                t: &$crate::store::NewApiToken,
            ) -> Result<i64, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                sqlx::query(&c::sql(c::INSERT_TOKEN, $dollar))
                    .bind(t.user_id)
                    .bind(&t.name)
                    .bind(&t.token_hash)
                    .bind(t.created_ms)
                    .execute(&self.pool)
                    .await?;
                // The digest is unique; reading the id back is portable where RETURNING is not.
                Ok(sqlx::query_scalar(&c::sql(c::TOKEN_ID_BY_HASH, $dollar))
                    .bind(&t.token_hash)
                    .fetch_one(&self.pool)
                    .await?)
            }

            async fn list_api_tokens(
                &self,
                user_id: $crate::store::UserId,
            ) -> Result<Vec<$crate::store::ApiTokenRow>, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                Ok(sqlx::query_as(&c::sql(c::LIST_TOKENS, $dollar))
                    .bind(user_id)
                    .fetch_all(&self.pool)
                    .await?)
            }

            async fn find_api_token(
                &self,
                token_hash: &str,
            ) -> Result<Option<$crate::store::ApiTokenRow>, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                Ok(sqlx::query_as(&c::sql(c::FIND_TOKEN, $dollar))
                    .bind(token_hash)
                    .fetch_optional(&self.pool)
                    .await?)
            }

            async fn touch_api_token(&self, id: i64, now_ms: i64) -> Result<(), $crate::store::StoreError> {
                use $crate::store::credentials as c;
                sqlx::query(&c::sql(c::TOUCH_TOKEN, $dollar))
                    .bind(now_ms)
                    .bind(id)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn delete_api_token(
                &self,
                id: i64,
                user_id: $crate::store::UserId,
            ) -> Result<bool, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                let done = sqlx::query(&c::sql(c::DELETE_TOKEN, $dollar))
                    .bind(id)
                    .bind(user_id)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn delete_user_tokens(
                &self,
                user_id: $crate::store::UserId,
            ) -> Result<u64, $crate::store::StoreError> {
                use $crate::store::credentials as c;
                let done = sqlx::query(&c::sql(c::DELETE_USER_TOKENS, $dollar))
                    .bind(user_id)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected())
            }
        }
    };
}
pub(super) use credential_store;

#[cfg(test)]
mod tests {
    use super::numbered;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(numbered("a = ? AND b <> ?"), "a = $1 AND b <> $2");
        assert_eq!(numbered("no placeholders"), "no placeholders");
    }
}
