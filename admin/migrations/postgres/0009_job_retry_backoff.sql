-- jobwheel addition: a per-job retry backoff, in seconds: how long the fail monitor leaves a
-- failed run of this job before retrying it and raising its alarm. Overrides the admin's
-- --retry-backoff. A side table, like jobwheel_job_zone, so upstream's xxl_job_info stays as
-- upstream made it. No row = the admin's default. See docs/storage.md.

CREATE TABLE jobwheel_job_retry (
  job_id integer NOT NULL PRIMARY KEY,
  backoff_secs integer NOT NULL
);
