-- Issue 61: backfill. A backfill runs a job's or a workflow's schedule over a past range: each
-- scheduled time once (as the run's scheduled time and per-fire key), at most `parallelism` at
-- once. The row holds its request and where it has got to (cursor_ms: every scheduled time up to
-- it was handed out); each time handed out is a jobwheel_backfill_fire row with the log row or
-- instance that ran it. The sweep that hands times out holds the backfill's row lock, so two
-- admins hand each time out once.

CREATE TABLE IF NOT EXISTS `jobwheel_backfill` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `target_kind` varchar(16) NOT NULL,
  `target_id` bigint(20) NOT NULL,
  `job_group` int(11) NOT NULL,
  `from_ms` bigint(20) NOT NULL,
  `to_ms` bigint(20) NOT NULL,
  `parallelism` int(11) NOT NULL,
  `rerun_existing` smallint(6) NOT NULL,
  `status` int(11) NOT NULL,
  `cursor_ms` bigint(20) NOT NULL,
  `total` int(11) NOT NULL,
  `handed` int(11) NOT NULL DEFAULT 0,
  `skipped` int(11) NOT NULL DEFAULT 0,
  `message` text,
  `author` varchar(255) NOT NULL,
  `created_ms` bigint(20) NOT NULL,
  `end_ms` bigint(20) NOT NULL DEFAULT 0,
  PRIMARY KEY (`id`),
  KEY `i_backfill_status` (`status`, `id`),
  KEY `i_backfill_target` (`target_kind`, `target_id`, `id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE IF NOT EXISTS `jobwheel_backfill_fire` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `backfill_id` bigint(20) NOT NULL,
  `scheduled_ms` bigint(20) NOT NULL,
  `claimed_ms` bigint(20) NOT NULL,
  `log_id` bigint(20) DEFAULT NULL,
  `instance_id` bigint(20) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `i_backfill_fire` (`backfill_id`, `id`),
  KEY `i_backfill_fire_time` (`scheduled_ms`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
