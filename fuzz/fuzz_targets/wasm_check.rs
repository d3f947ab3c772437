//! The admin's Wasm upload check (`wasm_check::inspect`): never panics on any bytes, and an
//! accepted module is described consistently.
#![no_main]

use jobwheel_fuzz::admin::wasm_check::{ENTRY_EXPORT, inspect};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(info) = inspect(data) else { return };
    assert_eq!(info.size, data.len() as u64);
    assert_eq!(info.digest.len(), 64);
    assert!(info.exports.iter().any(|e| e == ENTRY_EXPORT));
    assert!(info.imports.iter().all(|i| i.starts_with("wasi_snapshot_preview1.")));
});
