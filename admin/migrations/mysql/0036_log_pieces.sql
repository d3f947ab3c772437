-- Issue 60: job log lines shipped by executors (`--job-logs both|admin`) and kept by the admins,
-- so every admin reads a run's log after its executor is gone (docs/storage.md, "Shipped job
-- logs").
--
-- One row per piece an executor sent: text appended to one run's log, keyed by the log and the
-- executor's stamp (a resent piece is stored once), ordered by stamp. job_id and log_time are
-- the log row's, copied so a job's logs are searched by an index range without a join; the
-- body is the text, deflated when that pays (codec 1) or as is (codec 0). Deleted with the log
-- row (manual clear, retention, the job's deletion).

CREATE TABLE IF NOT EXISTS `jobwheel_log_piece` (
  `log_id` bigint(20) NOT NULL,
  `stamp` bigint(20) NOT NULL,
  `job_id` int(11) NOT NULL,
  `log_time` bigint(20) NOT NULL,
  `line_count` int(11) NOT NULL,
  `text_bytes` int(11) NOT NULL,
  `codec` smallint(6) NOT NULL,
  `last` smallint(6) NOT NULL,
  `body` LONGBLOB NOT NULL,
  PRIMARY KEY (`log_id`, `stamp`),
  KEY `i_log_piece_job` (`job_id`, `log_time`, `log_id`, `stamp`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
