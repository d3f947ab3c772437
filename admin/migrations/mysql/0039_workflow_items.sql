-- Issue 61: map nodes. A map node's run (WAITING while its items run) has one row per item of the
-- array it maps over, taken from the context when it starts: the item's JSON, its state (the run
-- states: 0 due, 1 fired, 2 succeeded, 3 failed, 6 stopped), its attempt (the node's retries are
-- per item), the log row of its current attempt and what it reported. Items are taken DUE ->
-- FIRED with their log rows under the instance's row lock, so each item attempt is fired once
-- across admins; i_item_run finds a run's fired and due items in order, i_item_log a result's item.

CREATE TABLE IF NOT EXISTS `jobwheel_workflow_item` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `run_id` bigint(20) NOT NULL,
  `idx` int(11) NOT NULL,
  `attempt` int(11) NOT NULL DEFAULT 1,
  `status` int(11) NOT NULL DEFAULT 0,
  `due_ms` bigint(20) NOT NULL DEFAULT 0,
  `fired_ms` bigint(20) NOT NULL DEFAULT 0,
  `end_ms` bigint(20) NOT NULL DEFAULT 0,
  `log_id` bigint(20) DEFAULT NULL,
  `item` mediumtext NOT NULL,
  `output` mediumtext,
  `message` text,
  PRIMARY KEY (`id`),
  KEY `i_item_run` (`run_id`, `status`, `idx`),
  KEY `i_item_log` (`log_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
