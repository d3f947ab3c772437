//! The tapes under a journal: recording clocks and generators that append every answer they
//! give a guest, and replaying ones that answer from a journal in the same order and count the
//! calls it cannot answer.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

use super::{JOURNAL_VERSION, Journal, JournalInputs};

/// A fresh seed for `wasi:random/insecure-seed`.
pub(crate) fn fresh_seed() -> u128 {
    use rand_core::Rng as _;
    let mut rng = wasmtime_wasi::random::thread_rng();
    (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())
}

/// The tape a recording run appends to.
#[derive(Clone)]
pub(crate) struct Tape(Arc<Mutex<Journal>>, u128);

impl Tape {
    /// A tape for a run given `inputs`, whose insecure seed is `insecure_seed`.
    pub(crate) fn new(inputs: JournalInputs, insecure_seed: u128) -> Tape {
        let journal = Journal {
            version: JOURNAL_VERSION,
            inputs,
            wall: Vec::new(),
            monotonic: Vec::new(),
            random: Vec::new(),
            insecure: Vec::new(),
            insecure_seed: format!("{insecure_seed:032x}"),
            not_replayable: None,
        };
        Tape(Arc::new(Mutex::new(journal)), insecure_seed)
    }

    fn lock(&self) -> MutexGuard<'_, Journal> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Marks the run as not replayable (the first reason stays).
    pub(crate) fn not_replayable(&self, why: &str) {
        self.lock().not_replayable.get_or_insert_with(|| why.to_owned());
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
    /// Calls past the journal, by kind.
    past: [u64; 4],
}

const KINDS: [&str; 4] =
    ["wall clock reads", "monotonic clock reads", "secure random bytes", "insecure random bytes"];

impl Player {
    pub(crate) fn new(journal: Arc<Journal>) -> Player {
        Player(Arc::new(Mutex::new(Playing {
            journal,
            wall: 0,
            monotonic: 0,
            random: 0,
            insecure: 0,
            past: [0; 4],
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Playing> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The calls the journal could not answer, one line per kind.
    pub(crate) fn unanswered(&self) -> Vec<String> {
        let playing = self.lock();
        let j = &playing.journal;
        let recorded = [j.wall.len(), j.monotonic.len(), j.random.len(), j.insecure.len()];
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
