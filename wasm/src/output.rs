//! Guest stdout/stderr capture: split into lines, mask secret values, forward to the run's
//! [`LogSink`] within a byte budget, and pick out result-marker lines and the last stderr line
//! for the outcome.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::abi::{HOST_NOTE_PREFIX, MAX_OUTPUT_BYTES, OUTPUT_MARKER, RESULT_MARKER};

// The guest SDK documents the limit to job authors; the protocol is what the executor and the
// admin enforce. Two constants, one number: the build fails if they ever differ.
const _: () = assert!(
    MAX_OUTPUT_BYTES == jobwheel_protocol::MAX_WORKFLOW_OUTPUT,
    "the guest SDK's MAX_OUTPUT_BYTES must equal the protocol's MAX_WORKFLOW_OUTPUT"
);

/// Where a run's log lines go: guest stdout/stderr lines and the runtime's own notes.
///
/// Called synchronously from the run's task while the guest is paused in a WASI call, so it
/// must be quick and must not block (append to a buffer or a file, send on a channel).
pub trait LogSink: Send + Sync {
    /// Receives one line without its trailing newline.
    fn line(&self, line: &str);
}

impl<F: Fn(&str) + Send + Sync> LogSink for F {
    fn line(&self, line: &str) {
        self(line)
    }
}

/// Which guest stream a write came from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Limits copied from the runtime configuration.
#[derive(Clone, Copy)]
pub(crate) struct OutputLimits {
    pub(crate) max_output_bytes: usize,
    pub(crate) max_line_bytes: usize,
    pub(crate) max_result_message_bytes: usize,
}

/// What the capture learned, read once the run is over.
pub(crate) struct CaptureSummary {
    pub(crate) result_message: Option<String>,
    pub(crate) workflow_output: Option<String>,
    pub(crate) last_stderr_line: Option<String>,
    pub(crate) output_bytes: u64,
    pub(crate) truncated: bool,
    pub(crate) http_allowed: u32,
    pub(crate) http_denied: u32,
}

struct CaptureState {
    sink: Arc<dyn LogSink>,
    limits: OutputLimits,
    /// Secret values; replaced by [`MASK`] in every line (a value split by the line-length
    /// limit is not recognised — keep secrets shorter than `max_line_bytes`).
    masked: Vec<String>,
    stdout_partial: Vec<u8>,
    stderr_partial: Vec<u8>,
    /// Bytes of guest output seen, including what was dropped after truncation.
    seen_bytes: u64,
    /// Bytes forwarded to the sink; forwarding stops once this would exceed the budget.
    forwarded_bytes: usize,
    truncated: bool,
    result_message: Option<String>,
    /// Pieces of `::jobwheel-output::` lines, concatenated; collection stops once past
    /// [`MAX_OUTPUT_BYTES`], which is enough for the caller to refuse it.
    workflow_output: Option<String>,
    last_stderr_line: Option<String>,
    /// Outbound HTTP requests the network policy let through, and refused.
    http_allowed: u32,
    http_denied: u32,
}

/// Shared handle to one run's capture; clones write into the same state.
#[derive(Clone)]
pub(crate) struct OutputCapture {
    state: Arc<Mutex<CaptureState>>,
}

impl OutputCapture {
    pub(crate) fn new(
        sink: Arc<dyn LogSink>,
        limits: OutputLimits,
        mut masked: Vec<String>,
    ) -> OutputCapture {
        masked.retain(|value| !value.is_empty());
        // Longest first, so a secret that contains another is masked whole.
        masked.sort_by_key(|value| std::cmp::Reverse(value.len()));
        let state = CaptureState {
            sink,
            limits,
            masked,
            stdout_partial: Vec::new(),
            stderr_partial: Vec::new(),
            seen_bytes: 0,
            forwarded_bytes: 0,
            truncated: false,
            result_message: None,
            workflow_output: None,
            last_stderr_line: None,
            http_allowed: 0,
            http_denied: 0,
        };
        OutputCapture { state: Arc::new(Mutex::new(state)) }
    }

    /// A WASI stdout/stderr implementation writing into this capture.
    pub(crate) fn stream(&self, stream: Stream) -> CaptureStream {
        CaptureStream { capture: self.clone(), stream }
    }

    /// Writes a runtime note (not guest output) to the sink, with secret values masked (a note
    /// may quote a URL the guest built from one; review M4). Notes count toward the output
    /// budget like guest lines — a guest looping on denied requests must not fill the log
    /// (review L5) — except the closing statistics, see [`Self::final_note`].
    pub(crate) fn note(&self, text: &str) {
        let mut state = self.lock();
        let text = format!("{HOST_NOTE_PREFIX} {}", state.mask(text));
        state.forward(&text);
    }

