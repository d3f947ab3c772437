//! Loading keyed by SHA-256 digest: memory cache → disk cache → fetch, verify, compile, link.
//! A new job version is a new digest, so hot reload is simply a cache miss. Preview1 modules and
//! WASI 0.2 components take the same path; the bytes (or the cached artifact) say which.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{ExternType, InstancePre, Module};
use wasmtime_wasi::p2::bindings::CommandPre;

use crate::abi::ENTRY_EXPORT;
use crate::component::{self, ComponentState};
use crate::disk_cache::Compiled;
use crate::error::WasmError;
use crate::run::RunState;
use crate::runtime::{Inner, Runtime};

/// A compiled, linked module or component ready to instantiate. Cheap to clone; a run holds its
/// own clone, so evicting or replacing the cache entry never affects a run in flight.
#[derive(Clone)]
pub struct LoadedModule {
    digest: Arc<str>,
    pub(crate) prepared: Prepared,
}

/// The two kinds of job binaries, linked.
#[derive(Clone)]
pub(crate) enum Prepared {
    /// A WASI preview1 command module (`_start`).
    Module(InstancePre<RunState>),
    /// A WASI 0.2 command component (`wasi:cli/run`).
    Component(CommandPre<ComponentState>),
}

impl LoadedModule {
    /// Lower-case hex SHA-256 of the wasm bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Whether this is a WASI 0.2 component (rather than a preview1 module).
    pub fn is_component(&self) -> bool {
        matches!(self.prepared, Prepared::Component(_))
    }
}

impl fmt::Debug for LoadedModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoadedModule").field("digest", &self.digest).finish_non_exhaustive()
    }
}

/// Where a [`Runtime::module`] call found the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadSource {
    /// Already in the memory cache, or loaded by a concurrent call this one waited for.
    Memory,
    /// Deserialized from a precompiled artifact in the disk cache (no fetch, no compile).
    Disk,
    /// Fetched, verified and compiled (and written to the disk cache when one is configured).
    Compiled,
}

/// Result of [`Runtime::module`].
#[derive(Debug, Clone)]
pub struct ModuleLoad {
    /// The module, ready for [`Runtime::run`].
    pub module: LoadedModule,
    /// How this call obtained it.
    pub source: LoadSource,
}

impl Runtime {
    /// Returns the module with this digest, loading it on first use.
    ///
    /// `fetch` is called only when neither cache has the module; its bytes must hash to
    /// `digest` (lower- or upper-case hex SHA-256). Compilation runs on tokio's blocking pool,
    /// and concurrent calls for the same new digest share one load.
    pub async fn module<F, Fut>(&self, digest: &str, fetch: F) -> Result<ModuleLoad, WasmError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = anyhow::Result<Vec<u8>>>,
    {
        let digest = normalize_digest(digest)?;
        let mut source = LoadSource::Memory;
        let (module, _) = self
            .inner
            .modules
            .get_or_load(&digest, || async {
                let (module, how) = self.load_uncached(&digest, fetch).await?;
                source = how;
                Ok::<_, WasmError>(module)
            })
            .await?;
        Ok(ModuleLoad { module, source })
    }

    /// Checks that `bytes` would load and link here (valid wasm, only imports we provide, a
    /// `_start` entry point or a `wasi:cli/run` export) without caching anything, and returns
    /// their digest. For upload-time validation.
    pub async fn validate(&self, bytes: Vec<u8>) -> Result<String, WasmError> {
        let digest = hex::encode(Sha256::digest(&bytes));
        let inner = self.inner.clone();
        let task_digest = digest.clone();
        tokio::task::spawn_blocking(move || {
            let compiled = compile(&inner, &task_digest, &bytes)?;
            prepare(&inner, &task_digest, &compiled).map(drop)
        })
        .await
        .map_err(|error| WasmError::Task { digest: digest.clone(), message: error.to_string() })??;
        Ok(digest)
    }

