-- jobwheel addition: calendars and exclusion windows. A calendar is a named set of dates
-- (weekdays, yearly dates, single dates and ranges; `days` is their JSON); a job refers to
-- calendars as "only on" or "never on" and may carry daily exclusion windows. Side tables, so
-- upstream's xxl_job_info stays as upstream made it; a job's rows are deleted with the job, and
-- a calendar cannot be deleted while a job refers to it. See docs/scheduling.md and
-- docs/storage.md.

CREATE TABLE IF NOT EXISTS `jobwheel_calendar` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `name` varchar(64) NOT NULL,
  `description` varchar(255) NOT NULL DEFAULT '',
  `days` mediumtext NOT NULL,
  `update_ms` bigint(20) NOT NULL,
  PRIMARY KEY (`id`),
  UNIQUE KEY `i_calendar_name` (`name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_job_calendar` (
  `job_id` int(11) NOT NULL,
  `calendar_id` bigint(20) NOT NULL,
  `mode` varchar(8) NOT NULL,
  PRIMARY KEY (`job_id`, `calendar_id`),
  KEY `i_job_calendar_calendar` (`calendar_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS `jobwheel_job_window` (
  `job_id` int(11) NOT NULL,
  `windows` varchar(255) NOT NULL,
  PRIMARY KEY (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
