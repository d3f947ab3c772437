-- jobwheel addition: a job's priority, HIGH or LOW (no row: normal). Sent with each trigger; an
-- executor with --max-concurrent-runs starts waiting runs highest priority first. A side table,
-- so upstream's xxl_job_info stays as upstream made it; deleted with the job.

CREATE TABLE jobwheel_job_priority (
  job_id INTEGER NOT NULL PRIMARY KEY,
  priority VARCHAR(8) NOT NULL
);
