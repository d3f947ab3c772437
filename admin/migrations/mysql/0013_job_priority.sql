-- jobwheel addition: a job's priority, HIGH or LOW (no row: normal). Sent with each trigger; an
-- executor with --max-concurrent-runs starts waiting runs highest priority first. A side table,
-- so upstream's xxl_job_info stays as upstream made it; deleted with the job.

CREATE TABLE IF NOT EXISTS `jobwheel_job_priority` (
  `job_id` int(11) NOT NULL,
  `priority` varchar(8) NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
