//! The crate-boundary error: infrastructure failures callers match on (never guest failures).

use std::path::PathBuf;

/// Why a module could not be loaded or the runtime could not be built.
///
/// Messages from wasmtime are kept as text because `wasmtime::Error` is not a
/// `std::error::Error`; the variant is what callers dispatch on.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// The digest is not 64 hexadecimal characters (it names a file, so it is checked strictly).
    #[error("invalid module digest {digest:?}: expected 64 hex characters of SHA-256")]
    InvalidDigest {
        /// The rejected digest as given.
        digest: String,
    },
    /// The caller's `fetch` closure failed.
    #[error("fetching module {digest} failed: {message}")]
    Fetch {
        /// Digest that was being fetched.
        digest: String,
        /// The fetch error, formatted with its causes.
        message: String,
    },
    /// The fetched bytes do not hash to the requested digest.
    #[error("module digest mismatch: expected {expected}, fetched bytes hash to {actual}")]
    DigestMismatch {
        /// Digest the caller asked for.
        expected: String,
        /// SHA-256 of the bytes that `fetch` returned.
        actual: String,
    },
    /// The bytes are not a valid WebAssembly module for this engine.
    #[error("module {digest} does not compile: {message}")]
    Compile {
        /// Digest of the module.
        digest: String,
        /// wasmtime's explanation.
        message: String,
    },
    /// The module imports something the runtime does not provide (the message names it).
    #[error("module {digest} cannot be linked: {message}")]
    Link {
        /// Digest of the module.
        digest: String,
        /// wasmtime's explanation, e.g. ``unknown import: `env::foo` has not been defined``.
        message: String,
    },
    /// The module has no usable `_start` export.
    #[error("module {digest} has no usable entry point: {message}")]
    Entry {
        /// Digest of the module.
        digest: String,
        /// What is wrong with the export.
        message: String,
    },
    /// The wasmtime engine could not be created from the configuration.
    #[error("cannot create the wasm engine: {message}")]
    Engine {
        /// wasmtime's explanation.
        message: String,
    },
    /// The configured disk cache directory cannot be created.
    #[error("cannot create module cache directory {path}: {source}")]
    CacheDir {
        /// Directory that could not be created.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A blocking compile task panicked or was cancelled (a bug or a runtime shutting down).
    #[error("module {digest}: background compile task failed: {message}")]
    Task {
        /// Digest of the module.
        digest: String,
        /// The join error.
        message: String,
    },
}