    /// The run's closing note (its statistics): written even after the budget is spent.
    pub(crate) fn final_note(&self, text: &str) {
        let state = self.lock();
        state.sink.line(&format!("{HOST_NOTE_PREFIX} {}", state.mask(text)));
    }

    /// Counts one outbound HTTP request as allowed or denied by the network policy.
    pub(crate) fn count_http(&self, allowed: bool) {
        let mut state = self.lock();
        let counter = if allowed { &mut state.http_allowed } else { &mut state.http_denied };
        *counter = counter.saturating_add(1);
    }

    /// Flushes unterminated lines and returns what the run printed.
    pub(crate) fn finish(&self) -> CaptureSummary {
        let mut state = self.lock();
        for stream in [Stream::Stdout, Stream::Stderr] {
            let rest = std::mem::take(state.partial(stream));
            if !rest.is_empty() {
                state.line(stream, &rest);
            }
        }
        CaptureSummary {
            result_message: state.result_message.clone(),
            workflow_output: state.workflow_output.clone(),
            last_stderr_line: state.last_stderr_line.clone(),
            output_bytes: state.seen_bytes,
            truncated: state.truncated,
            http_allowed: state.http_allowed,
            http_denied: state.http_denied,
        }
    }

    fn write(&self, stream: Stream, bytes: &[u8]) {
        self.lock().write(stream, bytes);
    }

    fn lock(&self) -> MutexGuard<'_, CaptureState> {
        // A panicking sink must not turn every later write into a panic too.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CaptureState {
    fn partial(&mut self, stream: Stream) -> &mut Vec<u8> {
        match stream {
            Stream::Stdout => &mut self.stdout_partial,
            Stream::Stderr => &mut self.stderr_partial,
        }
    }

    fn write(&mut self, stream: Stream, mut bytes: &[u8]) {
        self.seen_bytes += bytes.len() as u64;
        let max_line = self.limits.max_line_bytes.max(1);
        while !bytes.is_empty() {
            let room = max_line.saturating_sub(self.partial(stream).len()).max(1);
            let window = &bytes[..bytes.len().min(room)];
            match window.iter().position(|&b| b == b'\n') {
                Some(newline) => {
                    let mut line = std::mem::take(self.partial(stream));
                    line.extend_from_slice(&window[..newline]);
                    self.line(stream, &line);
                    bytes = &bytes[newline + 1..];
                }
                None if window.len() == room => {
                    // The line is longer than allowed: emit what we have as its own line.
                    let mut line = std::mem::take(self.partial(stream));
                    line.extend_from_slice(window);
                    self.line(stream, &line);
                    bytes = &bytes[window.len()..];
                }
                None => {
                    self.partial(stream).extend_from_slice(window);
                    bytes = &bytes[window.len()..];
                }
            }
        }
    }

    /// `text` with every secret value replaced by [`MASK`].
    fn mask<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let mut text = std::borrow::Cow::Borrowed(text);
        for secret in &self.masked {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), MASK).into();
            }
        }
        text
    }

    /// Marks the output as truncated and says so once.
    fn truncate(&mut self) {
        self.truncated = true;
        let budget = self.limits.max_output_bytes;
        self.sink.line(&format!(
            "{HOST_NOTE_PREFIX} output truncated after {budget} bytes; further guest output is discarded"
        ));
    }

    fn line(&mut self, stream: Stream, raw: &[u8]) {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let lossy = String::from_utf8_lossy(raw);
        let text = self.mask(&lossy).into_owned();
        // Markers and the last stderr line are tracked even after truncation, so a job that
        // floods its log still reports why it failed.
        if let Some(message) = text.strip_prefix(RESULT_MARKER) {
            self.add_result_message(message);
            return;
        }
        if let Some(piece) = text.strip_prefix(OUTPUT_MARKER) {
            // Pieces are at most a line long, so this stops within a line of the limit: past
            // it the output is refused anyway, and a flooding guest cannot grow it further.
            let output = self.workflow_output.get_or_insert_with(String::new);
            if output.len() <= MAX_OUTPUT_BYTES {
                output.push_str(piece);
            }
            return;
        }
        if stream == Stream::Stderr && !text.trim().is_empty() {
            self.last_stderr_line =
                Some(truncate_str(&text, self.limits.max_result_message_bytes).to_owned());
        }
        self.forward(&text);
    }

    /// Writes `text` to the sink while the output budget lasts; truncates once it is spent.
    fn forward(&mut self, text: &str) {
        if self.truncated {
            return;
        }
        if self.forwarded_bytes + text.len() + 1 > self.limits.max_output_bytes {
            self.truncate();
            return;
        }
        self.forwarded_bytes += text.len() + 1;
        self.sink.line(text);
    }

    fn add_result_message(&mut self, message: &str) {
        let max = self.limits.max_result_message_bytes;
        let combined = match self.result_message.take() {
            Some(previous) => format!("{previous}\n{message}"),
            None => message.to_owned(),
        };
        self.result_message = Some(truncate_str(&combined, max).to_owned());
    }
}

