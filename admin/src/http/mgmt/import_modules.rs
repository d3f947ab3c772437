//! The modules section of an export file being imported (`import.rs`): each module's base64
//! text is decoded and inspected like an upload (`wasm_check`), and kept only when its bytes
//! have the digest it is filed under; everything else is a problem that names the digest.
//!
//! Pure — no store, no HTTP — because it reads untrusted text: the fuzz target
//! `import_modules` compiles this file as it is (docs/fuzzing.md).

use std::collections::{BTreeMap, HashMap};

use base64::Engine as _;

use crate::wasm_check::inspect;

/// The modules of `modules` (digest → standard base64) that decode, pass the upload check and
/// match their digest, by digest; one line in `problems` for each that does not.
#[allow(unreachable_pub, reason = "public for the fuzz crate, which compiles this file as a public module")]
pub fn decode_modules(
    modules: &BTreeMap<String, String>,
    problems: &mut Vec<String>,
) -> HashMap<String, Vec<u8>> {
    let mut out = HashMap::new();
    for (digest, encoded) in modules {
        let decoded = base64::engine::general_purpose::STANDARD.decode(encoded);
        match decoded
            .map_err(|e| e.to_string())
            .and_then(|bytes| inspect(&bytes).map(|info| (bytes, info)).map_err(|e| e.to_string()))
        {
            Ok((bytes, info)) if info.digest == *digest => {
                out.insert(digest.clone(), bytes);
            }
            Ok((_, info)) => problems.push(format!("module {digest}: its bytes have digest {}", info.digest)),
            Err(reason) => problems.push(format!("module {digest}: {reason}")),
        }
    }
    out
}
