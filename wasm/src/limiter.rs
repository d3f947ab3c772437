//! Per-run resource limiter: enforces the memory/table caps and records peak memory, which
//! wasmtime's stock `StoreLimits` does not expose.

use wasmtime::ResourceLimiter;

/// Limits for one store. One memory, so "peak memory" stays meaningful; one instance for a
/// module (a single WASI command), more for a component (its core instances and adapters).
pub(crate) struct RunLimiter {
    max_memory_bytes: usize,
    max_table_elements: usize,
    instances: usize,
    tables: usize,
    peak_memory_bytes: usize,
    /// Size of the first memory growth we refused, so an out-of-memory trap can be explained.
    denied_memory_bytes: Option<usize>,
    /// Size of the first table growth we refused (`table.grow` returned -1 to the guest).
    denied_table_elements: Option<usize>,
}

impl RunLimiter {
    pub(crate) fn new(
        max_memory_bytes: usize,
        max_table_elements: usize,
        instances: usize,
        tables: usize,
    ) -> RunLimiter {
        RunLimiter {
            max_memory_bytes,
            max_table_elements,
            instances,
            tables,
            peak_memory_bytes: 0,
            denied_memory_bytes: None,
            denied_table_elements: None,
        }
    }

    pub(crate) fn peak_memory_bytes(&self) -> usize {
        self.peak_memory_bytes
    }

    pub(crate) fn denied_memory_bytes(&self) -> Option<usize> {
        self.denied_memory_bytes
    }

    pub(crate) fn max_memory_bytes(&self) -> usize {
        self.max_memory_bytes
    }

    pub(crate) fn denied_table_elements(&self) -> Option<usize> {
        self.denied_table_elements
    }

    pub(crate) fn max_table_elements(&self) -> usize {
        self.max_table_elements
    }
}

impl ResourceLimiter for RunLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory_bytes {
            // Refuse rather than trap: `memory.grow` returns -1 and the guest decides (Rust
            // guests abort with "memory allocation failed", C guests may recover).
            self.denied_memory_bytes.get_or_insert(desired);
            return Ok(false);
        }
        // Growth past the module's own declared maximum fails anyway; don't count it.
        if maximum.is_none_or(|max| desired <= max) {
            self.peak_memory_bytes = self.peak_memory_bytes.max(desired);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_table_elements {
            self.denied_table_elements.get_or_insert(desired);
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.tables
    }

    fn memories(&self) -> usize {
        1
    }
}
