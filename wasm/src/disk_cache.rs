//! On-disk cache of precompiled modules and components, so an executor restart does not
//! recompile. The payload says which kind it is (wasmtime's `detect_precompiled`).
//!
//! Layout: `<root>/wasmtime48-<compat>/<digest>.cwasm`, where `<compat>` hashes
//! `Engine::precompile_compatibility_hash` (target, compiler flags, tunables, wasmtime
//! version): an engine configured differently gets a fresh directory instead of being fed
//! artifacts it would reject. Each file is `MAGIC ‖ sha256(payload) ‖ payload`; the checksum
//! is ours because wasmtime validates headers but not arbitrary corruption of native code.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Module, Precompiled};

use crate::error::WasmError;

/// A compiled artifact of either kind.
pub(crate) enum Compiled {
    Module(Module),
    Component(Component),
}

impl Compiled {
    pub(crate) fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        match self {
            Compiled::Module(module) => module.serialize(),
            Compiled::Component(component) => component.serialize(),
        }
    }
}

/// Identifies our file format; bump the digit if it changes.
const MAGIC: &[u8; 8] = b"JWCWASM1";
const HEADER_LEN: usize = MAGIC.len() + 32;
/// Major wasmtime version, part of the directory name for humans inspecting the cache (the
/// compatibility hash already covers the exact version).
const WASMTIME_TAG: &str = "wasmtime48";

/// A directory of precompiled artifacts private to one executor.
#[derive(Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    /// Creates (if needed) the engine-specific subdirectory of `root`.
    pub(crate) fn open(root: &Path, engine: &Engine) -> Result<DiskCache, WasmError> {
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let compat = hex::encode(&hasher.0.finalize()[..8]);
        let dir = root.join(format!("{WASMTIME_TAG}-{compat}"));
        fs::create_dir_all(&dir).map_err(|source| WasmError::CacheDir { path: dir.clone(), source })?;
        Ok(DiskCache { dir })
    }

    /// Path of the artifact for `digest` (already validated as hex, so it cannot escape `dir`).
    pub(crate) fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}.cwasm"))
    }

    /// Loads the artifact for `digest`, or `None` if absent. A corrupt or incompatible file is
    /// deleted (so the caller recompiles and rewrites it). Blocking: call off the async threads.
    pub(crate) fn load(&self, engine: &Engine, digest: &str) -> Option<Compiled> {
        let path = self.path(digest);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "cannot read cached module; recompiling");
                return None;
            }
        };
        match deserialize_checked(engine, &bytes) {
            Ok(module) => Some(module),
            Err(reason) => {
                tracing::warn!(path = %path.display(), %reason, "discarding unusable cached module");
                if let Err(error) = fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), %error, "cannot delete unusable cached module");
                }
                None
            }
        }
    }

    /// Writes `artifact` (from [`Compiled::serialize`]) for `digest` atomically: a temp file in the
    /// same directory renamed over the final name, so readers never see a partial file.
    pub(crate) fn store(&self, digest: &str, artifact: &[u8]) -> io::Result<()> {
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        file.write_all(MAGIC)?;
        file.write_all(&Sha256::digest(artifact))?;
        file.write_all(artifact)?;
        file.persist(self.path(digest)).map_err(|error| error.error)?;
        Ok(())
    }
}

/// Checks our header and checksum, then hands the payload to wasmtime.
fn deserialize_checked(engine: &Engine, bytes: &[u8]) -> Result<Compiled, String> {
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a jobwheel artifact (bad header)".to_owned());
    }
    let (checksum, payload) = bytes[MAGIC.len()..].split_at(32);
    if Sha256::digest(payload).as_slice() != checksum {
        return Err("checksum mismatch (file corrupted)".to_owned());
    }
    #[allow(unsafe_code, reason = "loading precompiled native code is inherently unsafe in wasmtime")]
    // SAFETY: `Module::deserialize` / `Component::deserialize` trust that the bytes came from
    // `serialize` of the same kind on a compatible engine. They do: the cache directory is
    // private to this executor (it never receives artifacts from the admin or users; modules
    // arrive as wasm and are compiled here), files are written only by `DiskCache::store` from
    // `Compiled::serialize`, the SHA-256 checked just above rules out corruption on disk, the
    // kind is read from the artifact itself, and wasmtime rejects artifacts from another
    // version or configuration with an error.
    let compiled = unsafe {
        match Engine::detect_precompiled(payload) {
            Some(Precompiled::Module) => Module::deserialize(engine, payload).map(Compiled::Module),
            Some(Precompiled::Component) => Component::deserialize(engine, payload).map(Compiled::Component),
            None => return Err("not a wasmtime artifact".to_owned()),
        }
    };
    compiled.map_err(|error| format!("rejected by wasmtime: {error:#}"))
}

/// Feeds `Hash` output into SHA-256: `DefaultHasher`'s algorithm may change between Rust
/// releases, and the directory name must stay stable for as long as the engine does. Only
/// `write` matters; `finish` is unused.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}
