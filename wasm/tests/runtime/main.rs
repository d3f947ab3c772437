//! Integration tests for `jobwheel-wasm`: real modules (WAT fixtures and the sample jobs) and
//! real components (the `http-check` sample) through a real runtime, one test binary so the runtime is compiled and linked once.

mod cancel;
mod components;
mod disk_cache;
mod fixtures;
mod http_server;
mod limits;
mod loading;
mod pooling;
mod replay;
mod runs;
mod sample_jobs;
mod support;
