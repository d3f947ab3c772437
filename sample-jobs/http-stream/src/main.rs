//! `http-stream`: GET the URL in the job parameter and read the response body as it arrives,
//! racing a timer (variable `STREAM_TICK_MS`, default 5) against each chunk: a line per chunk
//! (`chunk: N bytes`), one per tick that came first (`waiting`), one for a read that found
//! nothing yet (`nothing yet`), then the trailers that ended the body (`trailer name: value`).
//!
//! What it prints depends on when the bytes arrived, which is the point: a job that streams a
//! download with a progress timer, written on the raw `wasi:io/poll` and `wasi:http` calls
//! (the `wasip2` bindings) rather than a blocking client, so every poll's answer and every
//! non-blocking read matter. The flight recorder's tests replay it (docs/replay.md).

use jobwheel_guest_sdk::{log, report};
use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, IncomingBody, OutgoingRequest, Scheme};
use wasip2::io::poll;
use wasip2::io::streams::StreamError;

jobwheel_guest_sdk::main!(|ctx| {
    let url = ctx.param();
    let rest = url.strip_prefix("http://").ok_or("give an http:// URL as the parameter")?;
    let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let tick_ms: u64 = ctx.var("STREAM_TICK_MS").and_then(|n| n.parse().ok()).unwrap_or(5);

    let request = OutgoingRequest::new(Fields::new());
    request.set_scheme(Some(&Scheme::Http)).map_err(|()| "scheme")?;
    request.set_authority(Some(authority)).map_err(|()| "authority")?;
    request.set_path_with_query(Some(&path)).map_err(|()| "path")?;
    let pending = outgoing_handler::handle(request, None).map_err(|e| format!("GET {url}: {e:?}"))?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(format!("GET {url} failed: {code:?}")),
        _ => return Err(format!("GET {url}: no response")),
    };
    log!("status {}", response.status());
    let body = response.consume().map_err(|()| "the body was taken")?;
    let stream = body.stream().map_err(|()| "the body's stream was taken")?;
    let mut total = 0u64;
    loop {
        let arrived = stream.subscribe();
        if !arrived.ready() {
            let tick = monotonic_clock::subscribe_duration(tick_ms * 1_000_000);
            if !poll::poll(&[&arrived, &tick]).contains(&0) {
                log!("waiting");
                continue;
            }
        }
        match stream.read(64 * 1024) {
            Ok(bytes) if bytes.is_empty() => log!("nothing yet"),
            Ok(bytes) => {
                total += bytes.len() as u64;
                log!("chunk: {} bytes", bytes.len());
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => return Err(format!("reading the body: {}", e.to_debug_string())),
        }
    }
    drop(stream);
    let trailers = IncomingBody::finish(body);
    trailers.subscribe().block();
    match trailers.get() {
        Some(Ok(Ok(Some(fields)))) => {
            for (name, value) in fields.entries() {
                log!("trailer {name}: {}", String::from_utf8_lossy(&value));
            }
        }
        Some(Ok(Ok(None))) => log!("no trailers"),
        Some(Ok(Err(code))) => return Err(format!("the trailers: {code:?}")),
        _ => return Err("the trailers never came".to_owned()),
    }
    report(&format!("bytes={total}"));
    Ok::<(), String>(())
});
