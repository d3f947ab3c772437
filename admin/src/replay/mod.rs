//! The flight recorder's admin side (docs/replay.md): the records executors send with recorded
//! Wasm runs' results are sealed and stored beside their log rows (`stored.rs`), and a replay's
//! result is compared with the original's (`compare.rs`); a key rotation re-seals them
//! (`reseal.rs`). Running a replay on an executor is
//! the engine's (`engine/replays.rs`).

mod compare;
mod reseal;
mod stored;

pub use compare::{Comparison, LineDifference, guest_lines};
pub use reseal::{Resealed, reseal_flights};
pub(crate) use stored::{flight_rows, open_record};
