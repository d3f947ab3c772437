//! The policy check on every `wasi:http` request: wasmtime-wasi-http calls
//! [`PolicyHooks::send_request`] after it has built the request (scheme and authority filled
//! in, `Host` set) and spawns the future we return.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use http::uri::Scheme;
use http_body_util::BodyExt;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::body::RequestLog;
use super::send::{self, Target};
use super::{NetLimits, NetPolicy};
use crate::journal::{HttpAnswer, Recorder, RecordingBody, ReplayBody, WireError, decode_fields};
use crate::output::OutputCapture;

type IoFuture = Box<dyn Future<Output = Result<(), Error>> + Send>;
type SendFuture = Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), Error>> + Send>;

/// The hooks object of one run's store.
pub(crate) struct PolicyHooks {
    job: Arc<NetPolicy>,
    executor: Arc<NetPolicy>,
    limits: NetLimits,
    requests: u32,
    /// Response bytes the run may still read; shared with the bodies in flight.
    bytes_left: Arc<AtomicU64>,
    log: OutputCapture,
    flight: Recorder,
}

impl PolicyHooks {
    /// `job` is `None` for a job without a policy: every request is refused.
    pub(crate) fn new(
        job: Option<(Arc<NetPolicy>, NetLimits)>,
        executor: Arc<NetPolicy>,
        log: OutputCapture,
        flight: Recorder,
    ) -> PolicyHooks {
        let (job, limits) = job.unwrap_or_else(|| (Arc::new(NetPolicy::default()), NetLimits::default()));
        PolicyHooks {
            job,
            executor,
            limits,
            requests: 0,
            bytes_left: Arc::new(AtomicU64::new(limits.max_response_bytes)),
            log,
            flight,
        }
    }

    /// The run's flight recorder (the journaled polls and body reads share it).
    pub(crate) fn recorder(&self) -> &Recorder {
        &self.flight
    }

    /// Why this request may not leave, or `None` when it may.
    fn refusal(&self, target: &Target, userinfo: bool) -> Option<String> {
        if userinfo {
            return Some("credentials in the URL are not allowed; send them in a header".to_owned());
        }
        if !self.job.allows_origin(target.https, &target.host, target.port) {
            return Some(format!("{} is not in the job's network policy", target.origin()));
        }
        if !self.executor.allows_origin(target.https, &target.host, target.port) {
            return Some(format!(
                "{} is not in the executor's allow-list (--wasm-http-allow), which no job policy can widen",
                target.origin()
            ));
        }
        if self.requests >= self.limits.max_requests {
            return Some(format!("the run's limit of {} requests is reached", self.limits.max_requests));
        }
        None
    }

    fn clamp(&self, options: Option<RequestOptions>) -> send::Timeouts {
        let cap = self.limits.request_timeout;
        let pick = |asked: Option<Duration>| asked.map_or(cap, |asked| asked.min(cap));
        let options = options.unwrap_or_default();
        send::Timeouts {
            connect: pick(options.connect_timeout),
            first_byte: pick(options.first_byte_timeout),
            between_bytes: pick(options.between_bytes_timeout),
            total: cap.saturating_mul(TOTAL_WAITS),
        }
    }
}

/// A request's whole exchange may take this many of its per-wait caps (connect, first byte,
/// a stalled body, and one more), however the server paces its bytes.
const TOTAL_WAITS: u32 = 4;

/// Refuses a request once the guest has finished sending its body: dropping the body earlier
/// would make the guest's body write fail first, and clients (wstd) then report that instead of
/// the denial. Bounded: after 1 MiB the body is dropped anyway.
async fn refuse(request: http::Request<WasiBody>) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    drain(request).await;
    Err(Error::HttpRequestDenied)
}

/// Reads the guest's request body (at most 1 MiB of it) and drops it.
async fn drain(request: http::Request<WasiBody>) {
    let mut body = request.into_body();
    let mut drained = 0usize;
    while drained < 1 << 20 {
        match body.frame().await {
            Some(Ok(frame)) => drained += frame.data_ref().map_or(0, |data| data.len()),
            Some(Err(_)) | None => break,
        }
    }
}

