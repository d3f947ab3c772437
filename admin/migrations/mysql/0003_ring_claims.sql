-- jobwheel addition: the durable time ring. A pre-read inserts one row per trigger it takes from
-- xxl_job_info in the same transaction that advances trigger_next_time; the trigger consumes the
-- row (status 0 -> 1) in the transaction that inserts its xxl_job_log row. See docs/storage.md.
-- status: 0 pending, 1 fired (log_id set), 2 discarded.

CREATE TABLE IF NOT EXISTS `jobwheel_ring_claim` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `job_id` int(11) NOT NULL,
  `fire_time_ms` bigint(20) NOT NULL,
  `claimed_at_ms` bigint(20) NOT NULL,
  `status` tinyint(4) NOT NULL DEFAULT '0',
  `log_id` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `i_ring_claim_status_fire` (`status`, `fire_time_ms`),
  KEY `i_ring_claim_job` (`job_id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