/// What a secret value becomes in the job log.
pub(crate) const MASK: &str = "****";

/// Longest prefix of `text` within `max` bytes that ends on a character boundary.
fn truncate_str(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One guest stream (stdout or stderr) feeding an [`OutputCapture`].
///
/// Writes never fail and never block: output past the budget is dropped, not refused, so a
/// chatty guest keeps running (an error would make e.g. Rust's `println!` panic).
#[derive(Clone)]
pub(crate) struct CaptureStream {
    capture: OutputCapture,
    stream: Stream,
}

impl IsTerminal for CaptureStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CaptureStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for CaptureStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.capture.write(self.stream, &bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CaptureStream {
    async fn ready(&mut self) {}
}

impl AsyncWrite for CaptureStream {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.capture.write(self.stream, buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(max_output_bytes: usize, max_line_bytes: usize) -> (OutputCapture, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink_lines = lines.clone();
        let sink = Arc::new(move |line: &str| sink_lines.lock().expect("lock").push(line.to_owned()));
        let limits = OutputLimits { max_output_bytes, max_line_bytes, max_result_message_bytes: 32 };
        (OutputCapture::new(sink, limits, vec!["s3cret".to_owned(), String::new()]), lines)
    }

    #[test]
    fn splits_lines_across_writes_and_streams() {
        let (capture, lines) = capture(1 << 20, 1 << 10);
        capture.write(Stream::Stdout, b"hel");
        capture.write(Stream::Stderr, b"err line\r\n");
        capture.write(Stream::Stdout, b"lo\nworld");
        let summary = capture.finish();
        assert_eq!(*lines.lock().expect("lock"), vec!["err line", "hello", "world"]);
        assert_eq!(summary.last_stderr_line.as_deref(), Some("err line"));
        assert_eq!(summary.output_bytes, 21);
    }

    #[test]
    fn secret_values_are_masked_in_lines_and_result_messages() {
        let (capture, lines) = capture(1 << 20, 1 << 10);
        capture.write(Stream::Stdout, b"token=s3cret and s3cret again\n");
        capture.write(Stream::Stdout, format!("{RESULT_MARKER}got s3cret\n").as_bytes());
        let summary = capture.finish();
        assert_eq!(*lines.lock().expect("lock"), vec!["token=**** and **** again"]);
        assert_eq!(summary.result_message.as_deref(), Some("got ****"));
    }

    #[test]
    fn long_lines_are_split() {
        let (capture, lines) = capture(1 << 20, 4);
        capture.write(Stream::Stdout, b"abcdefghij\n");
        capture.finish();
        assert_eq!(*lines.lock().expect("lock"), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn markers_are_collected_joined_bounded_and_kept_after_truncation() {
        let (capture, lines) = capture(8, 1 << 10);
        capture.write(Stream::Stdout, b"0123456789\n::jobwheel-result::first\n");
        capture.write(Stream::Stderr, b"::jobwheel-result::second line that is much too long to keep\n");
        let summary = capture.finish();
        assert_eq!(summary.result_message.as_deref(), Some("first\nsecond line that is much t"));
        assert!(summary.truncated);
        let lines = lines.lock().expect("lock");
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("[jobwheel] output truncated after 8 bytes"));
    }

    #[test]
    fn output_markers_are_concatenated_and_bounded() {
        let (small, lines) = capture(1 << 20, 16 << 10);
        small.write(Stream::Stdout, b"::jobwheel-output::{\"rows\":\n");
        small.write(Stream::Stderr, b"::jobwheel-output::12}\nplain line\n");
        let summary = small.finish();
        assert_eq!(summary.workflow_output.as_deref(), Some("{\"rows\":12}"));
        assert_eq!(*lines.lock().expect("lock"), vec!["plain line".to_owned()]);

        let (big, _) = capture(1 << 20, 16 << 10);
        let piece = format!("::jobwheel-output::{}\n", "x".repeat(8 << 10));
        for _ in 0..20 {
            big.write(Stream::Stdout, piece.as_bytes());
        }
        let output = big.finish().workflow_output.expect("output");
        assert!(output.len() > MAX_OUTPUT_BYTES, "over the limit is visible: {}", output.len());
        assert!(output.len() <= MAX_OUTPUT_BYTES + (8 << 10), "collection stops: {}", output.len());
    }

    #[test]
    fn truncate_str_respects_char_boundaries() {
        assert_eq!(truncate_str("héllo", 2), "h");
        assert_eq!(truncate_str("héllo", 3), "hé");
        assert_eq!(truncate_str("hi", 10), "hi");
    }
}