/// Answers a replayed request from its journal entry (`None`: the journal has none for it),
/// after reading the guest's body as a sent request's would be read.
async fn replay(
    request: http::Request<WasiBody>,
    answer: Option<HttpAnswer>,
    log: RequestLog,
) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    use base64::Engine as _;
    let decode = |text: &str| base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default();
    drain(request).await;
    match answer {
        None | Some(HttpAnswer::Pending) => {
            log.denied("replay: the journal holds no answer for this request");
            Err(Error::HttpRequestDenied)
        }
        Some(HttpAnswer::Denied { reason }) => {
            log.denied(&reason);
            Err(Error::HttpRequestDenied)
        }
        Some(HttpAnswer::Failed { error }) => {
            log.failed(&format!("{error:?} (from the journal)"));
            Err(error.to_error())
        }
        Some(HttpAnswer::Response { status, headers, frames, error, trailers, .. }) => {
            let mut response = http::Response::builder().status(status);
            for (name, value) in &headers {
                response = response.header(name.as_str(), decode(value));
            }
            let frames = frames.iter().map(|frame| bytes::Bytes::from(decode(frame))).collect();
            let trailers = trailers.as_deref().map(decode_fields);
            let response = response
                .body(ReplayBody::body(frames, error, trailers))
                .map_err(|e| Error::InternalError(Some(format!("replay: the journal's response: {e}"))))?;
            log.replayed(status);
            let io: IoFuture = Box::new(async { Ok(()) });
            Ok((response, io))
        }
    }
}

impl WasiHttpHooks for PolicyHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _guest_body_result: IoFuture,
    ) -> SendFuture {
        let started = Instant::now();
        let uri = request.uri();
        let https = uri.scheme() == Some(&Scheme::HTTPS);
        let target = Target {
            https,
            host: uri
                .host()
                .unwrap_or_default()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
        };
        let userinfo = uri.authority().is_some_and(|authority| authority.as_str().contains('@'));
        // Scheme, host and path as the guest wrote them (so a secret that is a whole URL is
        // found and masked by the job log, review M4), without user info or query string (a
        // query often carries a key).
        let host =
            uri.authority().map_or("", |authority| authority.as_str().rsplit('@').next().unwrap_or(""));
        let scheme = if https { "https" } else { "http" };
        let log = RequestLog::new(
            self.log.clone(),
            format!("{} {scheme}://{host}{}", request.method(), uri.path()),
            started,
        );
        let (method, url) = (request.method().to_string(), uri.to_string());
        let recording = match &self.flight {
            Recorder::Off => None,
            Recorder::Record(tape) => Some((tape.clone(), tape.http_request(&method, &url))),
            Recorder::Replay(player) => {
                return Box::new(replay(request, player.next_http(&method, &url), log));
            }
        };
        if let Some(reason) = self.refusal(&target, userinfo) {
            if let Some((tape, index)) = &recording {
                tape.http_answer(*index, HttpAnswer::Denied { reason: reason.clone() });
            }
            log.denied(&reason);
            return Box::new(refuse(request));
        }
        self.requests += 1;
        let timeouts = self.clamp(options);
        let (job, executor) = (Arc::clone(&self.job), Arc::clone(&self.executor));
        let bytes_left = Arc::clone(&self.bytes_left);
        Box::new(async move {
            let grants = move |ip| job.grants_address(ip) && executor.grants_address(ip);
            let sent = send::send(request, target, timeouts, grants, bytes_left, log).await;
            let Some((tape, index)) = recording else { return sent };
            match sent {
                Ok((response, io)) => {
                    tape.http_response(index, response.status().as_u16(), response.headers());
                    Ok((response.map(|body| RecordingBody::wrap(body, tape, index)), io))
                }
                Err(error) => {
                    tape.http_answer(index, HttpAnswer::Failed { error: WireError::of(&error) });
                    Err(error)
                }
            }
        })
    }
}
