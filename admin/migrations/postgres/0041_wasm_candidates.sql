-- Issue 62: a module version may be uploaded as a candidate (docs/replay.md, "What-if"): stored
-- and fetchable by the job's executors for replays, but not the job's current module — a
-- trigger runs the newest version that is not a candidate. Activating a candidate is a rollback
-- to it (a new, non-candidate version with its module).

ALTER TABLE jobwheel_wasm_version ADD COLUMN candidate SMALLINT NOT NULL DEFAULT 0;
