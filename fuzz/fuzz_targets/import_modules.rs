//! The modules section of an export file being imported (`import_modules::decode_modules`):
//! any digests and texts — base64 of arbitrary bytes, or not base64 at all — never panic, every
//! module kept passed the upload check and has exactly the digest it is filed under, and every
//! other entry is one problem that names its digest.
#![no_main]

use std::collections::BTreeMap;

use base64::Engine as _;
use jobwheel_fuzz::import_modules::decode_modules;
use jobwheel_fuzz::wasm_check::inspect;
use libfuzzer_sys::fuzz_target;
use sha2::{Digest as _, Sha256};

fuzz_target!(|data: &[u8]| {
    // Entries separated by 0xFF; each entry's first byte chooses how it is filed: its real
    // digest or a made-up one, its bytes as base64 or as raw text.
    let mut modules = BTreeMap::new();
    for (n, entry) in data.split(|b| *b == 0xFF).enumerate() {
        let Some((&how, bytes)) = entry.split_first() else { continue };
        let digest = if how & 1 == 0 { hex::encode(Sha256::digest(bytes)) } else { format!("{n:064x}") };
        let text = if how & 2 == 0 {
            base64::engine::general_purpose::STANDARD.encode(bytes)
        } else {
            String::from_utf8_lossy(bytes).into_owned()
        };
        modules.insert(digest, text);
    }
    let mut problems = Vec::new();
    let kept = decode_modules(&modules, &mut problems);
    assert_eq!(kept.len() + problems.len(), modules.len(), "each entry is kept or a problem");
    for (digest, bytes) in &kept {
        assert_eq!(&hex::encode(Sha256::digest(bytes)), digest);
        assert!(modules.contains_key(digest));
        assert!(inspect(bytes).is_ok());
    }
    for problem in &problems {
        assert!(modules.keys().any(|digest| problem.starts_with(&format!("module {digest}: "))), "{problem}");
    }
});
