//! The epoch ticker: a plain thread advancing the engine's epoch so running stores yield
//! at least once per tick, whatever instructions they execute.

use std::time::Duration;

use wasmtime::{Engine, EngineWeak};

use crate::error::WasmError;

/// Starts the ticker for `engine`. The thread holds only a weak reference and exits on the
/// first tick after the engine (and every module compiled with it) has been dropped.
pub(crate) fn spawn(engine: &Engine, tick: Duration) -> Result<(), WasmError> {
    let weak: EngineWeak = engine.weak();
    std::thread::Builder::new()
        .name("jobwheel-wasm-epoch".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => break,
                }
            }
        })
        .map_err(|error| WasmError::Engine {
            message: format!("cannot start the epoch ticker thread: {error}"),
        })?;
    Ok(())
}
