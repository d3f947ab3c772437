//! Secrets everybody knows: upstream xxl-job's published defaults, blank values and values too
//! short to resist guessing (review 2026-12-04, N1).
//!
//! Upstream ships `default_token` as the access token (in its admin properties, its sample
//! executors and, on 3.5, its seed groups' `access_token`) and the login `admin`/`123456`. A
//! database or a configuration adopted from upstream keeps them, and anyone who can reach the
//! admin can then register executors, forge callbacks and create and run GLUE jobs through
//! 3.5's job OpenAPI. jobwheel never accepts one: a token that [`token_weakness`] names is
//! treated as refused wherever it is presented (the global token, a group's token), and a
//! password that [`is_published_password`] names cannot sign in (docs/security.md, "Secrets").

use md5::Digest as _;

/// Access tokens upstream publishes: its `xxl.job.accessToken` default since 2.0.
pub const PUBLISHED_TOKENS: &[&str] = &["default_token"];

/// Passwords upstream publishes: the seed user `admin`'s.
pub const PUBLISHED_PASSWORDS: &[&str] = &["123456"];

/// Shortest token accepted anywhere (the management API's floor for new ones, too).
pub const MIN_TOKEN_CHARS: usize = 8;

/// Why a token is refused though it was configured or stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weakness {
    /// Empty or only white space.
    Blank,
    /// Shorter than [`MIN_TOKEN_CHARS`].
    Short,
    /// One of upstream's [`PUBLISHED_TOKENS`].
    Published,
}

impl Weakness {
    /// The reason as the log, the API (`accessTokenRefused`) and the UI name it.
    pub fn describe(self) -> &'static str {
        match self {
            Weakness::Blank => "blank",
            Weakness::Short => "shorter than 8 characters",
            Weakness::Published => "xxl-job's published default",
        }
    }
}

/// Why `token` must not be accepted, or `None` when it may.
pub fn token_weakness(token: &str) -> Option<Weakness> {
    let trimmed = token.trim();
    if trimmed.is_empty() {
        Some(Weakness::Blank)
    } else if PUBLISHED_TOKENS.iter().any(|p| p.eq_ignore_ascii_case(trimmed)) {
        Some(Weakness::Published)
    } else if trimmed.chars().count() < MIN_TOKEN_CHARS {
        Some(Weakness::Short)
    } else {
        None
    }
}

/// Whether `password` is one upstream publishes.
pub fn is_published_password(password: &str) -> bool {
    PUBLISHED_PASSWORDS.contains(&password)
}

/// Whether a stored hash is upstream's unsalted hash (MD5 hex of 2.x, SHA-256 hex of 3.2+) of a
/// published password, as its seed row stores it. argon2 hashes are salted and never match;
/// for them the sign-in itself refuses the published password.
pub fn is_published_password_hash(stored: &str) -> bool {
    let stored = stored.to_ascii_lowercase();
    PUBLISHED_PASSWORDS.iter().any(|p| {
        stored == hex::encode(md5::Md5::digest(p.as_bytes()))
            || stored == hex::encode(sha2::Sha256::digest(p.as_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstreams_defaults_blank_and_short_tokens_are_weak() {
        assert_eq!(token_weakness("default_token"), Some(Weakness::Published));
        assert_eq!(token_weakness(" DEFAULT_TOKEN "), Some(Weakness::Published));
        assert_eq!(token_weakness(""), Some(Weakness::Blank));
        assert_eq!(token_weakness("   "), Some(Weakness::Blank));
        assert_eq!(token_weakness("1234567"), Some(Weakness::Short));
        assert_eq!(token_weakness("12345678"), None);
    }

    #[test]
    fn upstreams_seed_hashes_of_123456_are_recognised() {
        assert!(is_published_password_hash("e10adc3949ba59abbe56e057f20f883e"));
        assert!(is_published_password_hash(
            "8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92"
        ));
        assert!(!is_published_password_hash("c33367701511b4f6020ec61ded352059"));
        assert!(!is_published_password_hash("$argon2id$v=19$m=19456,t=2,p=1$abc$def"));
    }
}
