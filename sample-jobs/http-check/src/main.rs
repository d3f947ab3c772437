//! `http-check`: GET the URL in variable `CHECK_URL` (or the job parameter, if given) with the
//! bearer token in secret `CHECK_TOKEN`, and report the status; a non-2xx status fails the run.
//! Variable `CHECK_REPEAT` (default 1) repeats the request, to exercise per-run limits.
//!
//! A WASI 0.2 component (`wasm32-wasip2`): outbound HTTP exists only there, and only to the
//! origins the job's network policy allows. The same job in Python and JavaScript is in
//! `sample-jobs/components/`.

use jobwheel_guest_sdk::http::Request;
use jobwheel_guest_sdk::{log, report};

jobwheel_guest_sdk::main!(|ctx| {
    let url = if ctx.param().is_empty() { ctx.var("CHECK_URL").ok_or("set the variable CHECK_URL")? } else { ctx.param().to_owned() };
    let repeat: u32 = ctx.var("CHECK_REPEAT").and_then(|n| n.parse().ok()).unwrap_or(1);
    let mut last = 0;
    for _ in 0..repeat {
        let mut request = Request::get(&url);
        if let Some(token) = ctx.secret("CHECK_TOKEN") {
            request = request.bearer(&token);
        }
        let response = request.send().map_err(|error| error.to_string())?;
        log!("GET {url} -> {} ({} bytes)", response.status, response.body.len());
        if !response.is_success() {
            return Err(format!("{url} answered {}", response.status));
        }
        last = response.status;
    }
    report(&format!("status={last}"));
    Ok::<(), String>(())
});
