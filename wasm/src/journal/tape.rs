//! The tapes under a journal: recording clocks and generators that append every answer they
//! give a guest, and replaying ones that answer from a journal in the same order and count the
//! calls it cannot answer.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::http::encode_fields;
use super::{HttpAnswer, HttpExchange, JOURNAL_VERSION, Journal, JournalInputs, WireError};

/// A fresh seed for `wasi:random/insecure-seed`.
pub(crate) fn fresh_seed() -> u128 {
    use rand_core::Rng as _;
    let mut rng = wasmtime_wasi::random::thread_rng();
    (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())
}

/// The tape a recording run appends to.
#[derive(Clone)]
pub(crate) struct Tape(Arc<Mutex<Recording>>, u128);

/// The journal inside a locked recording.
struct JournalGuard<'a>(MutexGuard<'a, Recording>);

impl std::ops::Deref for JournalGuard<'_> {
    type Target = Journal;

    fn deref(&self) -> &Journal {
        &self.0.journal
    }
}

impl std::ops::DerefMut for JournalGuard<'_> {
    fn deref_mut(&mut self) -> &mut Journal {
        &mut self.0.journal
    }
}

/// A journal being written, and the body bytes it may still take.
struct Recording {
    journal: Journal,
    body_bytes_left: u64,
    max_body_bytes: u64,
}

impl Tape {
    /// A tape for a run given `inputs`, whose insecure seed is `insecure_seed`.
    pub(crate) fn new(inputs: JournalInputs, insecure_seed: u128, max_body_bytes: u64) -> Tape {
        let journal = Journal {
            version: JOURNAL_VERSION,
            inputs,
            wall: Vec::new(),
            monotonic: Vec::new(),
            random: Vec::new(),
            insecure: Vec::new(),
            insecure_seed: format!("{insecure_seed:032x}"),
            http: Vec::new(),
            polls: Vec::new(),
            reads: Vec::new(),
            not_replayable: None,
        };
        let recording = Recording { journal, body_bytes_left: max_body_bytes, max_body_bytes };
        Tape(Arc::new(Mutex::new(recording)), insecure_seed)
    }

    fn recording(&self) -> MutexGuard<'_, Recording> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn lock(&self) -> JournalGuard<'_> {
        JournalGuard(self.recording())
    }

    /// Starts the entry of a request the guest sent; its index.
    pub(crate) fn http_request(&self, method: &str, url: &str) -> usize {
        let mut journal = self.lock();
        let exchange =
            HttpExchange { method: method.to_owned(), url: url.to_owned(), answer: HttpAnswer::Pending };
        journal.http.push(exchange);
        journal.http.len() - 1
    }

    /// What request `index` got, when it got no body (a refusal, a failure).
    pub(crate) fn http_answer(&self, index: usize, answer: HttpAnswer) {
        if let Some(exchange) = self.lock().http.get_mut(index) {
            exchange.answer = answer;
        }
    }

    /// Request `index` got a response with `status` and `headers`.
    pub(crate) fn http_response(&self, index: usize, status: u16, headers: &http::HeaderMap) {
        let answer = HttpAnswer::Response {
            status,
            headers: encode_fields(headers),
            frames: Vec::new(),
            error: None,
            complete: false,
            trailers: None,
        };
        self.http_answer(index, answer);
    }

    /// A frame of request `index`'s body reached the guest. Past the journal's cap the run is
    /// marked not replayable and no more bytes are kept.
    pub(crate) fn http_frame(&self, index: usize, data: &[u8]) {
        let mut recording = self.recording();
        let len = data.len() as u64;
        if recording.body_bytes_left < len {
            recording.body_bytes_left = 0;
            let why = format!(
                "its responses brought more than the journal's cap of {} body bytes",
                recording.max_body_bytes
            );
            recording.journal.not_replayable.get_or_insert(why);
            return;
        }
        recording.body_bytes_left -= len;
        if let Some(HttpAnswer::Response { frames, .. }) =
            recording.journal.http.get_mut(index).map(|e| &mut e.answer)
        {
            frames.push(STANDARD.encode(data));
        }
    }

    /// Request `index`'s body ended: read to its end, or cut by `error`.
    pub(crate) fn http_body_end(&self, index: usize, end: Option<WireError>) {
        if let Some(HttpAnswer::Response { error, complete, .. }) =
            self.lock().http.get_mut(index).map(|e| &mut e.answer)
        {
            *complete = end.is_none();
            *error = end;
        }
    }

