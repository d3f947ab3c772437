-- jobwheel addition: a counter every deletion of trigger logs by a jobwheel admin moves (a log
-- clear, the daily retention, a job deleted with its logs). The report monitor keeps each
-- five-minute slice of the last three days' counts between its minute passes and recounts only
-- the slices that can have changed (engine/report.rs); a deletion can change any slice, so when
-- the counter moved every admin recounts them all. One row; deletions are rare.

CREATE TABLE IF NOT EXISTS `jobwheel_log_epoch` (
  `id` int(11) NOT NULL,
  `epoch` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT IGNORE INTO `jobwheel_log_epoch` (`id`, `epoch`) VALUES (1, 0);
