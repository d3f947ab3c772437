-- jobwheel addition: a counter every job edit of a jobwheel admin moves (save, start, stop,
-- delete, priority, time zone). The pre-read reads it before the due jobs, and a trigger fires
-- with the job row its pre-read read as long as the counter has not moved since; when it has,
-- the trigger reads the job again (engine/trigger.rs, ARCHITECTURE.md "Fewer durable writes
-- per trigger"). One row; edits serialize on it, and they are rare.

CREATE TABLE IF NOT EXISTS `jobwheel_job_epoch` (
  `id` int(11) NOT NULL,
  `epoch` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT IGNORE INTO `jobwheel_job_epoch` (`id`, `epoch`) VALUES (1, 0);
