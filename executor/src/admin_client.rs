//! The executor's one client for its admins: the admin API (`api/registry`,
//! `api/registryRemove`, `api/callback`) and `GLUE_WASM` module downloads.
//!
//! Like upstream, a call tries each configured admin in order and stops at the first one that
//! answers `code == 200`; the admins share one database, so one success is enough. The access
//! token is only ever sent to a configured admin: a module URL must be relative (resolved
//! against each admin address in order) or point at one of the admin origins.

use std::time::Duration;

use anyhow::bail;

use jobwheel_protocol::envelope::AckEnvelope;
use jobwheel_protocol::{ACCESS_TOKEN_HEADER, APPNAME_HEADER, WasmModuleRef};
use serde::Serialize;

/// Why no admin stored a batch of job log lines.
#[derive(Debug)]
pub(crate) enum ShipFailure {
    /// An admin refused the batch itself (malformed or too large): every admin would.
    Refused(String),
    /// No admin answered with a stored batch: send it again later.
    Unreachable(String),
}

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
    bases: Vec<reqwest::Url>,
    token: Option<String>,
    /// Sent as `XXL-JOB-APPNAME` with every request: an admin holding a token for this
    /// executor's group (xxl-job 3.5, jobwheel) checks the token against it; others ignore it.
    app_name: String,
}

/// How long a module download may take: modules are megabytes, not the admin API's bytes.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

impl AdminClient {
    pub(crate) fn new(
        addresses: &[String],
        token: Option<String>,
        app_name: String,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        // The access token goes to the configured admin origins only: no proxy from the
        // environment, and a redirect is followed only within the origin it came from
        // (reqwest keeps custom headers such as the token across origins; review L2).
        let same_origin = reqwest::redirect::Policy::custom(|attempt| {
            let from = attempt.previous().last().map(reqwest::Url::origin);
            if attempt.previous().len() > 5 {
                attempt.error("too many redirects")
            } else if from.is_some_and(|from| from == attempt.url().origin()) {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(same_origin)
            .no_proxy()
            .build()?;
        let bases = addresses
            .iter()
            .map(|a| {
                let base = if a.ends_with('/') { a.clone() } else { format!("{a}/") };
                reqwest::Url::parse(&base).map_err(|e| anyhow::anyhow!("invalid admin address {a:?}: {e}"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self { http, bases, token, app_name })
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

    /// Sends one gzip batch of job log lines (`api/logShip`) to each admin in order until one
    /// stores it (docs/executor.md, "Logs kept by the admin").
    pub(crate) async fn ship_logs(&self, body: Vec<u8>) -> Result<(), ShipFailure> {
        let mut failures = Vec::new();
        for base in &self.bases {
            let url = format!("{base}{}", jobwheel_protocol::log_ship::LOG_SHIP_PATH);
            let request = self
                .http
                .post(&url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .header(reqwest::header::CONTENT_ENCODING, "gzip")
                .body(body.clone());
            match self.authenticated(request).send().await {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response)
                    if matches!(
                        response.status(),
                        reqwest::StatusCode::BAD_REQUEST | reqwest::StatusCode::PAYLOAD_TOO_LARGE
                    ) =>
                {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    return Err(ShipFailure::Refused(format!("{url}: HTTP status {status}: {text:.300}")));
                }
                Ok(response) => failures.push(format!("{url}: HTTP status {}", response.status())),
                Err(e) => failures.push(format!("{url}: request failed: {e}")),
            }
        }
        if failures.is_empty() {
            failures.push("no admin address is configured".to_owned());
        }
        Err(ShipFailure::Unreachable(failures.join("; ")))
    }

    /// Downloads a `GLUE_WASM` module from the first admin that serves it, refusing one larger
    /// than `max_bytes` (by its announced size, then while reading).
    pub(crate) async fn download_module(
        &self,
        reference: &WasmModuleRef,
        max_bytes: u64,
    ) -> anyhow::Result<Vec<u8>> {
        if reference.size > max_bytes {
            bail!("module is {} bytes, over this executor's limit of {max_bytes}", reference.size);
        }
        let mut failures = Vec::new();
        for url in self.module_urls(reference)? {
            match self.download_one(url.clone(), max_bytes).await {
                Ok(bytes) => return Ok(bytes),
                Err(e) => failures.push(format!("{url}: {e:#}")),
            }
        }
        bail!("{}", failures.join("; "))
    }

    /// Candidate URLs for `reference`, in the order to try them.
    fn module_urls(&self, reference: &WasmModuleRef) -> anyhow::Result<Vec<reqwest::Url>> {
        match reqwest::Url::parse(&reference.url) {
            Ok(absolute) => {
                let trusted = self.bases.iter().any(|admin| admin.origin() == absolute.origin());
                if !trusted {
                    bail!(
                        "module URL {absolute} is not on a configured admin address; refusing to send \
                         the access token there (admin addresses: {})",
                        self.bases.iter().map(reqwest::Url::as_str).collect::<Vec<_>>().join(", ")
                    );
                }
                Ok(vec![absolute])
            }
            Err(_) => {
                if self.bases.is_empty() {
                    bail!("module URL {:?} is relative but no admin address is configured", reference.url);
                }
                let path = reference.url.trim_start_matches('/');
                self.bases.iter().map(|admin| Ok(admin.join(path)?)).collect()
            }
        }
    }

    async fn download_one(&self, url: reqwest::Url, max_bytes: u64) -> anyhow::Result<Vec<u8>> {
        let request = self.authenticated(self.http.get(url).timeout(DOWNLOAD_TIMEOUT));
        let mut response = request.send().await?;
        let status = response.status();
        if !status.is_success() {
            bail!("HTTP status {status}");
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() as u64 > max_bytes {
                bail!("module is larger than this executor's limit of {max_bytes} bytes");
            }
        }
        Ok(bytes)
    }

    /// The token (when set) and the AppName on a request to an admin.
    fn authenticated(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            request = request.header(ACCESS_TOKEN_HEADER, token);
        }
        request.header(APPNAME_HEADER, &self.app_name)
    }

    async fn post_one<B: Serialize + ?Sized>(&self, url: &str, body: &B) -> Result<(), String> {
        let request = self.authenticated(self.http.post(url).json(body));
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
