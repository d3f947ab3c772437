-- jobwheel addition: a per-job time zone (IANA name) for CRON schedules. A side table rather
-- than a column on xxl_job_info, so that upstream's table stays exactly upstream's (an xxl-job
-- database adopted by jobwheel is not altered). No row = the admin's zone. See docs/storage.md.

CREATE TABLE IF NOT EXISTS `jobwheel_job_zone` (
  `job_id` int(11) NOT NULL,
  `time_zone` varchar(64) NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
