//! Guest SDK for jobwheel `GLUE_WASM` jobs (filled in by the Wasm GLUE issue).
#![forbid(unsafe_code)]
