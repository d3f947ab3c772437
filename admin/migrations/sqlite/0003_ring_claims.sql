-- jobwheel addition: the durable time ring. A pre-read inserts one row per trigger it takes from
-- xxl_job_info in the same transaction that advances trigger_next_time; the trigger consumes the
-- row (status 0 -> 1) in the transaction that inserts its xxl_job_log row. See docs/storage.md.
-- status: 0 pending, 1 fired (log_id set), 2 discarded.

CREATE TABLE jobwheel_ring_claim (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL,
  fire_time_ms INTEGER NOT NULL,
  claimed_at_ms INTEGER NOT NULL,
  status INTEGER NOT NULL DEFAULT 0,
  log_id INTEGER DEFAULT NULL
);
CREATE INDEX i_ring_claim_status_fire ON jobwheel_ring_claim (status, fire_time_ms);
CREATE INDEX i_ring_claim_job ON jobwheel_ring_claim (job_id);
