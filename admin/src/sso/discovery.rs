//! The OpenID providers' metadata and signing keys, kept for [`DISCOVERY_TTL`] (review N6).
//!
//! Read at every step, an anonymous flood of `GET …/login` made the admin send two requests to
//! the provider for each one it received. Kept, one fetch per provider serves every login for a
//! few minutes; fetches are made one at a time, so a flood at a cold start costs one too. A
//! provider that rotates its keys publishes the new one before signing with it, and a token
//! signed with a key not in the cached set drops the entry ([`DiscoveryCache::forget`]), so the
//! next sign-in reads the keys again.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use openidconnect::IssuerUrl;
use openidconnect::core::CoreProviderMetadata;

use super::{SsoError, chain};

/// How long a provider's metadata and keys are used before they are read again.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(300);

/// Discovered metadata (with the keys) by issuer.
#[derive(Debug, Default)]
pub struct DiscoveryCache {
    entries: tokio::sync::Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>,
}

impl DiscoveryCache {
    /// `issuer`'s metadata and keys, from the cache or read now.
    pub async fn metadata(
        &self,
        issuer: &str,
        http: &reqwest::Client,
    ) -> Result<CoreProviderMetadata, SsoError> {
        // Held across the fetch: concurrent logins wait for one read instead of each making one.
        let mut entries = self.entries.lock().await;
        if let Some((at, metadata)) = entries.get(issuer)
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(metadata.clone());
        }
        let url = IssuerUrl::new(issuer.to_owned())
            .map_err(|e| SsoError::Provider(format!("issuer {issuer:?}: {e}")))?;
        let metadata = CoreProviderMetadata::discover_async(url, http).await.map_err(|e| {
            SsoError::Provider(format!("cannot read {issuer}'s OpenID configuration: {}", chain(&e)))
        })?;
        entries.insert(issuer.to_owned(), (Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    /// Drops `issuer`'s entry: the next sign-in reads the metadata and keys again.
    pub async fn forget(&self, issuer: &str) {
        self.entries.lock().await.remove(issuer);
    }
}
