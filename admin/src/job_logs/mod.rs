//! Job logs kept by the admins: what executors running with `--job-logs both|admin` ship
//! (`POST /api/logShip`, `http/executor_api/log_ship.rs`), stored as pieces in the database
//! every admin shares (`store/log_piece_store.rs`), read back as the rolling log and searched
//! across a job's runs (docs/executor.md, "Logs kept by the admin"; docs/storage.md).
//!
//! - `ingest.rs`: a shipped batch into pieces — the caller's groups only, a byte cap per run.
//! - `read.rs`: one page of a run's log from its pieces, with upstream's `/log` semantics.
//! - `search.rs`: text search over a job's runs' logs within a time range, newest first.
//!
//! Why the database and not a shared file store: every admin already shares it, retention and
//! the job's deletion already delete with the log row, and a replaced admin with an empty data
//! directory reads the same rows; measured in docs/benchmarks.md ("Shipped job logs").

mod ingest;
mod read;
mod search;

pub use ingest::{Ingested, MAX_STORED_LOG_BYTES, ingest};
pub use read::{UNCLOSED_END_MS, page};
pub use search::{LogMatch, LogSearch, MAX_MATCHES, SearchCursor, SearchPage, search};
