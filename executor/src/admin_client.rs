//! HTTP client for the admin API (`api/registry`, `api/registryRemove`, `api/callback`).
//!
//! Like upstream, a call tries each configured admin in order and stops at the first one that
//! answers `code == 200`; the admins share one database, so one success is enough.

use std::time::Duration;

use jobwheel_protocol::ACCESS_TOKEN_HEADER;
use jobwheel_protocol::envelope::AckEnvelope;
use serde::Serialize;

/// Why no admin accepted a call.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no admin address is configured")]
    NoAdmins,
    #[error("every admin refused or failed: {}", .0.join("; "))]
    AllFailed(Vec<String>),
}

#[derive(Debug, Clone)]
pub(crate) struct AdminClient {
    http: reqwest::Client,
    /// Base addresses, each ending in `/`, e.g. `http://127.0.0.1:8080/xxl-job-admin/`.
    bases: Vec<String>,
    token: Option<String>,
}

impl AdminClient {
    pub(crate) fn new(
        addresses: &[String],
        token: Option<String>,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(timeout).connect_timeout(timeout).build()?;
        let bases =
            addresses.iter().map(|a| if a.ends_with('/') { a.clone() } else { format!("{a}/") }).collect();
        Ok(Self { http, bases, token })
    }

    pub(crate) fn is_configured(&self) -> bool {
        !self.bases.is_empty()
    }

    /// POSTs `body` to `{admin}/{path}` for each admin in order until one answers `code == 200`.
    pub(crate) async fn post<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Result<(), AdminError> {
        if self.bases.is_empty() {
            return Err(AdminError::NoAdmins);
        }
        let mut failures = Vec::new();
        for base in &self.bases {
            let url = format!("{base}{path}");
            match self.post_one(&url, body).await {
                Ok(()) => return Ok(()),
                Err(reason) => failures.push(format!("{url}: {reason}")),
            }
        }
        Err(AdminError::AllFailed(failures))
    }

    async fn post_one<B: Serialize + ?Sized>(&self, url: &str, body: &B) -> Result<(), String> {
        let mut request = self.http.post(url).json(body);
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        let response = request.send().await.map_err(|e| format!("request failed: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("HTTP status {status}"));
        }
        let text = response.text().await.map_err(|e| format!("cannot read response: {e}"))?;
        let envelope: AckEnvelope = serde_json::from_str(&text)
            .map_err(|e| format!("response is not an envelope ({e}): {text:.200}"))?;
        if envelope.is_success() {
            Ok(())
        } else {
            Err(format!("code {}: {}", envelope.code, envelope.msg.unwrap_or_default()))
        }
    }
}
