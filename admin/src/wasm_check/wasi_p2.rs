//! The WASI 0.2 interfaces the executor's runtime links for components
//! (`wasmtime_wasi::p2::add_to_linker_async` + `wasmtime_wasi_http::p2::add_only_http_to_linker_async`
//! in `wasm/src/component.rs`), so uploads can be checked without linking wasmtime. The world is
//! written down as WIT in `wit/jobwheel-job.wit`.
//!
//! wasmtime matches imports by semver, so any `0.2.x` version of these interfaces links. The
//! admin's `wasm_check` tests hold this list to the executor's real linker.

/// `package/interface` names a job component may import.
pub const INTERFACES: &[&str] = &[
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
    "wasi:clocks/monotonic-clock",
    "wasi:clocks/wall-clock",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
    "wasi:io/error",
    "wasi:io/poll",
    "wasi:io/streams",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    // Linked, but every use is denied at run time: jobs reach the network through wasi:http.
    "wasi:sockets/network",
    "wasi:sockets/instance-network",
    "wasi:sockets/ip-name-lookup",
    "wasi:sockets/tcp",
    "wasi:sockets/tcp-create-socket",
    "wasi:sockets/udp",
    "wasi:sockets/udp-create-socket",
    "wasi:http/types",
    "wasi:http/outgoing-handler",
];

/// The export the runtime calls (`wasi:cli/command`'s entry point).
pub const RUN_EXPORT: &str = "wasi:cli/run";

/// Splits `wasi:cli/environment@0.2.3` into the interface and whether its version is `0.2.x`.
pub fn interface_of(name: &str) -> (&str, bool) {
    match name.split_once('@') {
        Some((interface, version)) => (interface, version.starts_with("0.2.")),
        None => (name, false),
    }
}

/// Whether the runtime provides import `name`.
pub fn provides(name: &str) -> bool {
    let (interface, version_ok) = interface_of(name);
    version_ok && INTERFACES.contains(&interface)
}
