//! WebAssembly GLUE runtime (filled in by the Wasm GLUE issue).
#![forbid(unsafe_code)]
