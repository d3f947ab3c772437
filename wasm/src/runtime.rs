//! The [`Runtime`]: one wasmtime engine, its WASI linkers (preview1 modules, 0.2 components),
//! and the module caches.

use std::sync::Arc;

use wasmtime::{Config, Engine, Linker};

use crate::component::{self, ComponentState};
use crate::config::{Allocation, Metering, RuntimeConfig};
use crate::disk_cache::DiskCache;
use crate::error::WasmError;
use crate::loader::LoadedModule;
use crate::memory_cache::MemoryCache;
use crate::pool::{self, Slots};
use crate::run::RunState;
use crate::ticker;

/// Sandboxed wasm job runtime. Cheap to clone; clones share the engine and caches. Create one
/// per process.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<RunState>,
    pub(crate) components: wasmtime::component::Linker<ComponentState>,
    pub(crate) config: RuntimeConfig,
    pub(crate) disk: Option<DiskCache>,
    pub(crate) modules: MemoryCache<LoadedModule>,
    pub(crate) slots: Slots,
}

impl Runtime {
    /// Builds the engine (fuel and/or epoch interruption, allocator per `config`), the WASI
    /// preview1 and 0.2 linkers, and opens the disk cache directory; starts the epoch ticker thread if enabled.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, WasmError> {
        if let Metering::Fuel { yield_interval: 0, .. } = config.metering {
            // wasmtime rejects a zero interval per store; fail once, here, instead.
            return Err(WasmError::Engine {
                message: "the fuel yield interval must be at least 1".to_owned(),
            });
        }
        let mut wasmtime_config = Config::new();
        wasmtime_config
            .consume_fuel(matches!(config.metering, Metering::Fuel { .. }))
            .epoch_interruption(config.epoch_tick.is_some())
            .max_wasm_stack(config.max_wasm_stack)
            // Every run can be replayed (journal.rs): the same inputs must give the same bits.
            // NaNs come out canonical whatever the CPU and relaxed SIMD takes its deterministic
            // form. Threads are not compiled in (wasmtime's `threads` feature is off), so no
            // guest can race itself; a test checks a shared memory is refused.
            .cranelift_nan_canonicalization(true)
            .relaxed_simd_deterministic(true)
            // The wasm stack lives on the async fiber stack, which must be larger (engine
            // creation fails otherwise); keep room for host frames on top.
            .async_stack_size(config.max_wasm_stack.max(1 << 20) + (1 << 20));
        let pooled = match config.allocation {
            Allocation::OnDemand => None,
            Allocation::Pooling { slots } => {
                wasmtime_config.allocation_strategy(pool::strategy(&config, slots.max(1)));
                Some(slots.max(1))
            }
        };
        let engine_error = |error: wasmtime::Error| WasmError::Engine { message: format!("{error:#}") };
        let engine = Engine::new(&wasmtime_config).map_err(engine_error)?;

        let mut linker: Linker<RunState> = Linker::new(&engine);
        wasmtime_wasi::p1::add_to_linker_async(&mut linker, |state: &mut RunState| &mut state.wasi)
            .map_err(engine_error)?;
        let components = component::linker(&engine).map_err(engine_error)?;

        let disk = match &config.cache_dir {
            Some(root) => Some(DiskCache::open(root, &engine)?),
            None => None,
        };
        if let Some(tick) = config.epoch_tick {
            ticker::spawn(&engine, tick)?;
        }
        let modules = MemoryCache::new(config.memory_cache_capacity);
        let slots = Slots::new(pooled);
        Ok(Runtime { inner: Arc::new(Inner { engine, linker, components, config, disk, modules, slots }) })
    }

    /// The configuration this runtime was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Number of modules held by the memory cache (including loads in flight).
    pub fn cached_modules(&self) -> usize {
        self.inner.modules.len()
    }
}
