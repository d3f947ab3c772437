-- An adopted xxl-job 2.x database has narrower columns than 3.x (and jobwheel) writes:
-- `xxl_job_group.title varchar(12)`, `xxl_job_info.executor_param varchar(512)` and
-- `xxl_job_log.executor_param varchar(512)`. Under MariaDB's and MySQL's default strict mode a
-- longer value is refused, so a trigger with a long parameter could not store its log row.
-- Widen them as upstream's own 3.x upgrade did (`title varchar(64)`, `executor_param text`);
-- an upstream 2.x admin reads and writes wider columns unchanged. Each statement is built from
-- information_schema so that it does nothing where the column is already wide (every database
-- jobwheel or xxl-job 3.x created) or absent (3.5 renamed `title` to `name`). Rebuilding a
-- large xxl_job_log takes a while, once, under the migration lock (docs/storage.md).
SET @widen_title = (
  SELECT IF(COUNT(*) = 1, 'ALTER TABLE `xxl_job_group` MODIFY COLUMN `title` varchar(64) NOT NULL', 'DO 0')
  FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xxl_job_group' AND COLUMN_NAME = 'title'
    AND CHARACTER_MAXIMUM_LENGTH < 64
);
PREPARE widen_title FROM @widen_title;
EXECUTE widen_title;
DEALLOCATE PREPARE widen_title;

SET @widen_info_param = (
  SELECT IF(COUNT(*) = 1, 'ALTER TABLE `xxl_job_info` MODIFY COLUMN `executor_param` text DEFAULT NULL', 'DO 0')
  FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xxl_job_info' AND COLUMN_NAME = 'executor_param'
    AND DATA_TYPE = 'varchar'
);
PREPARE widen_info_param FROM @widen_info_param;
EXECUTE widen_info_param;
DEALLOCATE PREPARE widen_info_param;

SET @widen_log_param = (
  SELECT IF(COUNT(*) = 1, 'ALTER TABLE `xxl_job_log` MODIFY COLUMN `executor_param` text DEFAULT NULL', 'DO 0')
  FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xxl_job_log' AND COLUMN_NAME = 'executor_param'
    AND DATA_TYPE = 'varchar'
);
PREPARE widen_log_param FROM @widen_log_param;
EXECUTE widen_log_param;
DEALLOCATE PREPARE widen_log_param;
