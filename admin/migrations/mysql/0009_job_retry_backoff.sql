-- jobwheel addition: a per-job retry backoff, in seconds: how long the fail monitor leaves a
-- failed run of this job before retrying it and raising its alarm. Overrides the admin's
-- --retry-backoff. A side table, like jobwheel_job_zone, so upstream's xxl_job_info stays as
-- upstream made it. No row = the admin's default. See docs/storage.md.

CREATE TABLE IF NOT EXISTS `jobwheel_job_retry` (
  `job_id` int(11) NOT NULL,
  `backoff_secs` int(11) NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
