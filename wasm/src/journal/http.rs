//! Outbound HTTP in a journal: each request a component made, in order, with what it got — a
//! refusal with its reason, a failure as the `wasi:http` error the guest saw, or a response
//! (status, headers, the body as the frames it arrived in, and an error that cut it short).
//! Replaying answers each request from its entry without touching the network; a request that
//! is not the recorded one (another method or URL) is refused and listed as unanswered.

use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body::{Body, Frame};
use http_body_util::BodyExt as _;
use serde::{Deserialize, Serialize};
use wasmtime_wasi_http::{Error, WasiBody};

use super::tape::Tape;

/// One request of a recorded run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpExchange {
    /// `GET`, `POST`, …
    pub method: String,
    /// The URL as the guest wrote it.
    pub url: String,
    /// What it got.
    pub answer: HttpAnswer,
}

/// What one request got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum HttpAnswer {
    /// Refused by the network policy (or the run's limits) before it left.
    Denied {
        /// The job-log reason.
        reason: String,
    },
    /// No response: the error the guest saw.
    Failed {
        /// The error.
        error: WireError,
    },
    /// A response.
    Response {
        /// Its status.
        status: u16,
        /// Its headers, in order (values in base64: they need not be text).
        headers: Vec<(String, String)>,
        /// The body's data frames as they arrived, base64.
        frames: Vec<String>,
        /// The error that ended the body early, if one did.
        error: Option<WireError>,
        /// Whether the guest read the body to its end (else the rest was never fetched).
        complete: bool,
        /// The trailers that ended the body, when it had some (values in base64).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trailers: Option<Vec<(String, String)>>,
    },
    /// Sent, and the run ended before it was answered.
    Pending,
}

/// Header or trailer fields as a journal keeps them: names, and values in base64 (they need
/// not be text).
pub(crate) fn encode_fields(fields: &http::HeaderMap) -> Vec<(String, String)> {
    fields.iter().map(|(name, value)| (name.as_str().to_owned(), STANDARD.encode(value.as_bytes()))).collect()
}

