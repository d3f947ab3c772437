-- xxl-job 2.x created `xxl_job_user.password` as varchar(50), room for its MD5 hex only; the
-- argon2 hash jobwheel stores after a user's first login (about 97 characters) needs 3.x's
-- varchar(100). Widening is invisible to an upstream admin sharing the database. On a database
-- created by jobwheel or xxl-job 3.x this changes nothing.
ALTER TABLE `xxl_job_user` MODIFY COLUMN `password` varchar(100) NOT NULL;

-- xxl-job 2.x's user table has no `token` column (3.x added it, and jobwheel's first migration,
-- which creates only missing tables, expects it): add it where it is missing. An upstream 2.x
-- admin selects its columns by name and never sees it. MySQL 8 has no ADD COLUMN IF NOT EXISTS,
-- hence the statement built from information_schema.
SET @add_token = (
  SELECT IF(COUNT(*) = 0, 'ALTER TABLE `xxl_job_user` ADD COLUMN `token` varchar(100) DEFAULT NULL', 'DO 0')
  FROM information_schema.COLUMNS
  WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'xxl_job_user' AND COLUMN_NAME = 'token'
);
PREPARE add_token FROM @add_token;
EXECUTE add_token;
DEALLOCATE PREPARE add_token;
