//! Outbound HTTP for `wasm32-wasip2` jobs, blocking and small: build a [`Request`], [`send`]
//! it, read the [`Response`]. Requests go through `wasi:http`, so the executor's network
//! policy decides: an origin the job was not granted fails with an error naming
//! `HttpRequestDenied` (or `DestinationIpProhibited` for a non-public address), and the job log
//! has a line saying why. Redirects are followed by [`Request::send`] up to
//! [`MAX_REDIRECTS`] times, each hop checked by the policy again.
//!
//! Built on [`wstd`](https://docs.rs/wstd) (bytecodealliance's std-like layer over WASI 0.2).
//!
//! [`send`]: Request::send

use std::fmt;

use wstd::http::{Body, Client, Method, Request as WasiRequest};

/// Redirect hops [`Request::send`] follows before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// An HTTP request to send.
#[derive(Debug, Clone)]
pub struct Request {
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A response, body read whole.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code, e.g. 200.
    pub status: u16,
    /// Response headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Why a request failed: refused by the policy, a network error, or a bad URL.
#[derive(Debug, Clone)]
pub struct HttpError(String);

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpError {}

impl Request {
    /// A `GET` of `url`.
    pub fn get(url: &str) -> Request {
        Request { method: Method::GET, url: url.to_owned(), headers: Vec::new(), body: Vec::new() }
    }

    /// A `POST` of `body` to `url`.
    pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Request {
        Request { method: Method::POST, url: url.to_owned(), headers: Vec::new(), body: body.into() }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds `Authorization: Bearer <token>`.
    pub fn bearer(self, token: &str) -> Request {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// Sends the request and reads the whole response, following redirects (a `GET` after
    /// 301/302/303, the same method after 307/308).
    pub fn send(self) -> Result<Response, HttpError> {
        wstd::runtime::block_on(self.send_async())
    }

    async fn send_async(mut self) -> Result<Response, HttpError> {
        for _ in 0..=MAX_REDIRECTS {
            let response = self.once().await?;
            let location = match response.status {
                301 | 302 | 303 | 307 | 308 => response.header("location").map(str::to_owned),
                _ => None,
            };
            let Some(location) = location else { return Ok(response) };
            let next = resolve(&self.url, &location)?;
            if matches!(response.status, 301..=303) {
                self.method = Method::GET;
                self.body.clear();
            }
            self.url = next;
        }
        Err(HttpError(format!("more than {MAX_REDIRECTS} redirects")))
    }

    async fn once(&self) -> Result<Response, HttpError> {
        let mut builder = WasiRequest::builder().method(self.method.clone()).uri(&self.url);
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Body::from(self.body.clone()))
            .map_err(|error| HttpError(format!("invalid request to {}: {error}", self.url)))?;
        let response = Client::new()
            .send(request)
            .await
            .map_err(|error| HttpError(format!("{} {} failed: {error:#}", self.method, self.url)))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned())
            })
            .collect();
        let mut body = response.into_body();
        let body = body
            .contents()
            .await
            .map_err(|error| HttpError(format!("reading the response of {} failed: {error:#}", self.url)))?
            .to_vec();
        Ok(Response { status, headers, body })
    }
}

/// `location` relative to `base` (absolute URLs, absolute paths; enough for redirects).
fn resolve(base: &str, location: &str) -> Result<String, HttpError> {
    if location.contains("://") {
        return Ok(location.to_owned());
    }
    let origin_end = base.find("://").map(|i| i + 3).and_then(|i| base[i..].find('/').map(|j| i + j));
    let origin = origin_end.map_or(base, |end| &base[..end]);
    if location.starts_with('/') {
        Ok(format!("{origin}{location}"))
    } else {
        Err(HttpError(format!("unsupported redirect location `{location}`")))
    }
}
