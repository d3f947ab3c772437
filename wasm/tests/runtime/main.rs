//! Integration tests for `jobwheel-wasm`: real modules (WAT fixtures and the sample jobs)
//! through a real runtime, one test binary so the runtime is compiled and linked once.

mod cancel;
mod disk_cache;
mod fixtures;
mod limits;
mod loading;
mod runs;
mod sample_jobs;
mod support;
