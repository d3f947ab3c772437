-- Issue 62: the flight recorder (docs/replay.md). A recorded Wasm run's flight record — its
-- journal of host-call answers, the module it ran and what it produced — kept beside its log row
-- and deleted with it (manual clear, retention, the job's deletion).
--
-- body is the record's JSON, deflated, sealed with the admin's secret key (XChaCha20-Poly1305:
-- nonce ‖ ciphertext ‖ tag, the log id as associated data): journals hold response bodies,
-- headers and variables. The rest is what a reader may see without opening it: the module's
-- SHA-256 (32 bytes), whether the run can be replayed and why not, the record's size. A record
-- is kept per run, so the row is kept lean: no copy of the log row's job or time, no index
-- beyond its key (a job's records are found through xxl_job_log).
-- jobwheel_job_grant gains the per-job switch (record_runs: NULL or 1 on, 0 off) and the
-- record's size cap (journal_max_bytes; NULL: the default).

CREATE TABLE jobwheel_log_flight (
  log_id INTEGER NOT NULL PRIMARY KEY,
  module BLOB NOT NULL,
  replayable SMALLINT NOT NULL,
  reason TEXT DEFAULT NULL,
  record_bytes INTEGER NOT NULL,
  body BLOB NOT NULL
);

ALTER TABLE jobwheel_job_grant ADD COLUMN record_runs SMALLINT DEFAULT NULL;
ALTER TABLE jobwheel_job_grant ADD COLUMN journal_max_bytes BIGINT DEFAULT NULL;
