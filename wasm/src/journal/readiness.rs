//! Readiness and body reads in a journal. What a component sees of time passing is not only
//! its clock reads: `wasi:io/poll` says which of its pollables are ready (a response body's
//! next bytes, a timer), and a non-blocking read of a response body gives whatever has arrived
//! — nothing yet, or part of a frame. A guest that races a timer against a download, or acts on
//! "nothing yet", does different work depending on when bytes arrived.
//!
//! So a recorded run keeps each poll's answer (the indices it found ready; a `pollable.ready`
//! is a poll of one) and each body read's byte count, and a replay answers them from the
//! journal: a poll returns the recorded indices once those pollables are ready (a replayed
//! body is ready at once; a timer still waits its real duration), and a body read returns
//! exactly the recorded number of bytes — none where the original got none. The functions are
//! wasmtime-wasi's and wasmtime-wasi-http's own, shadowed in the component linker by wrappers
//! that call them when recording and when the journal has no answer.

use bytes::{Bytes, BytesMut};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io::poll::{Host as PollHost, HostPollable};
use wasmtime_wasi::p2::{DynInputStream, DynPollable, InputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtxView, WasiView};
use wasmtime_wasi_http::p2::body::{HostIncomingBody, HostIncomingBodyStream};

use super::Recorder;

/// The interfaces shadowed, by the names wasmtime-wasi 48 defines them under (a guest's
/// `@0.2.x` import resolves to them by semver).
const POLL: &str = "wasi:io/poll@0.2.12";
const HTTP_TYPES: &str = "wasi:http/types@0.2.12";

/// A store whose runs may be journaled.
pub(crate) trait Journaled: WasiView + Send + 'static {
    /// The run's recorder.
    fn recorder(&self) -> &Recorder;
}

/// Shadows `poll`, `pollable.ready` and `incoming-body.stream` in `linker` (which must hold
/// WASI 0.2 and `wasi:http` already) with their journaling forms.
pub(crate) fn add_to_linker<T: Journaled>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut poll = linker.instance(POLL)?;
    poll.func_wrap_async(
        "poll",
        |store: StoreContextMut<'_, T>, (pollables,): (Vec<Resource<DynPollable>>,)| {
            Box::new(poll_list(store, pollables))
        },
    )?;
    poll.func_wrap_async("[method]pollable.ready", |store: StoreContextMut<'_, T>, (pollable,)| {
        Box::new(ready(store, pollable))
    })?;
    linker.instance(HTTP_TYPES)?.func_wrap("[method]incoming-body.stream", body_stream::<T>)?;
    linker.allow_shadowing(false);
    Ok(())
}

fn parts<'a, T: Journaled>(store: &'a mut StoreContextMut<'_, T>) -> (Recorder, &'a mut ResourceTable) {
    let recorder = store.data().recorder().clone();
    let WasiCtxView { table, .. } = store.data_mut().ctx();
    (recorder, table)
}

fn borrow(pollable: &Resource<DynPollable>) -> Resource<DynPollable> {
    Resource::new_borrow(pollable.rep())
}

async fn poll_list<T: Journaled>(
    mut store: StoreContextMut<'_, T>,
    pollables: Vec<Resource<DynPollable>>,
) -> wasmtime::Result<(Vec<u32>,)> {
    let (recorder, table) = parts(&mut store);
    match recorder {
        Recorder::Record(tape) => {
            let ready = PollHost::poll(table, pollables).await?;
            tape.poll(&ready);
            Ok((ready,))
        }
        Recorder::Replay(player) => match player.next_poll(pollables.len()) {
            Some(ready) => {
                for &index in &ready {
                    HostPollable::block(table, borrow(&pollables[index as usize])).await?;
                }
                Ok((ready,))
            }
            None => Ok((PollHost::poll(table, pollables).await?,)),
        },
        Recorder::Off => Ok((PollHost::poll(table, pollables).await?,)),
    }
}

async fn ready<T: Journaled>(
    mut store: StoreContextMut<'_, T>,
    pollable: Resource<DynPollable>,
) -> wasmtime::Result<(bool,)> {
    let (recorder, table) = parts(&mut store);
    match recorder {
        Recorder::Record(tape) => {
            let ready = HostPollable::ready(table, pollable).await?;
            tape.poll(if ready { &[0] } else { &[] });
            Ok((ready,))
        }
        Recorder::Replay(player) => match player.next_poll(1) {
            Some(ready) if ready.is_empty() => Ok((false,)),
            Some(_) => {
                HostPollable::block(table, pollable).await?;
                Ok((true,))
            }
            None => Ok((HostPollable::ready(table, pollable).await?,)),
        },
        Recorder::Off => Ok((HostPollable::ready(table, pollable).await?,)),
    }
}

/// `incoming-body.stream`, as wasmtime-wasi-http has it, the stream wrapped when journaled.
fn body_stream<T: Journaled>(
    mut store: StoreContextMut<'_, T>,
    (body,): (Resource<HostIncomingBody>,),
) -> wasmtime::Result<(Result<Resource<DynInputStream>, ()>,)> {
    let (recorder, table) = parts(&mut store);
    let Some(inner) = table.get_mut(&body)?.take_stream() else { return Ok((Err(()),)) };
    let stream: DynInputStream = match recorder {
        Recorder::Off => Box::new(inner),
        recorder => Box::new(JournaledStream { inner, recorder }),
    };
    Ok((Ok(table.push_child(stream, &body)?),))
}

/// A response body's stream whose reads are recorded, or answered from the journal.
struct JournaledStream {
    inner: HostIncomingBodyStream,
    recorder: Recorder,
}

impl JournaledStream {
    /// `n` bytes from the replayed body (whose frames are the recorded ones, all there): what
    /// the original's read got.
    fn exactly(&mut self, n: usize) -> StreamResult<Bytes> {
        if n == 0 {
            return Ok(Bytes::new());
        }
        let first = self.inner.read(n)?;
        if first.len() == n || first.is_empty() {
            return Ok(first);
        }
        let mut all = BytesMut::from(&first[..]);
        while all.len() < n {
            let more = self.inner.read(n - all.len())?;
            if more.is_empty() {
                break;
            }
            all.extend_from_slice(&more);
        }
        Ok(all.freeze())
    }
}

#[async_trait::async_trait]
impl InputStream for JournaledStream {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        match &self.recorder {
            Recorder::Record(tape) => {
                let read = self.inner.read(size);
                tape.read(read.as_ref().ok().map(Bytes::len));
                read
            }
            Recorder::Replay(player) => match player.next_read() {
                Some(Some(n)) => self.exactly(n.min(size)),
                // The end, or no answer: the replayed body as it is.
                Some(None) | None => self.inner.read(size),
            },
            Recorder::Off => self.inner.read(size),
        }
    }
}

#[async_trait::async_trait]
impl Pollable for JournaledStream {
    async fn ready(&mut self) {
        // A replayed body's frames are all there: its reads follow the journal, not arrival.
        if !matches!(self.recorder, Recorder::Replay(_)) {
            self.inner.ready().await;
        }
    }
}