    /// Request `index`'s body ended with `trailers` (names and base64 values): the last frame
    /// a body has, so it was read to its end.
    pub(crate) fn http_trailers(&self, index: usize, trailers: &http::HeaderMap) {
        if let Some(HttpAnswer::Response { trailers: kept, complete, .. }) =
            self.lock().http.get_mut(index).map(|e| &mut e.answer)
        {
            *kept = Some(encode_fields(trailers));
            *complete = true;
        }
    }

    /// A `wasi:io/poll` call (or a `pollable.ready`) found the pollables at `ready` ready.
    pub(crate) fn poll(&self, ready: &[u32]) {
        self.lock().polls.push(ready.to_vec());
    }

    /// A read of a response body's stream gave `bytes` bytes, or ended it (`None`).
    pub(crate) fn read(&self, bytes: Option<usize>) {
        self.lock().reads.push(bytes.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)));
    }

    /// The journal as recorded so far.
    pub(crate) fn journal(&self) -> Journal {
        self.lock().clone()
    }

    /// Builds the WASI context's clocks and generators as recorders onto this tape.
    pub(crate) fn install(&self, wasi: &mut WasiCtxBuilder) {
        let start = Instant::now();
        wasi.wall_clock(RecordWall(self.clone()))
            .monotonic_clock(RecordMonotonic(self.clone(), start))
            .secure_random(Recorder {
                tape: self.clone(),
                inner: wasmtime_wasi::random::thread_rng(),
                secure: true,
            })
            .insecure_random(Recorder {
                tape: self.clone(),
                inner: wasmtime_wasi::random::thread_rng(),
                secure: false,
            })
            .insecure_random_seed(self.1);
    }
}

struct RecordWall(Tape);

impl HostWallClock for RecordWall {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.0.lock().wall.push(u64::try_from(now.as_nanos()).unwrap_or(u64::MAX));
        now
    }
}

struct RecordMonotonic(Tape, Instant);

impl HostMonotonicClock for RecordMonotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        let now = u64::try_from(self.1.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.0.lock().monotonic.push(now);
        now
    }
}

/// A real generator whose every answer is appended to the tape. wasmtime-wasi draws each
/// random *byte* it hands a guest as `next_u32() as u8` (rand's uniform `u8`), so only that
/// low byte reaches the guest and only it is kept: a quarter of the tape; the replay answers
/// `next_u32` with the byte. `next_u64` (`get-random-u64`) and whole fills keep every byte.
struct Recorder {
    tape: Tape,
    inner: Box<dyn rand_core::Rng + Send>,
    secure: bool,
}

impl rand_core::TryRng for Recorder {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut byte = [0];
        self.try_fill_bytes(&mut byte)?;
        Ok(u32::from(byte[0]))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0; 8];
        self.try_fill_bytes(&mut bytes)?;
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.inner.fill_bytes(dst);
        let mut journal = self.tape.lock();
        if self.secure { &mut journal.random } else { &mut journal.insecure }.extend_from_slice(dst);
        Ok(())
    }
}

/// The tape a replay reads from, and what it could not answer.
#[derive(Clone)]
pub(crate) struct Player(Arc<Mutex<Playing>>);

struct Playing {
    journal: Arc<Journal>,
    wall: usize,
    monotonic: usize,
    random: usize,
    insecure: usize,
    http: usize,
    polls: usize,
    reads: usize,
    /// Calls past the journal, by kind.
    past: [u64; 7],
}

const KINDS: [&str; 7] = [
    "wall clock reads",
    "monotonic clock reads",
    "secure random bytes",
    "insecure random bytes",
    "http requests",
    "readiness checks",
    "response body reads",
];

