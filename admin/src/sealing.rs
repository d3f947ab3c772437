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

use crate::store::{JobId, VariableOwner};

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
    /// The root of the keys flight records digest secrets with (`journal_digest_key`), derived
    /// from the secret key so no key of its own needs keeping.
    digest_root: [u8; 32],
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
        let digest_root = hmac_sha256(&bytes, b"jobwheel-journal-digest:v1");
        Ok(SecretBox { cipher, digest_root })
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

    /// The key a recorded run of `job` digests its secrets with (docs/replay.md): a job's own,
    /// so a record cannot be checked against another job's secrets.
    pub fn journal_digest_key(&self, job: JobId) -> [u8; 32] {
        hmac_sha256(&self.digest_root, format!("job:{}", job.0).as_bytes())
    }

    /// Seals the stored flight record of the log `log_id` (docs/replay.md): bytes in, bytes out
    /// (`nonce ‖ ciphertext ‖ tag`), the log id authenticated beside them.
    pub fn seal_flight(&self, log_id: i64, plain: &[u8]) -> Vec<u8> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = format!("jobwheel-flight:v1:{log_id}");
        let sealed = self
            .cipher
            .encrypt(&nonce, Payload { msg: plain, aad: aad.as_bytes() })
            .expect("a flight record fits XChaCha20-Poly1305's limits");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// Opens what [`SecretBox::seal_flight`] produced for the same log.
    pub fn open_flight(&self, log_id: i64, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE_BYTES {
            return Err(SealError::WrongKey);
        }
        let (nonce, sealed) = sealed.split_at(NONCE_BYTES);
        let aad = format!("jobwheel-flight:v1:{log_id}");
        self.cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: sealed, aad: aad.as_bytes() })
            .map_err(|_| SealError::WrongKey)
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

/// HMAC-SHA256 of `data` under `key`.
fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    use hmac::{Hmac, Mac};
    // HMAC takes a key of any length.
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(key).expect("hmac takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
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

    #[test]
    fn flight_records_open_only_for_their_log_and_digest_keys_differ_per_job() {
        let secrets = SecretBox::from_hex(&SecretBox::generate_key()).unwrap();
        let sealed = secrets.seal_flight(41, b"{\"journal\":1}");
        assert!(!sealed.windows(7).any(|w| w == b"journal"));
        assert_eq!(secrets.open_flight(41, &sealed).unwrap(), b"{\"journal\":1}");
        assert_eq!(secrets.open_flight(42, &sealed), Err(SealError::WrongKey), "moved to another log");
        let other = SecretBox::from_hex(&SecretBox::generate_key()).unwrap();
        assert_eq!(other.open_flight(41, &sealed), Err(SealError::WrongKey));
        assert_ne!(secrets.journal_digest_key(JobId(1)), secrets.journal_digest_key(JobId(2)));
        assert_ne!(secrets.journal_digest_key(JobId(1)), other.journal_digest_key(JobId(1)));
    }
}
