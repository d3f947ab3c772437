//! Our sender for allowed requests: resolve once, refuse non-public addresses the policy does
//! not grant, connect to exactly the checked address, TLS against the *name*, one HTTP/1.1
//! exchange. wasmtime-wasi-http's stock sender cannot be used because it resolves the name
//! itself after any check (DNS rebinding) and has no way to inject a connector.
//! Redirects are never followed here: a 3xx goes back to the guest, and a follow-up request is a
//! new request through the policy.
//!
//! The guest's request body is read whole before connecting (at most [`MAX_REQUEST_BODY`]). A
//! streamed body would go out chunked — even an empty GET's, which some servers refuse — and a
//! server that answers and closes before reading it (ours in the benchmark did) would close
//! the guest's body stream under it, so the guest saw "connection reset" for a good response.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use jobwheel_protocol::net_policy::non_public_class;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, WasiBody};

use super::body::{MeteredBody, RequestLog};

/// Largest request body a guest may send.
pub(crate) const MAX_REQUEST_BODY: u64 = 8 << 20;

/// Where a request goes.
pub(crate) struct Target {
    pub(crate) https: bool,
    /// Lower case; IPv6 without brackets.
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Target {
    pub(crate) fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// The waits of one request, already capped by the run's limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) first_byte: Duration,
    pub(crate) between_bytes: Duration,
    /// The whole request, from connecting to the body's last byte: each wait above is capped,
    /// but a server sending a byte just before every cap could otherwise hold a run for ever
    /// (a job without a timeout has nothing else to stop it).
    pub(crate) total: Duration,
}

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;

/// Sends `request` to `target`; `grants` says whether a non-public address is explicitly
/// allowed. Failures are logged on `log` and returned as the `wasi:http` error the guest sees.
pub(crate) async fn send(
    request: http::Request<WasiBody>,
    target: Target,
    timeouts: Timeouts,
    grants: impl Fn(IpAddr) -> bool,
    bytes_left: Arc<AtomicU64>,
    log: RequestLog,
) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    let deadline = tokio::time::Instant::now() + timeouts.total;
    let exchanged =
        match tokio::time::timeout_at(deadline, exchange(request, &target, timeouts, grants)).await {
            Ok(exchanged) => exchanged,
            Err(_) => Err(fail(
                format!("no response within the request's total deadline of {:?}", timeouts.total),
                Error::ConnectionReadTimeout,
            )),
        };
    match exchanged {
        Ok((response, connection)) => {
            let status = response.status().as_u16();
            let response = response.map(|incoming| {
                let waits = (timeouts.between_bytes, deadline, timeouts.total);
                MeteredBody::new(incoming, status, waits, bytes_left, log).boxed_unsync()
            });
            Ok((response, connection))
        }
        Err(Failure { reason, error }) => {
            if matches!(error, Error::DestinationIpProhibited) {
                log.denied(&reason);
            } else {
                log.failed(&reason);
            }
            Err(error)
        }
    }
}

struct Failure {
    reason: String,
    error: Error,
}

fn fail(reason: impl Into<String>, error: Error) -> Failure {
    Failure { reason: reason.into(), error }
}

