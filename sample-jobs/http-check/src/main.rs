//! `http-check`: GET the URL in variable `CHECK_URL` (or the job parameter, if given) with the
//! bearer token in secret `CHECK_TOKEN`, and report the status; a non-2xx status fails the run.
//! Variable `CHECK_REPEAT` (default 1) repeats the request, to exercise per-run limits; with
//! `CHECK_KEEP_GOING` set, a request that fails (refused by the policy, unreachable) is skipped
//! silently instead of ending the run — a guest looping on refusals, as the output budget's
//! test needs (security review L5).
//!
//! A WASI 0.2 component (`wasm32-wasip2`): outbound HTTP exists only there, and only to the
//! origins the job's network policy allows. The same job in Python and JavaScript is in
//! `sample-jobs/components/`.

use jobwheel_guest_sdk::http::Request;
use jobwheel_guest_sdk::{log, report};

jobwheel_guest_sdk::main!(|ctx| {
    let url = if ctx.param().is_empty() { ctx.var("CHECK_URL").ok_or("set the variable CHECK_URL")? } else { ctx.param().to_owned() };
    let repeat: u32 = ctx.var("CHECK_REPEAT").and_then(|n| n.parse().ok()).unwrap_or(1);
    let keep_going = ctx.var("CHECK_KEEP_GOING").is_some();
    let mut last = 0;
    for _ in 0..repeat {
        let mut request = Request::get(&url);
        if let Some(token) = ctx.secret("CHECK_TOKEN") {
            request = request.bearer(&token);
        }
        let response = match request.send() {
            Ok(response) => response,
            Err(_) if keep_going => continue,
            Err(error) => return Err(error.to_string()),
        };
        log!("GET {url} -> {} ({} bytes)", response.status, response.body.len());
        if !response.is_success() {
            return Err(format!("{url} answered {}", response.status));
        }
        last = response.status;
    }
    report(&format!("status={last}"));
    Ok::<(), String>(())
});
