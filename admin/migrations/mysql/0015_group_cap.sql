-- jobwheel addition: a cap on the runs of an executor group in flight across its executors,
-- set by administrators on the group (no row: no cap). The trigger path counts the group's
-- running logs (handle_code 0, trigger_code 0 or 200) before it starts one more; the index keeps
-- that count a range scan over the group's running rows, however large xxl_job_log grows.
-- Deleted with its group. See docs/scheduling.md.

CREATE TABLE IF NOT EXISTS `jobwheel_group_cap` (
  `group_id` int(11) NOT NULL,
  `max_running` int(11) NOT NULL,
  PRIMARY KEY (`group_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE INDEX `i_log_group_running` ON `xxl_job_log` (`job_group`, `handle_code`, `trigger_code`);
