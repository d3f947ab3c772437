//! The credentials executors and scripts present to the admin: the global access token
//! ([`AccessToken`]) and groups' own tokens (xxl-job 3.5, [`GroupTokens`]), and the secrets
//! everybody knows that neither may be (`published`).
//!
//! They sit below the HTTP edge, which checks them, and beside the engine, which sends them
//! with every trigger: both depend on this module, never the other way round.

mod access_token;
pub mod group_tokens;
pub mod published;

pub(crate) use access_token::AccessToken;
pub use group_tokens::{
    GroupCredential, GroupTokens, MAX_TOKEN_CHARS, SEAL_NAME, SNAPSHOT_TTL, TokenRefusal,
};
pub use published::{MIN_TOKEN_CHARS, Weakness, token_weakness};
