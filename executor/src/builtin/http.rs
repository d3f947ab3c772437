//! `httpJobHandler`: calls an HTTP endpoint described by the job parameter.
//!
//! The parameter is JSON — `{"url": "...", "method": "POST", "contentType": "application/json",
//! "headers": {"k": "v"}, "data": "...", "timeout": 3000}` (timeout in milliseconds) — or just a
//! URL for a GET. The handler refuses loopback, private, link-local and other non-public targets
//! unless the executor runs with `--http-handler-allow-private` (upstream's SSRF, CVE-2025-7787),
//! and pins the connection to the address it checked so DNS cannot swap it afterwards.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use std::time::Duration;

use anyhow::{Context as _, bail};
use jobwheel_protocol::net_policy::non_public_class;
use serde::Deserialize;

use crate::handler::{HandlerFuture, JobContext, JobHandler};

/// Whether non-public targets are allowed.
#[derive(Debug, Clone, Copy)]
pub struct HttpPolicy {
    pub allow_private: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    content_type: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    data: Option<String>,
    /// Milliseconds.
    #[serde(default)]
    timeout: Option<u64>,
}

pub(super) struct HttpJobHandler {
    policy: HttpPolicy,
}

impl HttpJobHandler {
    pub(super) fn new(policy: HttpPolicy) -> Self {
        Self { policy }
    }
}

impl JobHandler for HttpJobHandler {
    fn execute(&self, ctx: JobContext) -> HandlerFuture {
        let policy = self.policy;
        Box::pin(async move { call(ctx, policy).await })
    }
}

async fn call(ctx: JobContext, policy: HttpPolicy) -> anyhow::Result<()> {
    let param = ctx.param().trim();
    if param.is_empty() {
        bail!("param is empty: give a URL or {{\"url\": ..., \"method\": ...}}");
    }
    let request: Request = if param.starts_with('{') {
        serde_json::from_str(param).context("param is not valid httpJobHandler JSON")?
    } else {
        Request {
            url: param.to_owned(),
            method: None,
            content_type: None,
            headers: BTreeMap::new(),
            data: None,
            timeout: None,
        }
    };
    let url = reqwest::Url::parse(&request.url).with_context(|| format!("invalid url {:?}", request.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!("only http and https URLs are allowed, got {}", url.scheme());
    }
    let host = url.host_str().context("url has no host")?.to_owned();
    let port = url.port_or_known_default().context("url has no port")?;
    let target = resolve_checked(&host, port, policy).await?;

    let timeout = Duration::from_millis(request.timeout.unwrap_or(3000).clamp(1, 600_000));
    // No proxy from the environment: a proxy would resolve the name itself, around the
    // address check above (review M6).
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .resolve(&host, target)
        .build()?;
    let method =
        reqwest::Method::from_bytes(request.method.as_deref().unwrap_or("GET").to_uppercase().as_bytes())
            .context("invalid HTTP method")?;
    let mut builder = client.request(method.clone(), url.clone());
    for (name, value) in &request.headers {
        builder = builder.header(name, value);
    }
    if let Some(content_type) = &request.content_type {
        builder = builder.header(reqwest::header::CONTENT_TYPE, content_type);
    }
    if let Some(data) = request.data {
        builder = builder.body(data);
    }
    ctx.log(format!("{method} {url} ({target})"));
    let response = builder.send().await.with_context(|| format!("request to {url} failed"))?;
    let status = response.status();
    let (body, cut) = read_capped(response).await;
    let body = String::from_utf8_lossy(&body);
    ctx.log(format!("status {status}, body: {}", body.chars().take(10_000).collect::<String>()));
    if cut {
        ctx.log(format!("the response was longer than {MAX_BODY_BYTES} bytes; the rest was not read"));
    }
    if !status.is_success() {
        bail!("HTTP status {status}");
    }
    Ok(())
}

/// Most bytes of a response read: the job log shows 10 000 characters of it, and the executor is
/// shared by every job of every group, so a huge or endless body must not fill its memory.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The body's first [`MAX_BODY_BYTES`], and whether more was left unread. A failure midway
/// keeps what arrived.
async fn read_capped(mut response: reqwest::Response) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return (body, true);
        }
        body.extend_from_slice(&chunk);
    }
    (body, false)
}

/// Resolves `host` and refuses non-public addresses unless the policy allows them.
async fn resolve_checked(host: &str, port: u16, policy: HttpPolicy) -> anyhow::Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("cannot resolve {host}"))?
        .collect();
    let first = *addrs.first().with_context(|| format!("{host} resolved to no address"))?;
    if !policy.allow_private
        && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
    {
        bail!(
            "refusing to call {host} ({}): it is a loopback, private, link-local or otherwise non-public \
                 address; start the executor with --http-handler-allow-private to allow it",
            bad.ip()
        );
    }
    Ok(first)
}

/// Public in the sense of the IANA special-purpose registries (and not multicast): the same
/// classification Wasm jobs' network policies use.
fn is_public(ip: IpAddr) -> bool {
    non_public_class(ip).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private} must not be public");
        }
        for public in ["1.1.1.1", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public} must be public");
        }
    }
}
