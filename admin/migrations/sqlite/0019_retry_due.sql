-- jobwheel addition: retry backoff strategies and a due-time queue for the fail monitor.
-- jobwheel_job_retry gains the strategy (FIXED or EXPONENTIAL), the ceiling of an exponential
-- backoff and a jitter percentage; existing rows stay FIXED, so they behave as before.
-- jobwheel_retry_due holds the failed runs waiting for their retry (their xxl_job_log row has
-- alarm_status = -2, which upstream's monitor never reads): the fail monitor reads only the rows
-- whose due time has come, through i_retry_due, so waiting failures never delay new ones.
-- See docs/storage.md.

ALTER TABLE jobwheel_job_retry ADD COLUMN strategy TEXT NOT NULL DEFAULT 'FIXED';
ALTER TABLE jobwheel_job_retry ADD COLUMN max_secs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobwheel_job_retry ADD COLUMN jitter_pct INTEGER NOT NULL DEFAULT 0;

CREATE TABLE jobwheel_retry_due (
  log_id INTEGER NOT NULL PRIMARY KEY,
  due_ms INTEGER NOT NULL
);

CREATE INDEX i_retry_due ON jobwheel_retry_due (due_ms);
