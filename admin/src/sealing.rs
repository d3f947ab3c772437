//! Secrets at rest: variables marked secret are stored sealed with XChaCha20-Poly1305 (the
//! RustCrypto `chacha20poly1305` crate) under the admin's secret key, and opened only to build
//! the trigger of a job that uses them. The key is 32 random bytes in `{data-dir}/secret-key`
//! (hex, mode 0600, generated at first start like the access token) or given with
//! `--secret-key`; admins sharing a database must share it.
//!
//! A sealed value is `hex(nonce ‖ ciphertext ‖ tag)` with a random 24-byte nonce. The owner and
//! name are authenticated as associated data, so a sealed value copied to another variable (or
//! another job) does not open.

use std::fmt;

use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::store::VariableOwner;

/// File name of the generated key inside the data directory.
pub const KEY_FILE: &str = "secret-key";

const NONCE_BYTES: usize = 24;

/// Why a key or a sealed value is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the secret key must be 64 hex characters (32 bytes)")]
    BadKey,
    #[error(
        "a stored secret does not open with this admin's secret key: the key file changed, or \
         admins sharing the database use different keys (give them all the same --secret-key)"
    )]
    WrongKey,
}

/// Seals and opens secret values. Cheap to share behind an `Arc`.
pub struct SecretBox {
    cipher: XChaCha20Poly1305,
}

// Never print the key.
impl fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

impl SecretBox {
    /// A box for the 32-byte key written as 64 hex characters.
    pub fn from_hex(key: &str) -> Result<SecretBox, SealError> {
        let bytes = hex::decode(key.trim()).map_err(|_| SealError::BadKey)?;
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| SealError::BadKey)?;
        Ok(SecretBox { cipher })
    }

    /// A new random key as hex, for a first start.
    pub fn generate_key() -> String {
        hex::encode(XChaCha20Poly1305::generate_key(&mut OsRng))
    }

    /// Seals `plaintext` as the value of `owner`'s secret `name`.
    pub fn seal(&self, owner: VariableOwner, name: &str, plaintext: &str) -> String {
        self.seal_bound(&associated_data(owner, name), plaintext)
    }

    /// Opens what [`SecretBox::seal`] produced for the same owner and name.
    pub fn open(&self, owner: VariableOwner, name: &str, sealed: &str) -> Result<String, SealError> {
        self.open_bound(&associated_data(owner, name), sealed)
    }

    /// Seals the secrets of the alarm channel `name` (its webhook URL and signing key).
    pub fn seal_channel(&self, name: &str, plaintext: &str) -> String {
        self.seal_bound(&format!("jobwheel-secret:v1:alarm-channel:{name}"), plaintext)
    }

    /// Opens what [`SecretBox::seal_channel`] produced for the same channel name.
    pub fn open_channel(&self, name: &str, sealed: &str) -> Result<String, SealError> {
        self.open_bound(&format!("jobwheel-secret:v1:alarm-channel:{name}"), sealed)
    }

    /// Seals what a browser carries through a single sign-on login (its state, nonce and PKCE
    /// verifier, docs/sso.md): it cannot read or forge it, and no admin needs to remember it.
    pub fn seal_login(&self, plaintext: &str) -> String {
        self.seal_bound("jobwheel-sso-login:v1", plaintext)
    }

    /// Opens what [`SecretBox::seal_login`] produced.
    pub fn open_login(&self, sealed: &str) -> Result<String, SealError> {
        self.open_bound("jobwheel-sso-login:v1", sealed)
    }

    /// Seals `plaintext` with `aad` authenticated beside it.
    fn seal_bound(&self, aad: &str, plaintext: &str) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: plaintext.as_bytes(), aad: aad.as_bytes() })
            // Encryption fails only for messages over 256 GiB.
            .expect("a secret value fits XChaCha20-Poly1305's limits");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        hex::encode(out)
    }

    /// Opens what [`SecretBox::seal_bound`] produced with the same `aad`.
    fn open_bound(&self, aad: &str, sealed: &str) -> Result<String, SealError> {
        let bytes = hex::decode(sealed).map_err(|_| SealError::WrongKey)?;
        if bytes.len() < NONCE_BYTES {
            return Err(SealError::WrongKey);
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad: aad.as_bytes() })
            .map_err(|_| SealError::WrongKey)?;
        String::from_utf8(plain).map_err(|_| SealError::WrongKey)
    }
}

fn associated_data(owner: VariableOwner, name: &str) -> String {
    let (group, job) = owner.columns();
    format!("jobwheel-secret:v1:{group}:{job}:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{GroupId, JobId};

    #[test]
    fn sealed_values_open_only_for_their_owner_name_and_key() {
        let key = SecretBox::generate_key();
        let secrets = SecretBox::from_hex(&key).unwrap();
        let job = VariableOwner::Job(JobId(7));
        let sealed = secrets.seal(job, "TOKEN", "s3cret");
        assert!(!sealed.contains("s3cret"));
        assert_ne!(sealed, secrets.seal(job, "TOKEN", "s3cret"), "nonces are random");
        assert_eq!(secrets.open(job, "TOKEN", &sealed).unwrap(), "s3cret");
        assert_eq!(secrets.open(job, "OTHER", &sealed), Err(SealError::WrongKey));
        assert_eq!(
            secrets.open(VariableOwner::Group(GroupId(7)), "TOKEN", &sealed),
            Err(SealError::WrongKey)
        );
        let other = SecretBox::from_hex(&SecretBox::generate_key()).unwrap();
        assert_eq!(other.open(job, "TOKEN", &sealed), Err(SealError::WrongKey));
        assert_eq!(SecretBox::from_hex("abcd").unwrap_err(), SealError::BadKey);
    }
}