async fn exchange(
    request: http::Request<WasiBody>,
    target: &Target,
    timeouts: Timeouts,
    grants: impl Fn(IpAddr) -> bool,
) -> Result<(http::Response<hyper::body::Incoming>, IoFuture), Failure> {
    let (parts, body) = request.into_parts();
    let body = read_body(body, timeouts.first_byte).await?;
    let mut request = http::Request::from_parts(parts, body);
    let addresses = resolve(target, timeouts.connect).await?;
    let checked: Vec<SocketAddr> = addresses
        .iter()
        .copied()
        .filter(|address| non_public_class(address.ip()).is_none() || grants(address.ip()))
        .collect();
    let Some(first) = checked.first() else {
        let address = addresses[0].ip();
        let class = non_public_class(address).unwrap_or("not allowed");
        return Err(fail(
            format!(
                "{} resolved to {address}, {class}; name that IP or its network in the job's policy \
                 (and the executor's allow-list) to allow it",
                target.host
            ),
            Error::DestinationIpProhibited,
        ));
    };
    let stream = match tokio::time::timeout(timeouts.connect, TcpStream::connect(&checked[..])).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(error)) => {
            return Err(fail(format!("cannot connect to {first}: {error}"), Error::Connect(error)));
        }
        Err(_) => {
            return Err(fail(
                format!("connecting to {first} took over {:?}", timeouts.connect),
                Error::ConnectionTimeout,
            ));
        }
    };
    let handshake = async {
        if target.https {
            let name = ServerName::try_from(target.host.clone()).map_err(|_| {
                fail(format!("`{}` is not a TLS server name", target.host), Error::TlsCertificateError)
            })?;
            let tls = tls_connector()
                .connect(name, stream)
                .await
                .map_err(|error| fail(format!("TLS with {}: {error}", target.host), Error::Tls(error)))?;
            handshake_http1(tls).await
        } else {
            handshake_http1(stream).await
        }
    };
    let (mut sender, connection) =
        tokio::time::timeout(timeouts.connect, handshake).await.map_err(|_| {
            fail(format!("handshake with {first} took over {:?}", timeouts.connect), Error::ConnectionTimeout)
        })??;

    // On the wire the request line carries only the path; the authority is in `Host`.
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() =
        http::Uri::try_from(path).map_err(|_| fail("invalid path", Error::HttpRequestUriInvalid))?;

    // The connection task must run while we wait for the response head; it keeps running
    // (spawned by wasmtime-wasi-http as the io future) while the guest reads the body.
    let mut connection = Box::pin(connection);
    let response = {
        let exchange = sender.send_request(request);
        tokio::pin!(exchange);
        let waited = tokio::time::timeout(timeouts.first_byte, async {
            tokio::select! {
                response = &mut exchange => response,
                ended = &mut connection => {
                    // The connection ended before a response: report why, if it says.
                    let error = ended.err();
                    match (exchange.as_mut().await, error) {
                        (Ok(response), _) => Ok(response),
                        (Err(_), Some(error)) | (Err(error), None) => Err(error),
                    }
                }
            }
        })
        .await;
        match waited {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => return Err(fail(format!("exchange failed: {error}"), Error::from(error))),
            Err(_) => {
                return Err(fail(
                    format!("no response within {:?}", timeouts.first_byte),
                    Error::ConnectionReadTimeout,
                ));
            }
        }
    };
    let io: IoFuture = Box::new(async move { connection.await.map_err(Error::from) });
    Ok((response, io))
}

/// The guest's whole request body (it writes it while we wait), as a body of known length.
async fn read_body(mut body: WasiBody, within: Duration) -> Result<WasiBody, Failure> {
    let mut data = Vec::new();
    let read = async {
        while let Some(frame) = body.frame().await {
            // Trailers are dropped: HTTP/1.1 would need a chunked body to carry them.
            let frame = frame.map_err(|error| fail(format!("reading the request body: {error}"), error))?;
            let Ok(chunk) = frame.into_data() else { continue };
            data.extend_from_slice(&chunk);
            if data.len() as u64 > MAX_REQUEST_BODY {
                return Err(fail(
                    format!("the request body is over {MAX_REQUEST_BODY} bytes"),
                    Error::HttpRequestBodySize(Some(data.len() as u64)),
                ));
            }
        }
        Ok(())
    };
    match tokio::time::timeout(within, read).await {
        Ok(Ok(())) => Ok(Full::new(Bytes::from(data)).map_err(|never| match never {}).boxed_unsync()),
        Ok(Err(failure)) => Err(failure),
        Err(_) => Err(fail(
            format!("the guest did not finish its request body within {within:?}"),
            Error::ConnectionWriteTimeout,
        )),
    }
}

type Http1 = (
    hyper::client::conn::http1::SendRequest<WasiBody>,
    Box<dyn Future<Output = Result<(), hyper::Error>> + Send + Unpin>,
);

async fn handshake_http1<S>(stream: S) -> Result<Http1, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(|error| fail(format!("HTTP handshake: {error}"), Error::from(error)))?;
    Ok((sender, Box::new(Box::pin(connection))))
}

async fn resolve(target: &Target, limit: Duration) -> Result<Vec<SocketAddr>, Failure> {
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    match tokio::time::timeout(limit, lookup).await {
        Ok(Ok(addresses)) => {
            let addresses: Vec<SocketAddr> = addresses.collect();
            if addresses.is_empty() {
                Err(fail(format!("{} has no address", target.host), Error::DestinationNotFound))
            } else {
                Ok(addresses)
            }
        }
        Ok(Err(error)) => Err(fail(
            format!("cannot resolve {}: {error}", target.host),
            Error::DnsError { rcode: Some(error.to_string()), info_code: None },
        )),
        Err(_) => Err(fail(format!("resolving {} took over {limit:?}", target.host), Error::DnsTimeout)),
    }
}

/// One TLS client configuration per process: Mozilla's roots (webpki-roots), no client auth.
fn tls_connector() -> TlsConnector {
    static CONFIG: OnceLock<Arc<ClientConfig>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
        // An explicit provider: the process may link rustls with more than one (reqwest), and
        // then `ClientConfig::builder()` refuses to pick.
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Arc::new(config)
    });
    TlsConnector::from(Arc::clone(config))
}
