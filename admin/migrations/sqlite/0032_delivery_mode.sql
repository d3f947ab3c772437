-- Issue 58: exactly-once delivery as a choice (docs/engine.md, "Delivery guarantee").
--
-- jobwheel_job_delivery: a job's delivery mode, EXACTLY_ONCE (no row: upstream's at most once).
-- A side table, so upstream's xxl_job_info stays as upstream made it; deleted with the job.
--
-- jobwheel_fire_send: one row per exactly-once /run, written (and committed) before the /run is
-- sent: the address it goes to and the trigger as sent (without its grant, which holds secret
-- values and is built again). The insert is the right to send: a second admin that finds the
-- row sends nothing. A row whose log still has no outcome after its admin should have stored
-- one is in doubt, and a live admin resends it to the same address (taking it by moving
-- sent_at_ms). Rows of logs with an outcome are deleted by the same sweep.

CREATE TABLE jobwheel_job_delivery (
  job_id INTEGER NOT NULL PRIMARY KEY,
  mode VARCHAR(16) NOT NULL
);

CREATE TABLE jobwheel_fire_send (
  log_id BIGINT NOT NULL PRIMARY KEY,
  job_id INTEGER NOT NULL,
  address VARCHAR(255) NOT NULL,
  sent_at_ms BIGINT NOT NULL,
  attempts INTEGER NOT NULL,
  param TEXT NOT NULL
);
CREATE INDEX i_fire_send_sent ON jobwheel_fire_send (sent_at_ms);