/// What [`encode_fields`] kept, as fields again (an entry that is not a valid field is left out).
pub(crate) fn decode_fields(fields: &[(String, String)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in fields {
        let value = STANDARD.decode(value).unwrap_or_default();
        if let (Ok(name), Ok(value)) =
            (http::HeaderName::from_bytes(name.as_bytes()), http::HeaderValue::from_bytes(&value))
        {
            map.append(name, value);
        }
    }
    map
}

/// A `wasi:http` error as the guest sees it, in a form a journal can hold: the variants the
/// executor's sender produces (`net/send.rs`, `net/body.rs`) one for one; hyper, connect and TLS
/// failures as the codes wasmtime-wasi-http's default hooks give them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "code")]
pub enum WireError {
    /// `HttpRequestDenied`.
    Denied,
    /// `ConnectionRefused` (a connect error).
    ConnectionRefused,
    /// `ConnectionTimeout`.
    ConnectionTimeout,
    /// `ConnectionReadTimeout`.
    ConnectionReadTimeout,
    /// `ConnectionWriteTimeout`.
    ConnectionWriteTimeout,
    /// `DestinationIpProhibited`.
    DestinationIpProhibited,
    /// `DestinationNotFound`.
    DestinationNotFound,
    /// `DnsTimeout`.
    DnsTimeout,
    /// `DnsError`.
    DnsError {
        /// Its rcode.
        rcode: Option<String>,
        /// Its info code.
        info_code: Option<u16>,
    },
    /// `TlsProtocolError` (a TLS error).
    TlsProtocolError,
    /// `TlsCertificateError`.
    TlsCertificateError,
    /// `HttpProtocolError` (a hyper error).
    HttpProtocolError,
    /// `HttpRequestUriInvalid`.
    HttpRequestUriInvalid,
    /// `HttpRequestBodySize`.
    HttpRequestBodySize {
        /// The size, when known.
        size: Option<u64>,
    },
    /// `HttpResponseBodySize`.
    HttpResponseBodySize {
        /// The size, when known.
        size: Option<u64>,
    },
    /// Anything else, as `InternalError` with its text.
    Internal {
        /// The error's text.
        text: String,
    },
}

impl WireError {
    /// `error` as the journal holds it.
    pub(crate) fn of(error: &Error) -> WireError {
        match error {
            Error::HttpRequestDenied => WireError::Denied,
            Error::Connect(io) if io.kind() == std::io::ErrorKind::AddrNotAvailable => {
                WireError::DnsError { rcode: Some("address not available".to_owned()), info_code: None }
            }
            Error::Connect(_) | Error::ConnectionRefused => WireError::ConnectionRefused,
            Error::ConnectionTimeout => WireError::ConnectionTimeout,
            Error::ConnectionReadTimeout => WireError::ConnectionReadTimeout,
            Error::ConnectionWriteTimeout => WireError::ConnectionWriteTimeout,
            Error::DestinationIpProhibited => WireError::DestinationIpProhibited,
            Error::DestinationNotFound => WireError::DestinationNotFound,
            Error::DnsTimeout => WireError::DnsTimeout,
            Error::DnsError { rcode, info_code } => {
                WireError::DnsError { rcode: rcode.clone(), info_code: *info_code }
            }
            Error::Tls(_) | Error::TlsProtocolError => WireError::TlsProtocolError,
            Error::TlsCertificateError => WireError::TlsCertificateError,
            Error::Hyper(_) | Error::HttpProtocolError => WireError::HttpProtocolError,
            Error::HttpRequestUriInvalid => WireError::HttpRequestUriInvalid,
            Error::HttpRequestBodySize(size) => WireError::HttpRequestBodySize { size: *size },
            Error::HttpResponseBodySize(size) => WireError::HttpResponseBodySize { size: *size },
            other => WireError::Internal { text: format!("{other:?}") },
        }
    }

    /// The error to hand the guest again.
    pub(crate) fn to_error(&self) -> Error {
        match self {
            WireError::Denied => Error::HttpRequestDenied,
            WireError::ConnectionRefused => Error::ConnectionRefused,
            WireError::ConnectionTimeout => Error::ConnectionTimeout,
            WireError::ConnectionReadTimeout => Error::ConnectionReadTimeout,
            WireError::ConnectionWriteTimeout => Error::ConnectionWriteTimeout,
            WireError::DestinationIpProhibited => Error::DestinationIpProhibited,
            WireError::DestinationNotFound => Error::DestinationNotFound,
            WireError::DnsTimeout => Error::DnsTimeout,
            WireError::DnsError { rcode, info_code } => {
                Error::DnsError { rcode: rcode.clone(), info_code: *info_code }
            }
            WireError::TlsProtocolError => Error::TlsProtocolError,
            WireError::TlsCertificateError => Error::TlsCertificateError,
            WireError::HttpProtocolError => Error::HttpProtocolError,
            WireError::HttpRequestUriInvalid => Error::HttpRequestUriInvalid,
            WireError::HttpRequestBodySize { size } => Error::HttpRequestBodySize(*size),
            WireError::HttpResponseBodySize { size } => Error::HttpResponseBodySize(*size),
            WireError::Internal { text } => Error::InternalError(Some(text.clone())),
        }
    }
}

/// A response body whose frames (and the error that ends it, if any) go onto the tape as the
/// guest reads them.
pub(crate) struct RecordingBody {
    inner: WasiBody,
    tape: Tape,
    exchange: usize,
}

impl RecordingBody {
    pub(crate) fn wrap(inner: WasiBody, tape: Tape, exchange: usize) -> WasiBody {
        RecordingBody { inner, tape, exchange }.boxed_unsync()
    }
}

impl Body for RecordingBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.tape.http_frame(this.exchange, data);
                } else if let Some(trailers) = frame.trailers_ref() {
                    this.tape.http_trailers(this.exchange, trailers);
                }
            }
            Poll::Ready(Some(Err(error))) => {
                this.tape.http_body_end(this.exchange, Some(WireError::of(error)))
            }
            Poll::Ready(None) => this.tape.http_body_end(this.exchange, None),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A recorded body played back: its frames, then its error, its trailers or its end.
pub(crate) struct ReplayBody {
    frames: std::vec::IntoIter<Bytes>,
    error: Option<WireError>,
    trailers: Option<http::HeaderMap>,
}

impl ReplayBody {
    pub(crate) fn body(
        frames: Vec<Bytes>,
        error: Option<WireError>,
        trailers: Option<http::HeaderMap>,
    ) -> WasiBody {
        ReplayBody { frames: frames.into_iter(), error, trailers }.boxed_unsync()
    }
}

impl Body for ReplayBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        Poll::Ready(match this.frames.next() {
            Some(data) => Some(Ok(Frame::data(data))),
            None => match this.error.take() {
                Some(error) => Some(Err(error.to_error())),
                None => this.trailers.take().map(|trailers| Ok(Frame::trailers(trailers))),
            },
        })
    }

    fn is_end_stream(&self) -> bool {
        self.frames.len() == 0 && self.error.is_none() && self.trailers.is_none()
    }
}