    async fn load_uncached<F, Fut>(
        &self,
        digest: &str,
        fetch: F,
    ) -> Result<(LoadedModule, LoadSource), WasmError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = anyhow::Result<Vec<u8>>>,
    {
        let task_error = |error: tokio::task::JoinError| WasmError::Task {
            digest: digest.to_owned(),
            message: error.to_string(),
        };
        if self.inner.disk.is_some() {
            let inner = self.inner.clone();
            let key = digest.to_owned();
            let cached = tokio::task::spawn_blocking(move || {
                let compiled = inner.disk.as_ref()?.load(&inner.engine, &key)?;
                Some(prepare(&inner, &key, &compiled))
            })
            .await
            .map_err(task_error)?;
            if let Some(prepared) = cached {
                tracing::debug!(digest, "module loaded from disk cache");
                return Ok((prepared?, LoadSource::Disk));
            }
        }

        let bytes = fetch()
            .await
            .map_err(|error| WasmError::Fetch { digest: digest.to_owned(), message: format!("{error:#}") })?;
        let actual = hex::encode(Sha256::digest(&bytes));
        if actual != digest {
            return Err(WasmError::DigestMismatch { expected: digest.to_owned(), actual });
        }

        let inner = self.inner.clone();
        let key = digest.to_owned();
        let loaded = tokio::task::spawn_blocking(move || {
            let compiled = compile(&inner, &key, &bytes)?;
            let loaded = prepare(&inner, &key, &compiled)?;
            // Only modules that link are worth caching; a failed write just means a recompile
            // after the next restart.
            if let Some(disk) = &inner.disk {
                let stored = compiled
                    .serialize()
                    .map_err(|e| format!("{e:#}"))
                    .and_then(|artifact| disk.store(&key, &artifact).map_err(|e| e.to_string()));
                if let Err(error) = stored {
                    tracing::warn!(digest = %key, %error, "cannot write module to disk cache");
                }
            }
            Ok::<_, WasmError>(loaded)
        })
        .await
        .map_err(task_error)??;
        tracing::debug!(digest, "module compiled");
        Ok((loaded, LoadSource::Compiled))
    }
}

/// Accepts exactly 64 hex digits (either case) and returns them lower-cased. Strict because
/// the digest becomes a file name in the disk cache.
fn normalize_digest(digest: &str) -> Result<String, WasmError> {
    if digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(digest.to_ascii_lowercase())
    } else {
        Err(WasmError::InvalidDigest { digest: digest.to_owned() })
    }
}

/// Compiles a component if the bytes are one (the layer field of the wasm header), a module
/// otherwise (binary or, for tests, WAT text).
fn compile(inner: &Inner, digest: &str, bytes: &[u8]) -> Result<Compiled, WasmError> {
    let compiled = if wasmparser::Parser::is_component(bytes) {
        Component::from_binary(&inner.engine, bytes).map(Compiled::Component)
    } else {
        Module::new(&inner.engine, bytes).map(Compiled::Module)
    };
    compiled.map_err(|error| WasmError::Compile { digest: digest.to_owned(), message: format!("{error:#}") })
}

/// Type-checks imports against our linker (so an unknown import fails now, not mid-run) and
/// checks the entry point.
fn prepare(inner: &Inner, digest: &str, compiled: &Compiled) -> Result<LoadedModule, WasmError> {
    let link_error =
        |error: wasmtime::Error| WasmError::Link { digest: digest.to_owned(), message: format!("{error:#}") };
    let prepared = match compiled {
        Compiled::Module(module) => {
            let pre = inner.linker.instantiate_pre(module).map_err(link_error)?;
            check_entry(digest, module)?;
            Prepared::Module(pre)
        }
        Compiled::Component(component) => {
            Prepared::Component(component::prepare(&inner.components, component).map_err(link_error)?)
        }
    };
    Ok(LoadedModule { digest: Arc::from(digest), prepared })
}

fn check_entry(digest: &str, module: &Module) -> Result<(), WasmError> {
    let entry_error = |message: String| WasmError::Entry { digest: digest.to_owned(), message };
    match module.get_export(ENTRY_EXPORT) {
        Some(ExternType::Func(func)) if func.params().len() == 0 && func.results().len() == 0 => Ok(()),
        Some(ExternType::Func(func)) => Err(entry_error(format!(
            "export `{ENTRY_EXPORT}` has type {func}, expected a function with no parameters and no results"
        ))),
        Some(_) => Err(entry_error(format!("export `{ENTRY_EXPORT}` is not a function"))),
        None => Err(entry_error(format!(
            "no `{ENTRY_EXPORT}` export: build the job as a WASI command (e.g. a Rust binary for wasm32-wasip1 or a wasm32-wasip2 component)"
        ))),
    }
}
