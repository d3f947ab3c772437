//! The response body a guest reads, metered: a wait between frames, the request's total
//! deadline, the run's byte budget, and the one job-log line per request, written when the body
//! ends, fails or is dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Sleep;
use wasmtime_wasi_http::Error;

use crate::output::OutputCapture;

/// One request's line in the job log. Consumed by the call that writes it, so there is one.
pub(crate) struct RequestLog {
    capture: OutputCapture,
    /// `GET https://host:443/path`.
    what: String,
    started: Instant,
}

impl RequestLog {
    pub(crate) fn new(capture: OutputCapture, what: String, started: Instant) -> RequestLog {
        RequestLog { capture, what, started }
    }

    pub(crate) fn denied(self, reason: &str) {
        self.capture.count_http(false);
        self.capture.note(&format!("http {} denied: {reason}", self.what));
    }

    pub(crate) fn failed(self, reason: &str) {
        self.capture.count_http(true);
        let ms = self.started.elapsed().as_millis();
        self.capture.note(&format!("http {} failed after {ms} ms: {reason}", self.what));
    }

    /// A replayed request's line: its answer came from the journal.
    pub(crate) fn replayed(self, status: u16) {
        self.capture.count_http(true);
        self.capture.note(&format!("http {} -> {status} (replayed from the journal)", self.what));
    }

    fn finished(self, status: u16, bytes: u64, cut: Option<&str>) {
        self.capture.count_http(true);
        let ms = self.started.elapsed().as_millis();
        let cut = cut.map(|why| format!(" ({why})")).unwrap_or_default();
        self.capture.note(&format!("http {} -> {status}, {bytes} bytes, {ms} ms{cut}", self.what));
    }
}

/// hyper's body with our limits on top.
pub(crate) struct MeteredBody {
    inner: Incoming,
    between_bytes: Duration,
    idle: Pin<Box<Sleep>>,
    /// The request's total deadline, and its length for the log line.
    total: Pin<Box<Sleep>>,
    total_length: Duration,
    bytes_left: Arc<AtomicU64>,
    status: u16,
    bytes: u64,
    /// `None` once the line is written.
    log: Option<RequestLog>,
}

impl MeteredBody {
    /// `waits`: the wait allowed between frames, and the request's total deadline and length.
    pub(crate) fn new(
        inner: Incoming,
        status: u16,
        waits: (Duration, tokio::time::Instant, Duration),
        bytes_left: Arc<AtomicU64>,
        log: RequestLog,
    ) -> MeteredBody {
        let (between_bytes, deadline, total_length) = waits;
        MeteredBody {
            inner,
            between_bytes,
            idle: Box::pin(tokio::time::sleep(between_bytes)),
            total: Box::pin(tokio::time::sleep_until(deadline)),
            total_length,
            bytes_left,
            status,
            bytes: 0,
            log: Some(log),
        }
    }

    fn finish(&mut self, cut: Option<&str>) {
        if let Some(log) = self.log.take() {
            log.finished(self.status, self.bytes, cut);
        }
    }

    /// Takes `len` bytes from the run's budget; false when it does not have them.
    fn take_budget(&self, len: u64) -> bool {
        self.bytes_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(len)).is_ok()
    }
}

impl Body for MeteredBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.log.is_none() {
            return Poll::Ready(None);
        }
        if this.total.as_mut().poll(cx).is_ready() {
            let why = format!("the request's total deadline of {:?} passed", this.total_length);
            this.finish(Some(&why));
            return Poll::Ready(Some(Err(Error::ConnectionReadTimeout)));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.finish(None);
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(error))) => {
                this.finish(Some(&format!("body failed: {error}")));
                Poll::Ready(Some(Err(Error::from(error))))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |data| data.len() as u64);
                if !this.take_budget(len) {
                    this.finish(Some("the run's response byte limit is reached; the rest was refused"));
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(Some(this.bytes + len)))));
                }
                this.bytes += len;
                let deadline = tokio::time::Instant::now() + this.between_bytes;
                this.idle.as_mut().reset(deadline);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match this.idle.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.finish(Some(&format!("no data for {:?}", this.between_bytes)));
                    Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.log.is_none() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        // A guest that stops reading early still gets its line, with the bytes it read.
        let ended_early = !self.inner.is_end_stream();
        self.finish(ended_early.then_some("not read to the end"));
    }
}
