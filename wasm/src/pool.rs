//! The pooling allocator: sizing wasmtime's pools from the runtime's limits, and the slot gate
//! that keeps concurrent runs within them.
//!
//! wasmtime refuses an instantiation when a pool is exhausted ("maximum concurrent instance
//! limit reached"); a job must not fail because others happen to be running, so every run
//! holds one [`Slots`] permit from before its store exists until after the store is dropped,
//! and the pools are sized so that `slots` runs of the largest kind always fit.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use wasmtime::{InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::component::{COMPONENT_INSTANCES, COMPONENT_TABLES};
use crate::config::RuntimeConfig;

/// Tables one preview1 module may define (the module limiter's count).
pub(crate) const MODULE_TABLES: usize = 8;

/// wasmtime's pooling strategy for `slots` concurrent runs under `config`'s limits: one linear
/// memory per run (the limiter's count), up to [`COMPONENT_INSTANCES`] core instances and
/// [`COMPONENT_TABLES`] tables per run, one fiber stack per run.
pub(crate) fn strategy(config: &RuntimeConfig, slots: u32) -> InstanceAllocationStrategy {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let per_run = |n: usize| slots.saturating_mul(count(n));
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(slots)
        .total_core_instances(per_run(COMPONENT_INSTANCES))
        .max_core_instances_per_component(count(COMPONENT_INSTANCES))
        .total_memories(slots)
        .max_memories_per_module(1)
        .max_memories_per_component(1)
        .total_tables(per_run(COMPONENT_TABLES))
        .max_tables_per_module(count(MODULE_TABLES))
        .max_tables_per_component(count(COMPONENT_TABLES))
        // A slot must hold the largest table and memory a run is allowed; the limiter refuses
        // growth past the job's own (possibly lower) limit before the pool would.
        .table_elements(config.max_table_elements)
        .max_memory_size(config.max_memory_bytes)
        .total_stacks(slots);
    InstanceAllocationStrategy::Pooling(pool)
}

/// The gate in front of the pools: `None` with the on-demand allocator.
pub(crate) struct Slots {
    gate: Option<Arc<Semaphore>>,
    total: u32,
}

/// Why a run stopped waiting for a slot.
pub(crate) enum NoSlot {
    Cancelled,
    TimedOut,
}

impl Slots {
    pub(crate) fn new(slots: Option<u32>) -> Slots {
        let total = slots.unwrap_or(0).max(1);
        Slots { gate: slots.map(|_| Arc::new(Semaphore::new(total as usize))), total }
    }

    /// Waits for a free slot until `deadline` or cancellation. `Ok(None)` when not pooling.
    /// `waiting` is called once, with the number of slots, if the run has to wait, so the job
    /// log can say why it starts late.
    pub(crate) async fn acquire(
        &self,
        deadline: Option<Instant>,
        cancel: &CancellationToken,
        waiting: impl FnOnce(u32),
    ) -> Result<Option<OwnedSemaphorePermit>, NoSlot> {
        let Some(semaphore) = &self.gate else { return Ok(None) };
        if let Ok(permit) = Arc::clone(semaphore).try_acquire_owned() {
            return Ok(Some(permit));
        }
        waiting(self.total);
        let expired = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(NoSlot::Cancelled),
            () = expired => Err(NoSlot::TimedOut),
            // The semaphore is never closed, so acquiring only ends with a permit.
            permit = Arc::clone(semaphore).acquire_owned() => permit.map(Some).map_err(|_| NoSlot::Cancelled),
        }
    }
}
