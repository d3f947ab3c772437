//! The executor's request decoding (`ExecutorRequest::parse`, what its server runs on every
//! body): never panics, and whatever it accepts survives a serialize/parse round trip.
#![no_main]

use jobwheel_protocol::executor_api::paths;
use jobwheel_protocol::{ExecutorRequest, ExecutorRequestError};
use libfuzzer_sys::fuzz_target;

const PATHS: [&str; 12] = [
    paths::BEAT,
    paths::IDLE_BEAT,
    paths::RUN,
    paths::TRIGGER,
    paths::KILL,
    paths::LOG,
    paths::WASM_PREPARE,
    paths::STATUS,
    paths::OUTSTANDING,
    paths::RUN_BATCH,
    paths::REPLAY,
    "/nope",
];

fuzz_target!(|data: &[u8]| {
    // The first byte picks the endpoint, the rest is the body.
    let Some((&selector, body)) = data.split_first() else { return };
    let path = PATHS[usize::from(selector) % PATHS.len()];
    let request = match ExecutorRequest::parse(path, body) {
        Ok(request) => request,
        Err(ExecutorRequestError::UnknownPath) => {
            assert_eq!(path, "/nope");
            return;
        }
        Err(ExecutorRequestError::InvalidBody(message)) => {
            assert!(message.starts_with("request error: invalid JSON body for "));
            return;
        }
    };
    let json = match &request {
        // No body to round-trip.
        ExecutorRequest::Beat | ExecutorRequest::Status => return,
        ExecutorRequest::IdleBeat(p) => serde_json::to_vec(p),
        ExecutorRequest::Run(p) => serde_json::to_vec(p),
        ExecutorRequest::Kill(p) => serde_json::to_vec(p),
        ExecutorRequest::Log(p) => serde_json::to_vec(p),
        ExecutorRequest::WasmPrepare(p) => serde_json::to_vec(p),
        ExecutorRequest::Outstanding(p) => serde_json::to_vec(p),
        ExecutorRequest::RunBatch(p) => serde_json::to_vec(p),
        ExecutorRequest::Replay(p) => serde_json::to_vec(p),
    }
    .expect("a decoded request serializes");
    assert_eq!(ExecutorRequest::parse(path, &json).as_ref(), Ok(&request), "round trip of {path}");
});