impl Player {
    pub(crate) fn new(journal: Arc<Journal>) -> Player {
        Player(Arc::new(Mutex::new(Playing {
            journal,
            wall: 0,
            monotonic: 0,
            random: 0,
            insecure: 0,
            http: 0,
            polls: 0,
            reads: 0,
            past: [0; 7],
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Playing> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The calls the journal could not answer, one line per kind.
    pub(crate) fn unanswered(&self) -> Vec<String> {
        let playing = self.lock();
        let j = &playing.journal;
        let recorded = [
            j.wall.len(),
            j.monotonic.len(),
            j.random.len(),
            j.insecure.len(),
            j.http.len(),
            j.polls.len(),
            j.reads.len(),
        ];
        KINDS
            .iter()
            .zip(playing.past)
            .zip(recorded)
            .filter(|((_, past), _)| *past > 0)
            .map(|((kind, past), recorded)| format!("{kind}: {past} past the {recorded} recorded"))
            .collect()
    }

    /// Builds the WASI context's clocks and generators as players of this tape.
    pub(crate) fn install(&self, wasi: &mut WasiCtxBuilder) {
        // Checked by `Journal::replay_input`.
        let seed = u128::from_str_radix(&self.lock().journal.insecure_seed, 16).unwrap_or(0);
        wasi.wall_clock(PlayWall(self.clone()))
            .monotonic_clock(PlayMonotonic(self.clone()))
            .secure_random(PlayRng(self.clone(), true))
            .insecure_random(PlayRng(self.clone(), false))
            .insecure_random_seed(seed);
    }

    /// The next recorded clock reading of kind `wall` (else monotonic); past the end, the
    /// last one (or 0), counted.
    fn clock(&self, wall: bool) -> u64 {
        let mut playing = self.lock();
        let Playing { journal, wall: w, monotonic: m, past, .. } = &mut *playing;
        let (reads, at, kind) = if wall { (&journal.wall, w, 0) } else { (&journal.monotonic, m, 1) };
        match reads.get(*at) {
            Some(read) => {
                *at += 1;
                *read
            }
            None => {
                past[kind] += 1;
                reads.last().copied().unwrap_or(0)
            }
        }
    }

    /// The recorded answer of the guest's next request, when it is the recorded one (same
    /// method and URL); else `None`, counted, and the journal's place kept.
    pub(crate) fn next_http(&self, method: &str, url: &str) -> Option<HttpAnswer> {
        let mut playing = self.lock();
        let Playing { journal, http, past, .. } = &mut *playing;
        match journal.http.get(*http) {
            Some(exchange) if exchange.method == method && exchange.url == url => {
                *http += 1;
                Some(exchange.answer.clone())
            }
            _ => {
                past[4] += 1;
                None
            }
        }
    }

    /// Which of `count` pollables the next recorded poll found ready; `None` when the journal
    /// has no answer — past its polls (counted), one that names a pollable past `count` (a
    /// changed module; counted), or a format-1 journal (not counted).
    pub(crate) fn next_poll(&self, count: usize) -> Option<Vec<u32>> {
        let mut playing = self.lock();
        let Playing { journal, polls, past, .. } = &mut *playing;
        if !journal.scripts_readiness() {
            return None;
        }
        match journal.polls.get(*polls) {
            Some(ready) if ready.iter().all(|&i| (i as usize) < count) => {
                *polls += 1;
                Some(ready.clone())
            }
            _ => {
                past[5] += 1;
                None
            }
        }
    }

    /// What the next recorded read of a response body gave: `Some(Some(n))` n bytes,
    /// `Some(None)` the stream's end; `None` when the journal has no answer (counted when
    /// past its reads, not for a format-1 journal).
    pub(crate) fn next_read(&self) -> Option<Option<usize>> {
        let mut playing = self.lock();
        let Playing { journal, reads, past, .. } = &mut *playing;
        if !journal.scripts_readiness() {
            return None;
        }
        match journal.reads.get(*reads) {
            Some(&n) => {
                *reads += 1;
                Some(usize::try_from(n).ok())
            }
            None => {
                past[6] += 1;
                None
            }
        }
    }

    fn fill(&self, secure: bool, dst: &mut [u8]) {
        let mut playing = self.lock();
        let Playing { journal, random, insecure, past, .. } = &mut *playing;
        let (bytes, at, kind) =
            if secure { (&journal.random, random, 2) } else { (&journal.insecure, insecure, 3) };
        let available = bytes.len().saturating_sub(*at).min(dst.len());
        dst[..available].copy_from_slice(&bytes[*at..*at + available]);
        dst[available..].fill(0);
        *at += available;
        past[kind] += (dst.len() - available) as u64;
    }
}

struct PlayWall(Player);

impl HostWallClock for PlayWall {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.clock(true))
    }
}

struct PlayMonotonic(Player);

impl HostMonotonicClock for PlayMonotonic {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.clock(false)
    }
}

struct PlayRng(Player, bool);

impl rand_core::TryRng for PlayRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut byte = [0];
        self.0.fill(self.1, &mut byte);
        Ok(u32::from(byte[0]))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut bytes = [0; 8];
        self.0.fill(self.1, &mut bytes);
        Ok(u64::from_le_bytes(bytes))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.0.fill(self.1, dst);
        Ok(())
    }
}
