//! Row and input types for login sessions and API tokens (jobwheel's own tables).
//!
//! Only SHA-256 digests of session cookies and API tokens are stored: a leaked database (or
//! backup) does not let anyone log in.

use super::UserId;

/// A session to store at login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// Lower-case hex SHA-256 of the cookie value.
    pub id_hash: String,
    /// Whose session.
    pub user_id: UserId,
    /// The synchronizer token cookie-authenticated writes must echo in `X-CSRF-Token`.
    pub csrf_token: String,
    /// Epoch ms.
    pub created_ms: i64,
    /// Epoch ms after which the session is refused.
    pub expires_ms: i64,
}

/// A stored, unexpired session.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionRow {
    /// Lower-case hex SHA-256 of the cookie value.
    pub id_hash: String,
    /// Whose session.
    pub user_id: UserId,
    /// See [`NewSession::csrf_token`].
    pub csrf_token: String,
    /// Epoch ms.
    pub created_ms: i64,
    /// Epoch ms.
    pub expires_ms: i64,
}

/// An API token to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiToken {
    /// Whose token; it acts with that user's role and permissions.
    pub user_id: UserId,
    /// The owner's label for it.
    pub name: String,
    /// Lower-case hex SHA-256 of the token.
    pub token_hash: String,
    /// Epoch ms.
    pub created_ms: i64,
    /// `read`, `run` or `write` (docs/security.md).
    pub scope: String,
    /// Epoch ms after which it is refused; `None`: until revoked.
    pub expires_ms: Option<i64>,
}

/// A stored API token (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ApiTokenRow {
    /// Primary key.
    pub id: i64,
    /// Whose token.
    pub user_id: UserId,
    /// The owner's label.
    pub name: String,
    /// Epoch ms.
    pub created_ms: i64,
    /// Epoch ms of the last request it authenticated (updated at most once a minute).
    pub last_used_ms: Option<i64>,
    /// `read`, `run` or `write`.
    pub scope: String,
    /// Epoch ms after which it is refused; `None`: until revoked.
    pub expires_ms: Option<i64>,
}
